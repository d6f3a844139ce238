package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/queue"
)

// executions counts, per item, how often the test execution workflow's
// effect ran, and when it last ran after holding for which slot.
type executions struct {
	mu        sync.Mutex
	n         map[string]int
	at        map[string]time.Time
	notBefore map[string]time.Time
}

func (e *executions) Execute(ctx context.Context, itemID string, notBefore time.Time) error {
	if err := dispatch.Hold(ctx, notBefore); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n[itemID]++
	e.at[itemID], e.notBefore[itemID] = time.Now(), notBefore
	return nil
}

// testExecWorkflow is a generic execution workflow: it knows only its item
// and context. A context with "fail": true fails it.
func testExecWorkflow(ctx workflow.Context, itemID, contextJSON string) error {
	var c struct{ Fail, Park bool }
	if err := json.Unmarshal([]byte(contextJSON), &c); err != nil {
		return err
	}
	if c.Fail {
		return temporal.NewNonRetryableApplicationError("told to fail", "TEST", nil)
	}
	if c.Park {
		return dispatch.Deferred(time.Time{}, "told to park")
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var e *executions
	return workflow.ExecuteActivity(ctx, e.Execute, itemID, dispatch.NotBefore(ctx)).Get(ctx, nil)
}

type pipeline struct {
	q     *queue.Queue
	pool  *pgxpool.Pool
	c     client.Client
	execs *executions
	sched *dispatch.Schedules
}

func startPipeline(t *testing.T) *pipeline {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	cfg := queue.DefaultSettings("TEST", "TestExecWorkflow", "test-exec")
	cfg.BatchSize, cfg.DispatchInterval, cfg.JitterWindow, cfg.PreStartBuffer, cfg.MaxDispatchRetries = 100, time.Second, 0, 0, 2
	if _, err := queue.New(pool).RegisterItemType(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, c := temporaltest.Start(t)

	p := &pipeline{q: queue.New(pool), pool: pool, c: c, execs: &executions{n: map[string]int{}, at: map[string]time.Time{}, notBefore: map[string]time.Time{}}, sched: dispatch.NewSchedules(c)}
	dw := worker.New(c, dispatch.TaskQueue, worker.Options{})
	acts, err := dispatch.NewActivities(dispatch.Config{Queue: p.q, Engine: dispatch.TemporalEngine{Client: c, Namespace: "default"}, Schedules: p.sched})
	if err != nil {
		t.Fatal(err)
	}
	dispatch.Register(dw, acts)
	ew := worker.New(c, "test-exec", worker.Options{})
	ew.RegisterWorkflowWithOptions(testExecWorkflow, workflow.RegisterOptions{Name: "TestExecWorkflow"})
	ew.RegisterActivity(p.execs)
	for _, w := range []worker.Worker{dw, ew} {
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	return p
}

func (p *pipeline) enqueue(t *testing.T, prefix string, n int, ctxJSON string) {
	t.Helper()
	p.enqueueType(t, "TEST", prefix, n, ctxJSON)
}

func (p *pipeline) enqueueType(t *testing.T, itemType, prefix string, n int, ctxJSON string) {
	t.Helper()
	due := time.Now().Add(-time.Second)
	for i := range n {
		if _, err := p.q.SaveContextAndEnqueue(context.Background(), queue.EnqueueParams{
			ItemType: itemType, ItemID: fmt.Sprintf("%s-%04d", prefix, i), ScheduledExecTime: due, Context: json.RawMessage(ctxJSON),
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func (p *pipeline) waitFor(t *testing.T, what string, timeout time.Duration, cond func(queue.Depth) bool) queue.Depth {
	t.Helper()
	return p.waitForType(t, "TEST", what, timeout, cond)
}

func (p *pipeline) waitForType(t *testing.T, itemType, what string, timeout time.Duration, cond func(queue.Depth) bool) queue.Depth {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		d, err := p.q.Depth(context.Background(), itemType)
		if err != nil {
			t.Fatal(err)
		}
		if cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %v; depth %v", what, timeout, d.ByStatus)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPipelineOnTemporal runs the dispatcher on Temporal's own server,
// fired by its Schedule: every due item is executed exactly once and ends
// COMPLETED; a failing execution is retried then dead-lettered; the kill
// switch holds items READY until released.
func TestPipelineOnTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	p := startPipeline(t)
	const n = 300
	p.enqueue(t, "ok", n, `{"amount":"1.00"}`)
	p.enqueue(t, "bad", 1, `{"fail":true}`)
	if err := p.sched.Ensure(ctx, "TEST", time.Second); err != nil {
		t.Fatal(err)
	}
	// Idempotent.
	if err := (dispatch.NewSchedules(p.c)).Ensure(ctx, "TEST", time.Second); err != nil {
		t.Fatal(err)
	}

	p.waitFor(t, "all completed, the failing one dead-lettered", 2*time.Minute, func(d queue.Depth) bool {
		return d.ByStatus[queue.StatusCompleted] == n && d.ByStatus[queue.StatusDeadLetter] == 1
	})
	p.execs.mu.Lock()
	for i := range n {
		id := fmt.Sprintf("ok-%04d", i)
		if got := p.execs.n[id]; got != 1 {
			t.Errorf("%s executed %d times", id, got)
		}
	}
	p.execs.mu.Unlock()
	bad, err := p.q.Get(ctx, "TEST", "bad-0000")
	if err != nil || bad.RetryCount != 2 || bad.LastError == "" {
		t.Fatalf("failing item: %+v %v", bad, err)
	}

	// Kill switch: new items stay READY while disabled, and drain once enabled.
	if _, err := pgtestExec(p, `UPDATE exec_rate_config SET enabled = false WHERE item_type = 'TEST'`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // let a cycle that already read the config finish
	p.enqueue(t, "held", 20, `{}`)
	time.Sleep(3 * time.Second)
	if d := p.waitFor(t, "held", time.Second, func(queue.Depth) bool { return true }); d.ByStatus[queue.StatusReady] != 20 {
		t.Fatalf("kill switch leaked: %v", d.ByStatus)
	}
	if _, err := pgtestExec(p, `UPDATE exec_rate_config SET enabled = true WHERE item_type = 'TEST'`); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, "held items drained", time.Minute, func(d queue.Depth) bool {
		return d.ByStatus[queue.StatusCompleted] == n+20
	})
}

// TestScheduleStartsDispatchCycle: a schedule an earlier build made,
// which starts DispatcherWorkflow, is moved to DispatchCycle by Ensure,
// and the cycles it starts then drain the queue, each a single local
// activity's marker with no activity task.
func TestScheduleStartsDispatchCycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	p := startPipeline(t)
	h, err := p.c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:   dispatch.ScheduleID("TEST"),
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Second}}},
		Action: &client.ScheduleWorkflowAction{ID: "dispatcher-TEST", Workflow: dispatch.WorkflowName,
			Args: []any{"TEST"}, TaskQueue: dispatch.TaskQueue},
		Paused: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.sched.Ensure(ctx, "TEST", time.Second); err != nil {
		t.Fatal(err)
	}
	desc, err := h.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction); !ok || w.Workflow != dispatch.CycleWorkflowName {
		t.Fatalf("the schedule's action after Ensure: %+v, want %s", desc.Schedule.Action, dispatch.CycleWorkflowName)
	}
	if err := h.Unpause(ctx, client.ScheduleUnpauseOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	p.enqueue(t, "ok", n, `{"amount":"1.00"}`)
	p.waitFor(t, "all completed", time.Minute, func(d queue.Depth) bool { return d.ByStatus[queue.StatusCompleted] == n })
	desc, err = h.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(desc.Info.RecentActions) == 0 {
		t.Fatal("the schedule recorded no action")
	}
	run := desc.Info.RecentActions[len(desc.Info.RecentActions)-1].StartWorkflowResult
	it := p.c.GetWorkflowHistory(ctx, run.WorkflowID, run.FirstExecutionRunID, false, 0)
	var markers int
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch e.GetEventType().String() {
		case "ActivityTaskScheduled", "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED":
			t.Errorf("a cycle scheduled an activity task: %v", e)
		case "MarkerRecorded", "EVENT_TYPE_MARKER_RECORDED":
			markers++
		}
	}
	if markers != 1 {
		t.Errorf("a cycle recorded %d markers, want its one local activity's", markers)
	}
}

func pgtestExec(p *pipeline, sql string) (int64, error) {
	tag, err := p.pool.Exec(context.Background(), sql)
	return tag.RowsAffected(), err
}

// TestTemporalEngine checks the engine adapter against the real server:
// duplicate starts are refused, a completed item can never start again, a
// failed one can, and Closed reports each id's latest run.
func TestTemporalEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	p := startPipeline(t)
	eng := dispatch.TemporalEngine{Client: p.c, Namespace: "default"}
	start := func(id, ctxJSON string) error {
		return eng.Start(ctx, dispatch.StartRequest{WorkflowID: id, WorkflowType: "TestExecWorkflow", TaskQueue: "test-exec", ItemID: id, Context: ctxJSON})
	}
	wait := func(id string) { _ = p.c.GetWorkflow(ctx, id, "").Get(ctx, nil) }

	if ok, err := eng.Exists(ctx, "exec-test-a"); err != nil || ok {
		t.Fatalf("exists before start: %v %v", ok, err)
	}
	if err := start("exec-test-a", `{}`); err != nil {
		t.Fatal(err)
	}
	wait("exec-test-a")
	if err := start("exec-test-a", `{}`); !errors.Is(err, dispatch.ErrAlreadyStarted) {
		t.Fatalf("second start of a completed workflow: %v", err)
	}
	if err := start("exec-test-b", `{"fail":true}`); err != nil {
		t.Fatal(err)
	}
	wait("exec-test-b")
	if err := start("exec-test-b", `{}`); err != nil {
		t.Fatalf("retry after failure refused: %v", err)
	}
	wait("exec-test-b")
	if ok, err := eng.Exists(ctx, "exec-test-a"); err != nil || !ok {
		t.Fatalf("exists after start: %v %v", ok, err)
	}
	var closed map[string]dispatch.Closure
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var err error
		closed, err = eng.Closed(ctx, []string{"exec-test-a", "exec-test-b", "exec-test-none"})
		if err != nil {
			t.Fatal(err)
		}
		if len(closed) == 2 && closed["exec-test-b"].Completed {
			break
		}
		time.Sleep(200 * time.Millisecond) // visibility is eventually consistent
	}
	if !closed["exec-test-a"].Completed || !closed["exec-test-b"].Completed {
		t.Fatalf("closed = %+v: want both completed (b's latest run)", closed)
	}
	if _, ok := closed["exec-test-none"]; ok {
		t.Fatal("an unknown id reported closed")
	}
}

