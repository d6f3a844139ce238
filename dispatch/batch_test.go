package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/queue"
)

// inbox is a batch executor with an idempotent effect, as a real one has
// (the process inbox): an item's effect is committed once, whatever runs
// it again; calls counts every run.
type inbox struct {
	mu        sync.Mutex
	effects   map[string]int
	calls     map[string]int
	at        map[string]time.Time
	slot      map[string]time.Time
	ref       map[string]string
	onExecute func(id string) // nil: nothing
	// group runs the batch executions' groups through executeGroup (a
	// GroupExecutor); groupCalls counts its calls.
	group      bool
	groupCalls int
}

// executeGroup is a GroupExecutor: execute for each item of the group,
// side by side.
func (b *inbox) executeGroup(ctx context.Context, items []dispatch.BatchItem, run dispatch.Run) []dispatch.Outcome {
	b.mu.Lock()
	b.groupCalls++
	b.mu.Unlock()
	out := make([]dispatch.Outcome, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].Done, out[i].Err = b.execute(ctx, it, run)
		}()
	}
	wg.Wait()
	return out
}

func newInbox() *inbox {
	return &inbox{effects: map[string]int{}, calls: map[string]int{}, at: map[string]time.Time{}, slot: map[string]time.Time{}, ref: map[string]string{}}
}

// execute holds the item to its time, then: a context {"wait":true} has to
// wait (not done), {"fail":true} fails on its first run; anything else
// commits its effect once.
func (b *inbox) execute(ctx context.Context, it dispatch.BatchItem, run dispatch.Run) (bool, error) {
	if err := dispatch.Hold(ctx, it.At); err != nil {
		return false, err
	}
	var c struct{ Wait, Fail, Park, Defer bool }
	if err := json.Unmarshal([]byte(it.Context), &c); err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[it.ID]++
	if b.onExecute != nil {
		b.onExecute(it.ID)
	}
	switch {
	case c.Wait:
		return false, nil
	case c.Fail && b.calls[it.ID] == 1:
		return false, errors.New("told to fail once")
	case c.Park:
		return false, dispatch.Deferred(time.Time{}, "told to park")
	case c.Defer && b.calls[it.ID] == 1:
		return false, dispatch.Deferred(time.Now().Add(2*time.Second), "told to go later")
	}
	if b.effects[it.ID] == 0 {
		b.effects[it.ID], b.at[it.ID], b.slot[it.ID], b.ref[it.ID] = 1, time.Now(), it.At, run.String()
	}
	return true, nil
}

// Execute is the item type's own execution workflow's activity: the same
// idempotent effect, for an item handed over.
func (b *inbox) Execute(ctx context.Context, itemID string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.effects[itemID] == 0 {
		b.effects[itemID], b.ref[itemID] = 1, "own:"+itemID
	}
	return nil
}

func batchItemWorkflow(ctx workflow.Context, itemID, _ string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var b *inbox
	return workflow.ExecuteActivity(ctx, b.Execute, itemID).Get(ctx, nil)
}

