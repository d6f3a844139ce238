package queue_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/queue"
)

const maxRetries = 3

// transition is one guarded queue operation applied to item "x" claimed (if
// at all) by batch "B".
type transition struct {
	name  string
	from  queue.Status // the one legal source status
	apply func(q *queue.Queue) (queue.Outcome, error)
}

var transitions = []transition{
	{"MarkDispatched", queue.StatusClaimed, func(q *queue.Queue) (queue.Outcome, error) {
		err := markDispatched(context.Background(), q, itemType, "B", queue.Dispatch{ItemID: "x", ExecWorkflowID: "exec-PAYMENT-x"})
		return queue.Outcome{ItemID: "x", Status: queue.StatusDispatched}, err
	}},
	{"ReleaseForRetry", queue.StatusClaimed, func(q *queue.Queue) (queue.Outcome, error) {
		return releaseForRetry(context.Background(), q, itemType, "B", queue.Failure{ItemID: "x", Error: "start failed"}, maxRetries)
	}},
	{"MarkCompleted", queue.StatusDispatched, func(q *queue.Queue) (queue.Outcome, error) {
		err := markCompleted(context.Background(), q, itemType, "x")
		return queue.Outcome{ItemID: "x", Status: queue.StatusCompleted}, err
	}},
	{"MarkFailed", queue.StatusDispatched, func(q *queue.Queue) (queue.Outcome, error) {
		return markFailed(context.Background(), q, itemType, queue.Failure{ItemID: "x", Error: "execution failed"}, maxRetries)
	}},
}

// TestLegalTransitions walks every arrow of the state diagram.
func TestLegalTransitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		op            string
		retriesBefore int
		want          queue.Status
		wantRetries   int
		wantContext   bool
		wantActions   []string // audit actions the transition adds, in order
	}{
		{"MarkDispatched", 0, queue.StatusDispatched, 0, true, []string{"DISPATCHED"}},
		{"ReleaseForRetry", 0, queue.StatusReady, 1, true, []string{"RETRY"}},
		{"ReleaseForRetry", maxRetries - 1, queue.StatusDeadLetter, maxRetries, true, []string{"DEAD_LETTER"}},
		{"MarkCompleted", 0, queue.StatusCompleted, 0, false, []string{"COMPLETED"}},
		{"MarkFailed", 0, queue.StatusReady, 1, true, []string{"EXEC_FAILED", "RETRY"}},
		{"MarkFailed", maxRetries - 1, queue.StatusDeadLetter, maxRetries, true, []string{"EXEC_FAILED", "DEAD_LETTER"}},
	}
	for _, tt := range tests {
		t.Run(tt.op+"→"+string(tt.want), func(t *testing.T) {
			t.Parallel()
			q, pool := newQueue(t)
			tr := findTransition(tt.op)
			mustEnqueue(t, q, "x", time.Now())
			force(t, pool, "x", tr.from, "B", tt.retriesBefore)
			auditsBefore := auditCount(t, pool, "x")

			out, err := tr.apply(q)
			if err != nil {
				t.Fatalf("%s from %s: %v", tt.op, tr.from, err)
			}
			it := mustGet(t, q, "x")
			if it.Status != tt.want || out.Status != tt.want {
				t.Fatalf("status = %s (reported %s), want %s", it.Status, out.Status, tt.want)
			}
			if it.RetryCount != tt.wantRetries {
				t.Errorf("retry count = %d, want %d", it.RetryCount, tt.wantRetries)
			}
			if got := contextExists(t, pool, "x"); got != tt.wantContext {
				t.Errorf("context exists = %v, want %v", got, tt.wantContext)
			}
			trail := auditTrail(t, pool, "x")
			var actions []string
			for _, e := range trail[auditsBefore:] {
				actions = append(actions, e.Action)
			}
			if !reflect.DeepEqual(actions, tt.wantActions) {
				t.Errorf("audit actions = %v, want %v", actions, tt.wantActions)
			}
			last := trail[len(trail)-1]
			if last.StatusAfter != tt.want {
				t.Errorf("last audit status after = %s, want %s", last.StatusAfter, tt.want)
			}
			switch tt.want {
			case queue.StatusDispatched:
				if it.ExecWorkflowID != "exec-PAYMENT-x" || it.DispatchedAt == nil {
					t.Errorf("dispatch not recorded: %+v", it)
				}
			case queue.StatusCompleted:
				if it.CompletedAt == nil {
					t.Error("completed_at not set")
				}
			case queue.StatusReady, queue.StatusDeadLetter:
				if it.LastError == "" {
					t.Error("last error not recorded")
				}
			}
		})
	}
}