// TestPacedLeadOnTemporal: paced items are started the paced lead ahead
// of their slot, learn the slot from the start (the memo), and execute
// not before it.
func TestPacedLeadOnTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	p := startPipeline(t)
	cfg, err := p.q.UpdateConfig(ctx, "TEST", map[string]string{"pre_start_buffer_secs": "10", "paced_lead_ms": "3000"})
	if err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(4 * time.Second).Truncate(time.Millisecond)
	ids := []string{"paced-a", "paced-b", "paced-c"}
	for _, id := range ids {
		if _, err := p.q.SaveContextAndEnqueue(ctx, queue.EnqueueParams{
			ItemType: "TEST", ItemID: id, ScheduledExecTime: slot, Context: json.RawMessage(`{}`), Paced: true,
		}); err != nil {
			t.Fatal(err)
		}
	}
	act, err := dispatch.NewActivities(dispatch.Config{Queue: p.q, Engine: dispatch.TemporalEngine{Client: p.c, Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := act.ClaimAndDispatch(ctx, cfg); err != nil || d.Started != len(ids) {
		t.Fatalf("dispatch: %+v, %v; want %d started", d, err, len(ids))
	}
	for _, id := range ids {
		wf := dispatch.ExecWorkflowID("TEST", id)
		if err := p.c.GetWorkflow(ctx, wf, "").Get(ctx, nil); err != nil {
			t.Fatalf("%s: %v", wf, err)
		}
		desc, err := p.c.DescribeWorkflowExecution(ctx, wf, "")
		if err != nil {
			t.Fatal(err)
		}
		// Temporal's execution time is the start plus its StartDelay: the
		// lead ahead of the slot, not the slot.
		if et := desc.GetWorkflowExecutionInfo().GetExecutionTime().AsTime(); !et.Before(slot.Add(-2 * time.Second)) {
			t.Errorf("%s: the engine ran it from %s; want about 3 s before the slot %s", id, et, slot)
		}
		// Its task timeout covers the hold (about 3 s) plus the default 10 s,
		// so the SDK never heartbeats the holding task.
		if tt := desc.GetExecutionConfig().GetDefaultWorkflowTaskTimeout().AsDuration(); tt < 12*time.Second || tt > 13*time.Second+time.Second/2 {
			t.Errorf("%s: workflow task timeout %s, want the hold plus 10 s", id, tt)
		}
		p.execs.mu.Lock()
		at, nb, n := p.execs.at[id], p.execs.notBefore[id], p.execs.n[id]
		p.execs.mu.Unlock()
		if n != 1 || !nb.Equal(slot) || at.Before(slot) {
			t.Errorf("%s: executed %d times, at %s, told to hold until %s; want once, not before the slot %s", id, n, at, nb, slot)
		}
	}
}

// TestDispatcherKilledMidBatchIsHealed leaves a batch as a dispatcher
// killed mid-cycle would: some items claimed and never started (killed
// between the claim and the starts), some started on Temporal but never
// marked DISPATCHED (killed before the marks). The scheduled dispatcher's
// stale recovery asks Temporal about each: the first go back to READY with
// a retry counted and are dispatched again, the second are marked
// DISPATCHED; all end COMPLETED, each executed exactly once.
func TestDispatcherKilledMidBatchIsHealed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	p := startPipeline(t)
	if _, err := pgtestExec(p, `UPDATE exec_rate_config SET stale_claim_threshold_secs = 2 WHERE item_type = 'TEST'`); err != nil {
		t.Fatal(err)
	}
	const n = 40
	p.enqueue(t, "lost", n, `{}`)
	lost, err := p.q.ClaimBatch(ctx, queue.ClaimParams{ItemType: "TEST", BatchSize: n, MaxRetries: 2})
	if err != nil || len(lost.Items) != n {
		t.Fatalf("claim lost: %d %v", len(lost.Items), err)
	}
	p.enqueue(t, "half", n, `{}`)
	half, err := p.q.ClaimBatch(ctx, queue.ClaimParams{ItemType: "TEST", BatchSize: n, MaxRetries: 2})
	if err != nil || len(half.Items) != n {
		t.Fatalf("claim half: %d %v", len(half.Items), err)
	}
	eng := dispatch.TemporalEngine{Client: p.c, Namespace: "default"}
	for _, it := range half.Items {
		if err := eng.Start(ctx, dispatch.StartRequest{
			WorkflowID: dispatch.ExecWorkflowID("TEST", it.ID), WorkflowType: "TestExecWorkflow", TaskQueue: "test-exec",
			ItemID: it.ID, Context: string(it.Context),
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The dispatcher "restarts": its schedule fires cycles from now on.
	if err := p.sched.Ensure(ctx, "TEST", time.Second); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, "all healed and completed", 2*time.Minute, func(d queue.Depth) bool {
		return d.ByStatus[queue.StatusCompleted] == 2*n
	})
	p.execs.mu.Lock()
	defer p.execs.mu.Unlock()
	for _, prefix := range []string{"lost", "half"} {
		for i := range n {
			id := fmt.Sprintf("%s-%04d", prefix, i)
			if got := p.execs.n[id]; got != 1 {
				t.Errorf("%s executed %d times, want 1", id, got)
			}
			it, err := p.q.Get(ctx, "TEST", id)
			if err != nil {
				t.Fatal(err)
			}
			// Only the never-started items count a retry.
			if want := map[string]int{"lost": 1, "half": 0}[prefix]; it.RetryCount != want {
				t.Errorf("%s: retry count %d, want %d", id, it.RetryCount, want)
			}
		}
	}
}

// invoiceExecWorkflow is a second domain's execution: invoices, with their
// own workflow on their own task queue.
func invoiceExecWorkflow(ctx workflow.Context, itemID, contextJSON string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var e *executions
	return workflow.ExecuteActivity(ctx, e.Execute, "INVOICE/"+itemID, dispatch.NotBefore(ctx)).Get(ctx, nil)
}

// TestSecondItemType: a second item type is a registration, its own
// execution workflow and a worker for it — no change to the framework.
// INVOICE items run through enqueue, claim and dispatch beside TEST's on
// the same dispatcher, each item once and by its own type's workflow.
func TestSecondItemType(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	p := startPipeline(t)
	inv := queue.DefaultSettings("INVOICE", "InvoiceExecWorkflow", "invoice-exec")
	inv.DispatchInterval, inv.JitterWindow, inv.PreStartBuffer, inv.BatchSize = time.Second, 0, 0, 7
	if _, err := p.q.RegisterItemType(ctx, inv); err != nil {
		t.Fatal(err)
	}
	w := worker.New(p.c, "invoice-exec", worker.Options{})
	w.RegisterWorkflowWithOptions(invoiceExecWorkflow, workflow.RegisterOptions{Name: "InvoiceExecWorkflow"})
	w.RegisterActivity(p.execs)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	const n = 30
	p.enqueueType(t, "TEST", "same-id", n, `{}`)
	p.enqueueType(t, "INVOICE", "same-id", n, `{"invoiceNo":"INV-1"}`) // item ids are per type
	for _, it := range []string{"TEST", "INVOICE"} {
		if err := p.sched.Ensure(ctx, it, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range []string{"TEST", "INVOICE"} {
		p.waitForType(t, it, it+" drained", 2*time.Minute, func(d queue.Depth) bool { return d.ByStatus[queue.StatusCompleted] == n })
	}
	p.execs.mu.Lock()
	defer p.execs.mu.Unlock()
	for i := range n {
		id := fmt.Sprintf("same-id-%04d", i)
		if p.execs.n[id] != 1 || p.execs.n["INVOICE/"+id] != 1 {
			t.Fatalf("%s executed %d times as TEST and %d as INVOICE, want once each", id, p.execs.n[id], p.execs.n["INVOICE/"+id])
		}
	}
	desc, err := p.c.DescribeWorkflowExecution(ctx, dispatch.ExecWorkflowID("INVOICE", "same-id-0000"), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetType().GetName(); got != "InvoiceExecWorkflow" {
		t.Fatalf("an INVOICE item ran %s", got)
	}
}