// startBatchWorker registers the BATCHED type on its own task queue with
// a worker running batch executions (executor b) and the type's own
// workflow, which the settler settles.
func startBatchWorker(t *testing.T, p *pipeline, b *inbox) worker.Worker {
	t.Helper()
	cfg := dispatch.BatchConfig{
		Queue: p.q, Engine: dispatch.TemporalEngine{Client: p.c, Namespace: "default"},
		Executors: map[string]dispatch.Executor{"BATCHED": b.execute},
	}
	if b.group {
		cfg.GroupExecutors = map[string]dispatch.GroupExecutor{"BATCHED": b.executeGroup}
	}
	runner, err := dispatch.NewBatchRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(p.c, "batched-exec", worker.Options{})
	dispatch.RegisterBatch(w, runner)
	w.RegisterWorkflowWithOptions(batchItemWorkflow, workflow.RegisterOptions{Name: "BatchedItemWorkflow"})
	w.RegisterActivity(b)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

func registerBatched(t *testing.T, p *pipeline) {
	t.Helper()
	cfg := queue.DefaultSettings("BATCHED", "BatchedItemWorkflow", "batched-exec")
	cfg.DispatchInterval, cfg.JitterWindow, cfg.PreStartBuffer, cfg.BatchSize, cfg.MaxDispatchRetries = time.Second, 0, 10*time.Second, 200, 3
	cfg.ExecMode = queue.ExecBatch
	if _, err := p.q.RegisterItemType(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
}

// enqueueSlots enqueues paced items whose slots start at first, one every
// step.
func (p *pipeline) enqueueSlots(t *testing.T, itemType, prefix string, n int, first time.Time, step time.Duration, ctxJSON func(i int) string) {
	t.Helper()
	for i := range n {
		if _, err := p.q.SaveContextAndEnqueue(context.Background(), queue.EnqueueParams{
			ItemType: itemType, ItemID: fmt.Sprintf("%s-%04d", prefix, i), Paced: true,
			ScheduledExecTime: first.Add(time.Duration(i) * step), Context: json.RawMessage(ctxJSON(i)),
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBatchExecution: in BATCH mode the dispatcher starts one workflow a
// claimed batch, which executes each item once, not before its slot; an
// item that has to wait, or fails, is handed to its own workflow, and its
// neighbours are not held up by it; the executed items record the batch
// execution as theirs. An item deferred goes back to the queue and runs
// at its new time, in another batch; one parked stays PARKED, unclaimed.
// The same with a group executor, which runs each group's items in one
// call: each item's outcome is still its own.
func TestBatchExecution(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	for _, group := range []bool{false, true} {
		t.Run(fmt.Sprintf("group executor %t", group), func(t *testing.T) {
			t.Parallel()
			b := newInbox()
			b.group = group
			batchExecution(t, b)
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.group && b.groupCalls < 3 {
				t.Errorf("the group executor ran %d groups of 300 items", b.groupCalls)
			}
			if !b.group && b.groupCalls != 0 {
				t.Errorf("a group executor ran, and none was given")
			}
		})
	}
}

func batchExecution(t *testing.T, b *inbox) {
	ctx := context.Background()
	p := startPipeline(t)
	registerBatched(t, p)
	t.Cleanup(startBatchWorker(t, p, b).Stop)

	const n = 300
	first := time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
	p.enqueueSlots(t, "BATCHED", "item", n, first, 20*time.Millisecond, func(i int) string {
		switch i {
		case 50:
			return `{"wait":true}`
		case 51:
			return `{"fail":true}`
		case 60:
			return `{"defer":true}`
		case 61:
			return `{"park":true}`
		}
		return `{}`
	})
	if err := p.sched.Ensure(ctx, "BATCHED", time.Second); err != nil {
		t.Fatal(err)
	}
	p.waitForType(t, "BATCHED", "all completed but the parked one", 2*time.Minute, func(d queue.Depth) bool {
		return d.ByStatus[queue.StatusCompleted] == n-1 && d.ByStatus[queue.StatusParked] == 1
	})

	b.mu.Lock()
	defer b.mu.Unlock()
	batches := map[string]bool{}
	for i := range n {
		id := fmt.Sprintf("item-%04d", i)
		if b.effects[id] != 1 && i != 61 {
			t.Fatalf("%s: effect committed %d times", id, b.effects[id])
		}
		it, err := p.q.Get(ctx, "BATCHED", id)
		if err != nil {
			t.Fatal(err)
		}
		switch i {
		case 61:
			if b.effects[id] != 0 || it.Status != queue.StatusParked || it.RetryCount != 0 {
				t.Fatalf("%s, parked: effect %d, %+v", id, b.effects[id], it)
			}
			continue
		case 60:
			orig := first.Add(60 * 20 * time.Millisecond)
			if b.calls[id] != 2 || b.at[id].Sub(orig) < 2*time.Second || it.RetryCount != 0 {
				t.Fatalf("%s, deferred: %d runs, went %v after its first slot, %+v", id, b.calls[id], b.at[id].Sub(orig), it)
			}
			continue
		case 50, 51:
			if want := dispatch.ExecWorkflowID("BATCHED", id); it.ExecWorkflowID != want || b.ref[id] != "own:"+id {
				t.Fatalf("%s was not handed to its own workflow: queue says %s, executed by %s", id, it.ExecWorkflowID, b.ref[id])
			}
			continue
		}
		if b.at[id].Before(b.slot[id]) {
			t.Fatalf("%s executed %v before its slot", id, b.slot[id].Sub(b.at[id]))
		}
		if lag := b.at[id].Sub(b.slot[id]); lag > 2*time.Second {
			t.Errorf("%s executed %v after its slot", id, lag)
		}
		if !strings.HasPrefix(b.ref[id], it.ExecWorkflowID+"/") {
			t.Fatalf("%s: executed by %q, the queue names %q", id, b.ref[id], it.ExecWorkflowID)
		}
		batches[it.ExecWorkflowID] = true
	}
	// The neighbours of the failing and the waiting item went at their slots.
	for _, i := range []int{49, 52} {
		id := fmt.Sprintf("item-%04d", i)
		if lag := b.at[id].Sub(b.slot[id]); lag > time.Second {
			t.Errorf("%s, a neighbour, executed %v after its slot", id, lag)
		}
	}
	if len(batches) == 0 || len(batches) > n/10 {
		t.Fatalf("%d batch executions for %d items", len(batches), n)
	}
	for wf := range batches {
		desc, err := p.c.DescribeWorkflowExecution(ctx, wf, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := desc.GetWorkflowExecutionInfo().GetType().GetName(); got != dispatch.BatchWorkflowName {
			t.Fatalf("%s is a %s", wf, got)
		}
	}
}

// TestBatchExecutionWorkerLost: the worker running a batch execution stops
// in the middle of a group; another worker takes the workflow over and
// runs the group again. No item's effect is committed twice, and none is
// lost.
func TestBatchExecutionWorkerLost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	p := startPipeline(t)
	registerBatched(t, p)
	b := newInbox()
	halfway := make(chan struct{})
	var once sync.Once
	b.onExecute = func(id string) {
		if id == "lost-0040" {
			once.Do(func() { close(halfway) })
		}
	}
	w1 := startBatchWorker(t, p, b)
	const n = 120
	first := time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
	p.enqueueSlots(t, "BATCHED", "lost", n, first, 25*time.Millisecond, func(int) string { return `{}` })
	if err := p.sched.Ensure(ctx, "BATCHED", time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-halfway:
	case <-time.After(time.Minute):
		t.Fatal("the batch never reached its 40th item")
	}
	w1.Stop() // the group in progress is cut off; its workflow task times out
	t.Cleanup(startBatchWorker(t, p, b).Stop)
	p.waitForType(t, "BATCHED", "all completed after the worker was lost", 2*time.Minute,
		func(d queue.Depth) bool { return d.ByStatus[queue.StatusCompleted] == n })
	b.mu.Lock()
	defer b.mu.Unlock()
	reruns := 0
	for i := range n {
		id := fmt.Sprintf("lost-%04d", i)
		if b.effects[id] != 1 {
			t.Fatalf("%s: effect committed %d times", id, b.effects[id])
		}
		reruns += b.calls[id] - 1
	}
	t.Logf("%d items ran again after the worker was lost (idempotently)", reruns)
}