// TestIllegalTransitions: every operation from every status but its legal
// one, from a foreign batch, and on a missing item, is rejected and changes
// nothing, not even the audit log.
func TestIllegalTransitions(t *testing.T) {
	t.Parallel()
	for _, tr := range transitions {
		for _, from := range queue.Statuses {
			if from == tr.from {
				continue
			}
			t.Run(tr.name+"/from-"+string(from), func(t *testing.T) {
				t.Parallel()
				assertRejected(t, tr, from, "B", true)
			})
		}
		if tr.from == queue.StatusClaimed {
			t.Run(tr.name+"/other-batch", func(t *testing.T) {
				t.Parallel()
				assertRejected(t, tr, tr.from, "OTHER", true)
			})
		}
		t.Run(tr.name+"/missing-item", func(t *testing.T) {
			t.Parallel()
			assertRejected(t, tr, "", "", false)
		})
	}
}

func assertRejected(t *testing.T, tr transition, from queue.Status, batch string, exists bool) {
	t.Helper()
	q, pool := newQueue(t)
	var before queue.Item
	if exists {
		mustEnqueue(t, q, "x", time.Now())
		force(t, pool, "x", from, batch, 0)
		before = mustGet(t, q, "x")
	}
	audits := auditCount(t, pool, "x")

	_, err := tr.apply(q)
	if !errors.Is(err, queue.ErrTransitionRejected) {
		t.Fatalf("%s from %s (batch %q): err = %v, want ErrTransitionRejected", tr.name, from, batch, err)
	}
	var te *queue.TransitionError
	if !errors.As(err, &te) || len(te.Rejected) != 1 || te.Rejected[0].Actual != from {
		t.Fatalf("rejection does not report the actual status %q: %v", from, err)
	}
	if !exists {
		if _, err := q.Get(context.Background(), itemType, "x"); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("a rejected transition created the item: %v", err)
		}
		return
	}
	if after := mustGet(t, q, "x"); !reflect.DeepEqual(after, before) {
		t.Fatalf("rejected transition changed the row:\n before %+v\n after  %+v", before, after)
	}
	if !contextExists(t, pool, "x") {
		t.Fatal("rejected transition deleted the context")
	}
	if got := auditCount(t, pool, "x"); got != audits {
		t.Fatalf("rejected transition wrote %d audit rows", got-audits)
	}
}

func findTransition(name string) transition {
	for _, tr := range transitions {
		if tr.name == name {
			return tr
		}
	}
	panic("no transition " + name)
}

