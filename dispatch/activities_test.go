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

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/queue"
)

// fakeEngine is an in-memory workflow engine for activity tests: it
// refuses duplicate starts as Temporal does and can be told to fail.
type fakeEngine struct {
	mu      sync.Mutex
	runs    map[string]string // workflow id → RUNNING, COMPLETED, FAILED
	starts  map[string]int
	delays  map[string]time.Duration
	notBef  map[string]time.Time
	failFor func(id string) error
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{runs: map[string]string{}, starts: map[string]int{}, delays: map[string]time.Duration{}, notBef: map[string]time.Time{}}
}

func (f *fakeEngine) Start(_ context.Context, s dispatch.StartRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failFor != nil {
		if err := f.failFor(s.WorkflowID); err != nil {
			return err
		}
	}
	if st, ok := f.runs[s.WorkflowID]; ok && st != "FAILED" {
		return dispatch.ErrAlreadyStarted
	}
	f.runs[s.WorkflowID] = "RUNNING"
	f.starts[s.WorkflowID]++
	f.delays[s.WorkflowID] = s.Delay
	f.notBef[s.WorkflowID] = s.NotBefore
	return nil
}

func (f *fakeEngine) Exists(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.runs[id]
	return ok, nil
}

func (f *fakeEngine) Closed(_ context.Context, ids []string) (map[string]dispatch.Closure, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]dispatch.Closure{}
	for _, id := range ids {
		switch f.runs[id] {
		case "COMPLETED":
			out[id] = dispatch.Closure{Completed: true, Status: "COMPLETED"}
		case "FAILED":
			out[id] = dispatch.Closure{Status: "FAILED"}
		}
	}
	return out, nil
}

func (f *fakeEngine) finish(id, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[id] = status
}

type fixture struct {
	q    *queue.Queue
	pool *pgxpool.Pool
	eng  *fakeEngine
	act  *dispatch.Activities
	cfg  queue.Settings
	// now is the activities' clock (time.Now unless a test sets it).
	now func() time.Time
}

// itemType is the dispatcher tests' own item type: the framework's tests
// register theirs, as every domain does, and use no domain's.
const itemType = "TASK"