// TestBatchTransitionPartial: in a batch, items whose guard matches move and
// the others are reported, unchanged.
func TestBatchTransitionPartial(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		mustEnqueue(t, q, id, time.Now())
	}
	force(t, pool, "a", queue.StatusClaimed, "B", 0)
	force(t, pool, "b", queue.StatusClaimed, "B", 0)
	// c stays READY

	res, err := q.MarkDispatchedBatch(ctx, itemType, "B", []queue.Dispatch{
		{ItemID: "a", ExecWorkflowID: "wa"}, {ItemID: "b", ExecWorkflowID: "wb"},
		{ItemID: "c", ExecWorkflowID: "wc"}, {ItemID: "nope", ExecWorkflowID: "wn"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Moved) != 2 || len(res.Rejected) != 2 {
		t.Fatalf("moved %v rejected %v", res.Moved, res.Rejected)
	}
	want := map[string]queue.Status{"c": queue.StatusReady, "nope": ""}
	for _, r := range res.Rejected {
		if s, ok := want[r.ItemID]; !ok || s != r.Actual {
			t.Errorf("rejection %+v unexpected", r)
		}
	}
	if mustGet(t, q, "a").ExecWorkflowID != "wa" || mustGet(t, q, "b").Status != queue.StatusDispatched {
		t.Fatal("matching items did not move")
	}
	if mustGet(t, q, "c").Status != queue.StatusReady {
		t.Fatal("non-matching item moved")
	}
	if !errors.Is(res.Err("mark dispatched", queue.StatusClaimed), queue.ErrTransitionRejected) {
		t.Fatal("BatchResult.Err does not report the rejections")
	}
}

// TestFullLifecycle drives one item through claim, a failed start, a
// re-claim, dispatch, a failed execution, and completion.
func TestFullLifecycle(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	mustEnqueue(t, q, "x", time.Now().Add(-time.Second))
	claim := queue.ClaimParams{ItemType: itemType, BatchSize: 10, MaxRetries: 5}

	b1, err := q.ClaimBatch(ctx, claim)
	if err != nil || len(b1.Items) != 1 {
		t.Fatalf("claim 1: %v %v", b1, err)
	}
	if _, err := releaseForRetry(ctx, q, itemType, b1.ID, queue.Failure{ItemID: "x", Error: "temporal unavailable"}, 5); err != nil {
		t.Fatal(err)
	}
	b2, err := q.ClaimBatch(ctx, claim)
	if err != nil || len(b2.Items) != 1 || b2.Items[0].RetryCount != 1 {
		t.Fatalf("claim 2: %+v %v", b2, err)
	}
	// The first batch no longer owns the item.
	if err := markDispatched(ctx, q, itemType, b1.ID, queue.Dispatch{ItemID: "x", ExecWorkflowID: "w"}); !errors.Is(err, queue.ErrTransitionRejected) {
		t.Fatalf("stale batch dispatched the item: %v", err)
	}
	if err := markDispatched(ctx, q, itemType, b2.ID, queue.Dispatch{ItemID: "x", ExecWorkflowID: "w"}); err != nil {
		t.Fatal(err)
	}
	if out, err := markFailed(ctx, q, itemType, queue.Failure{ItemID: "x", Error: "rail down"}, 5); err != nil || out.Status != queue.StatusReady {
		t.Fatalf("mark failed: %+v %v", out, err)
	}
	b3, err := q.ClaimBatch(ctx, claim)
	if err != nil || len(b3.Items) != 1 {
		t.Fatalf("claim 3: %v", err)
	}
	if err := markDispatched(ctx, q, itemType, b3.ID, queue.Dispatch{ItemID: "x", ExecWorkflowID: "w"}); err != nil {
		t.Fatal(err)
	}
	if err := markCompleted(ctx, q, itemType, "x"); err != nil {
		t.Fatal(err)
	}
	trail := auditTrail(t, pool, "x")
	var path []string
	for _, e := range trail {
		path = append(path, string(e.StatusAfter))
	}
	// Claims are audited per batch; the item's own trail names the batch at
	// the transition that follows each claim.
	want := []string{"READY", "READY", "DISPATCHED", "FAILED", "READY", "DISPATCHED", "COMPLETED"}
	if !reflect.DeepEqual(path, want) {
		t.Fatalf("audit path = %v\nwant %v", path, want)
	}
	for i, b := range map[int]string{1: b1.ID, 2: b2.ID, 5: b3.ID} {
		if trail[i].BatchID != b || trail[i].StatusBefore != queue.StatusClaimed {
			t.Errorf("trail[%d] = %+v, want a transition out of CLAIMED by %s", i, trail[i], b)
		}
	}
}

// TestDeadLetterExhausted: READY items left at or above a lowered max are
// dead-lettered (the claim would never take them), and nothing else is.
func TestDeadLetterExhausted(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	setup := []struct {
		id      string
		status  queue.Status
		retries int
	}{
		{"fresh", queue.StatusReady, 0},
		{"once", queue.StatusReady, 1},
		{"at-max", queue.StatusReady, 2},
		{"above-a", queue.StatusReady, 4},
		{"above-b", queue.StatusReady, 5},
		{"claimed", queue.StatusClaimed, 5},
		{"dispatched", queue.StatusDispatched, 3},
	}
	for _, s := range setup {
		mustEnqueue(t, q, s.id, time.Now())
		force(t, pool, s.id, s.status, "B", s.retries)
	}

	// A max of 2 with room for two per call: two calls take the three.
	first, err := q.DeadLetterExhausted(ctx, itemType, 2, 2)
	if err != nil || len(first) != 2 {
		t.Fatalf("first sweep: %+v, %v", first, err)
	}
	second, err := q.DeadLetterExhausted(ctx, itemType, 2, 2)
	if err != nil || len(second) != 1 {
		t.Fatalf("second sweep: %+v, %v", second, err)
	}
	if again, err := q.DeadLetterExhausted(ctx, itemType, 2, 100); err != nil || len(again) != 0 {
		t.Fatalf("third sweep moved %+v, %v", again, err)
	}
	for _, o := range append(first, second...) {
		if o.Status != queue.StatusDeadLetter {
			t.Errorf("%s: %s, want DEAD_LETTER", o.ItemID, o.Status)
		}
	}
	want := map[string]queue.Status{
		"fresh": queue.StatusReady, "once": queue.StatusReady,
		"at-max": queue.StatusDeadLetter, "above-a": queue.StatusDeadLetter, "above-b": queue.StatusDeadLetter,
		"claimed": queue.StatusClaimed, "dispatched": queue.StatusDispatched,
	}
	for id, st := range want {
		it := mustGet(t, q, id)
		if it.Status != st {
			t.Errorf("%s: %s, want %s", id, it.Status, st)
		}
		if st == queue.StatusDeadLetter && !strings.Contains(it.LastError, "max_dispatch_retries 2") {
			t.Errorf("%s: last error %q does not say why", id, it.LastError)
		}
	}
	var audited int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM dispatch_audit_log
		WHERE item_type = $1 AND action = 'DEAD_LETTER' AND status_before = 'READY'`, itemType).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != 3 {
		t.Errorf("%d DEAD_LETTER audit rows, want 3", audited)
	}
	if _, err := q.DeadLetterExhausted(ctx, itemType, 0, 10); err == nil {
		t.Error("a max of 0 was accepted")
	}
}