// newFixture is a database with the test item type, a fake engine and the
// activities on them; opts change the activities' configuration.
func newFixture(t *testing.T, opts ...func(*dispatch.Config)) *fixture {
	t.Helper()
	pool := pgtest.NewPool(t)
	q := queue.New(pool)
	c := queue.DefaultSettings(itemType, "TaskExecWorkflow", "task-exec")
	c.MaxInFlight = 2000
	if _, err := q.RegisterItemType(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	cfg, err := q.GetConfig(context.Background(), itemType)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{q: q, pool: pool, eng: newFakeEngine(), cfg: cfg, now: time.Now}
	dc := dispatch.Config{Queue: q, Engine: f.eng, Jitter: func(max time.Duration) time.Duration { return max / 2 },
		Now: func() time.Time { return f.now() }}
	for _, o := range opts {
		o(&dc)
	}
	if f.act, err = dispatch.NewActivities(dc); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) enqueue(t *testing.T, n int, due time.Time) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("p-%03d", i)
		_, err := f.q.SaveContextAndEnqueue(context.Background(), queue.EnqueueParams{
			ItemType: itemType, ItemID: ids[i], ScheduledExecTime: due,
			Context: json.RawMessage(fmt.Sprintf(`{"id":%q}`, ids[i])),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

func (f *fixture) status(t *testing.T, id string) queue.Item {
	t.Helper()
	it, err := f.q.Get(context.Background(), itemType, id)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func TestClaimAndDispatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ids := f.enqueue(t, 10, time.Now().Add(10*time.Second)) // inside the 30 s pre-start buffer
	// One was started by an earlier, crashed cycle.
	f.eng.runs[dispatch.ExecWorkflowID(itemType, ids[0])] = "RUNNING"

	d, err := f.act.ClaimAndDispatch(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.Claimed != 10 || d.Started != 9 || d.AlreadyStarted != 1 || d.StartFailed != 0 {
		t.Fatalf("dispatch = %+v", d)
	}
	for _, id := range ids {
		it := f.status(t, id)
		wf := dispatch.ExecWorkflowID(itemType, id)
		if it.Status != queue.StatusDispatched || it.ExecWorkflowID != wf {
			t.Fatalf("%s: %s %s", id, it.Status, it.ExecWorkflowID)
		}
		if id != ids[0] {
			// Not before the scheduled time (≈10 s away), plus half the jitter window.
			if got := f.eng.delays[wf]; got < 9*time.Second || got > 10*time.Second+f.cfg.JitterWindow/2 {
				t.Errorf("%s: start delay %v", id, got)
			}
		}
	}
	if f.eng.starts["exec-task-p-000"] != 0 {
		t.Fatal("an already started workflow was started again")
	}
}

// TestDispatchRecordedThroughADatabaseBlip: the workflows are started,
// then recording the batch fails twice (a database restarting); the
// cycle records it on a later try instead of leaving the claim for the
// stale-claim recovery.
func TestDispatchRecordedThroughADatabaseBlip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ids := f.enqueue(t, 5, time.Now().Add(-time.Second))
	// A sequence counts the UPDATEs of exec_queue: nextval survives the
	// failed statement's rollback. The first (the claim) passes, the
	// next two (recording the batch) fail as a restarting server would.
	if _, err := f.pool.Exec(ctx, `
		CREATE SEQUENCE blips;
		CREATE FUNCTION blip() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('blips') BETWEEN 2 AND 3 THEN
				RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = '57P01';
			END IF;
			RETURN NULL;
		END $$;
		CREATE TRIGGER blip BEFORE UPDATE ON exec_queue FOR EACH STATEMENT EXECUTE FUNCTION blip();`); err != nil {
		t.Fatal(err)
	}
	d, err := f.act.ClaimAndDispatch(ctx, f.cfg)
	if err != nil {
		t.Fatalf("ClaimAndDispatch: %v", err)
	}
	if d.Claimed != 5 || d.Started != 5 {
		t.Fatalf("dispatch = %+v", d)
	}
	var updates int
	if err := f.pool.QueryRow(ctx, `SELECT last_value FROM blips`).Scan(&updates); err != nil {
		t.Fatal(err)
	}
	if updates < 4 {
		t.Errorf("%d UPDATEs of the queue, want at least 4: the claim, two failed records, the one that held", updates)
	}
	for _, id := range ids {
		if it := f.status(t, id); it.Status != queue.StatusDispatched {
			t.Errorf("%s: %s, want DISPATCHED", id, it.Status)
		}
	}
}

// TestStartFailureRetriedThenDeadLettered: a start that keeps failing puts
// the item back to READY with retry+1 each cycle, then DEAD_LETTER.
func TestStartFailureRetriedThenDeadLettered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.enqueue(t, 2, time.Now().Add(-time.Second))
	f.eng.failFor = func(id string) error {
		if id == "exec-task-p-001" {
			return errors.New("frontend unavailable")
		}
		return nil
	}
	for cycle := 1; cycle <= f.cfg.MaxDispatchRetries; cycle++ {
		d, err := f.act.ClaimAndDispatch(ctx, f.cfg)
		if err != nil {
			t.Fatal(err)
		}
		it := f.status(t, "p-001")
		if it.RetryCount != cycle || it.LastError == "" {
			t.Fatalf("cycle %d: %+v", cycle, it)
		}
		if cycle < f.cfg.MaxDispatchRetries && (it.Status != queue.StatusReady || d.StartFailed != 1) {
			t.Fatalf("cycle %d: %s, dispatch %+v", cycle, it.Status, d)
		}
		if cycle == f.cfg.MaxDispatchRetries && (it.Status != queue.StatusDeadLetter || d.DeadLettered != 1) {
			t.Fatalf("last cycle: %s, dispatch %+v", it.Status, d)
		}
	}
	if s := f.status(t, "p-000").Status; s != queue.StatusDispatched {
		t.Fatalf("the healthy item is %s", s)
	}
}

// TestRecoverStaleClaims: a claim whose dispatcher died is released when no
// workflow exists and marked DISPATCHED when one does.
func TestRecoverStaleClaims(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.enqueue(t, 2, time.Now().Add(-time.Second))
	// The dispatcher claims, starts p-000 only, and dies.
	b, err := f.q.ClaimBatch(ctx, f.cfg.ClaimParams())
	if err != nil || len(b.Items) != 2 {
		t.Fatalf("claim: %v", err)
	}
	f.eng.runs["exec-task-p-000"] = "RUNNING"

	if r, err := f.act.RecoverStaleClaims(ctx, f.cfg); err != nil || r != (dispatch.Recovery{}) {
		t.Fatalf("fresh claims recovered: %+v %v", r, err)
	}
	if _, err := f.pool.Exec(ctx, `UPDATE exec_queue SET claimed_at = now() - interval '10 minutes'`); err != nil {
		t.Fatal(err)
	}
	r, err := f.act.RecoverStaleClaims(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Released != 1 || r.Dispatched != 1 {
		t.Fatalf("recovery = %+v", r)
	}
	if it := f.status(t, "p-000"); it.Status != queue.StatusDispatched {
		t.Fatalf("started item: %s", it.Status)
	}
	if it := f.status(t, "p-001"); it.Status != queue.StatusReady || it.RetryCount != 1 {
		t.Fatalf("unstarted item: %s retries %d", it.Status, it.RetryCount)
	}
	// The next cycle dispatches the released item.
	d, err := f.act.ClaimAndDispatch(ctx, f.cfg)
	if err != nil || d.Started != 1 {
		t.Fatalf("re-dispatch: %+v %v", d, err)
	}
}

// TestLoweredMaxDeadLettersLeftovers: an item released for retry, then the
// max lowered to its retry count. The claim no longer takes it, so the
// next cycle's recovery dead-letters it instead of leaving it READY for
// ever.
func TestLoweredMaxDeadLettersLeftovers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.enqueue(t, 2, time.Now().Add(-time.Second))
	f.eng.failFor = func(id string) error {
		if id == "exec-task-p-001" {
			return errors.New("frontend unavailable")
		}
		return nil
	}
	if d, err := f.act.ClaimAndDispatch(ctx, f.cfg); err != nil || d.StartFailed != 1 {
		t.Fatalf("first cycle: %+v %v", d, err)
	}
	f.eng.failFor = nil
	lowered := f.cfg
	lowered.MaxDispatchRetries = 1
	if d, err := f.act.ClaimAndDispatch(ctx, lowered); err != nil || d.Claimed != 0 {
		t.Fatalf("an item at the max was claimed: %+v %v", d, err)
	}
	r, err := f.act.RecoverStaleClaims(ctx, lowered)
	if err != nil || r.DeadLettered != 1 || r.Released != 0 {
		t.Fatalf("recovery = %+v %v", r, err)
	}
	if it := f.status(t, "p-001"); it.Status != queue.StatusDeadLetter || it.RetryCount != 1 {
		t.Fatalf("left-over item: %s retries %d", it.Status, it.RetryCount)
	}
	if it := f.status(t, "p-000"); it.Status != queue.StatusDispatched {
		t.Fatalf("the healthy item is %s", it.Status)
	}
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.enqueue(t, 4, time.Now().Add(-time.Second))
	if _, err := f.act.ClaimAndDispatch(ctx, f.cfg); err != nil {
		t.Fatal(err)
	}
	f.eng.finish("exec-task-p-000", "COMPLETED")
	f.eng.finish("exec-task-p-001", "FAILED")
	f.eng.finish("exec-task-p-002", "FAILED")
	if _, err := f.pool.Exec(ctx, `UPDATE exec_queue SET retry_count = $1 WHERE item_id = 'p-002'`, f.cfg.MaxDispatchRetries-1); err != nil {
		t.Fatal(err)
	}
	r, err := f.act.Reconcile(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Checked != 4 || r.Completed != 1 || r.Failed != 1 || r.DeadLettered != 1 {
		t.Fatalf("reconciliation = %+v", r)
	}
	want := map[string]queue.Status{"p-000": queue.StatusCompleted, "p-001": queue.StatusReady, "p-002": queue.StatusDeadLetter, "p-003": queue.StatusDispatched}
	for id, s := range want {
		if got := f.status(t, id).Status; got != s {
			t.Errorf("%s: %s, want %s", id, got, s)
		}
	}
	// The failed item runs again; the completed one can never start again.
	d, err := f.act.ClaimAndDispatch(ctx, f.cfg)
	if err != nil || d.Started != 1 || f.eng.starts["exec-task-p-001"] != 2 {
		t.Fatalf("retry dispatch: %+v %v", d, err)
	}
	if err := f.eng.Start(ctx, dispatch.StartRequest{WorkflowID: "exec-task-p-000"}); !errors.Is(err, dispatch.ErrAlreadyStarted) {
		t.Fatalf("completed item restarted: %v", err)
	}
}

// TestReconcileAsksOnlyAboutDueItems: items started ahead of their time
// are not asked about until it comes, even one whose run already ended.
func TestReconcileAsksOnlyAboutDueItems(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	due := time.Now().Add(3 * time.Second)
	f.enqueue(t, 2, due)
	if d, err := f.act.ClaimAndDispatch(ctx, f.cfg); err != nil || d.Started != 2 {
		t.Fatalf("dispatch: %+v %v", d, err)
	}
	f.eng.finish("exec-task-p-000", "FAILED") // say, terminated by an operator
	for _, tc := range []struct {
		name           string
		now            time.Time
		checked, fails int
	}{
		{"before the items are due", due.Add(-time.Millisecond), 0, 0},
		{"once they are due", due, 2, 1},
	} {
		f.now = func() time.Time { return tc.now }
		r, err := f.act.Reconcile(ctx, f.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Checked != tc.checked || r.Failed != tc.fails {
			t.Errorf("%s: reconciliation = %+v, want %d checked, %d failed", tc.name, r, tc.checked, tc.fails)
		}
	}
}

// TestKillSwitchHoldsItems: with the type disabled, a cycle claims nothing;
// enabling it releases the items.
func TestConfigReadEachCycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `UPDATE exec_rate_config SET enabled = false, batch_size = 7 WHERE item_type = 'TASK'`); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.act.ReadConfig(ctx, itemType)
	if err != nil || cfg.Enabled || cfg.BatchSize != 7 {
		t.Fatalf("config = %+v %v", cfg, err)
	}
}

// TestDispatchIsFair: the dispatcher's claim shares a batch between
// tenants: a small tenant behind a big backlog is dispatched in the first
// cycle.
func TestDispatchIsFair(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for i := range 200 {
		if _, err := f.q.SaveContextAndEnqueue(ctx, queue.EnqueueParams{ItemType: itemType, ItemID: fmt.Sprintf("big-%03d", i), TenantID: "big",
			ScheduledExecTime: time.Now().Add(-time.Hour), Context: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if _, err := f.q.SaveContextAndEnqueue(ctx, queue.EnqueueParams{ItemType: itemType, ItemID: fmt.Sprintf("small-%d", i), TenantID: "small",
			ScheduledExecTime: time.Now().Add(-time.Second), Context: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := f.cfg
	cfg.BatchSize = 50
	d, err := f.act.ClaimAndDispatch(ctx, cfg)
	if err != nil || d.Started != 50 {
		t.Fatalf("dispatch: %+v %v", d, err)
	}
	for i := range 5 {
		if it := f.status(t, fmt.Sprintf("small-%d", i)); it.Status != queue.StatusDispatched {
			t.Fatalf("small-%d is %s after the first cycle", i, it.Status)
		}
	}
}

// TestPacedItemsStartAtTheirSlot: a paced item starts exactly slot − now,
// with no jitter; an unpaced one gets the jitter on top.
func TestPacedItemsStartAtTheirSlot(t *testing.T) {
	t.Parallel()
	// The slot is 7 s away; the pre-start buffer is 30 s.
	for _, tc := range []struct {
		name      string
		lead      time.Duration
		wantDelay time.Duration // ± 1 s
		holds     bool          // the workflow is told to hold until the slot
	}{
		{"no lead: the engine's timer starts it at the slot", 0, 7 * time.Second, false},
		{"lead: started 2 s ahead, holds until the slot", 2 * time.Second, 5 * time.Second, true},
		{"lead over the slot's distance: started now, holds", 20 * time.Second, 0, true},
		{"lead capped by the pre-start buffer", 60 * time.Second, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			ctx := context.Background()
			f.cfg.PacedLead = tc.lead
			slot := time.Now().Add(7 * time.Second).Truncate(time.Millisecond)
			for _, it := range []struct {
				id    string
				paced bool
			}{{"paced", true}, {"jittered", false}} {
				if _, err := f.q.SaveContextAndEnqueue(ctx, queue.EnqueueParams{
					ItemType: itemType, ItemID: it.id, ScheduledExecTime: slot, Context: json.RawMessage(`{}`), Paced: it.paced,
				}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.act.ClaimAndDispatch(ctx, f.cfg); err != nil {
				t.Fatal(err)
			}
			pacedID, jitteredID := dispatch.ExecWorkflowID(itemType, "paced"), dispatch.ExecWorkflowID(itemType, "jittered")
			paced, jittered := f.eng.delays[pacedID], f.eng.delays[jitteredID]
			if paced > tc.wantDelay || paced < tc.wantDelay-time.Second {
				t.Fatalf("paced delay %v, want ≈ %v", paced, tc.wantDelay)
			}
			if nb := f.eng.notBef[pacedID]; tc.holds != !nb.IsZero() || (tc.holds && !nb.Equal(slot)) {
				t.Fatalf("paced NotBefore %v, want the slot %v: %v", nb, slot, tc.holds)
			}
			// Unpaced: at its time plus the jitter (half the window here),
			// never told to hold.
			if d := jittered - 7*time.Second; d < f.cfg.JitterWindow/2-time.Second || d > f.cfg.JitterWindow/2 {
				t.Fatalf("jittered delay %v: want 7 s + half the jitter window (%v)", jittered, f.cfg.JitterWindow/2)
			}
			if nb := f.eng.notBef[jitteredID]; !nb.IsZero() {
				t.Fatalf("unpaced NotBefore %v, want zero", nb)
			}
		})
	}
}

// feederFunc is a Feeder from a func.
type feederFunc func(ctx context.Context, dueBy time.Time) (int, error)

func (f feederFunc) Feed(ctx context.Context, dueBy time.Time) (int, error) { return f(ctx, dueBy) }

// TestCycleFeedsBeforeItsClaim: an item type with a feeder (a domain that
// enqueues its far-off items late) is fed before each claim, up to the
// claim's reach and FeedAhead beyond: the items it enqueues are claimed
// in the same cycle. A feed that fails leaves the claim to go on.
func TestCycleFeedsBeforeItsClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	var asked []time.Time
	fail := false
	var f *fixture
	f = newFixture(t, func(c *dispatch.Config) {
		c.Feeders = map[string]dispatch.Feeder{itemType: feederFunc(func(ctx context.Context, dueBy time.Time) (int, error) {
			asked = append(asked, dueBy)
			if fail {
				return 0, errors.New("the database is restarting")
			}
			return len(f.enqueue(t, 3, now.Add(5*time.Second))), nil
		})}
	})
	f.now = func() time.Time { return now }
	d, err := f.act.ClaimAndDispatch(ctx, f.cfg)
	if err != nil || d.Fed != 3 || d.Claimed != 3 || d.Started != 3 {
		t.Fatalf("dispatch = %+v, %v", d, err)
	}
	if want := now.Add(f.cfg.PreStartBuffer + dispatch.FeedAhead(f.cfg)); len(asked) != 1 || !asked[0].Equal(want) {
		t.Errorf("fed up to %v, want %v", asked, want)
	}
	if dispatch.FeedAhead(f.cfg) < 10*f.cfg.DispatchInterval || dispatch.FeedAhead(f.cfg) < time.Minute {
		t.Errorf("FeedAhead %v: under ten cycles of %v or a minute", dispatch.FeedAhead(f.cfg), f.cfg.DispatchInterval)
	}
	fail = true
	if d, err := f.act.ClaimAndDispatch(ctx, f.cfg); err != nil || d.Fed != 0 || len(asked) != 2 {
		t.Errorf("a failed feed: %+v, %v (%d feeds)", d, err, len(asked))
	}
}
