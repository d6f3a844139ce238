package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/paydispatch/paydispatch/queue"
)

// Config is what the dispatcher's activities work with. Queue and Engine
// are required; the rest have defaults.
type Config struct {
	Queue  *queue.Queue
	Engine Engine
	// Logger defaults to one that discards.
	Logger *slog.Logger
	// StartConcurrency bounds the parallel starts of one batch (default
	// 16, at most 1,000).
	StartConcurrency int
	// Jitter returns a random delay in [0, max) (default: math/rand).
	Jitter func(max time.Duration) time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Schedules, when set, follows interval changes: each ReadConfig
	// re-applies the configured interval to the item type's schedule.
	Schedules *Schedules
	// Metrics, when set, count every cycle's work.
	Metrics *Metrics
	// Feeders, by item type: a domain that writes the queue items of its
	// far-off work late (payment's Phase A past the queue's mark) is fed
	// before each claim, up to the claim's reach and FeedAhead beyond.
	Feeders map[string]Feeder
}

// Feeder enqueues a domain's items due before a time that are not in the
// queue yet, and returns how many it enqueued.
type Feeder interface {
	Feed(ctx context.Context, dueBy time.Time) (int, error)
}

// FeedAhead is how far past the claim's reach (its pre-start buffer) a
// cycle has its item type's feeder enqueue: at least ten cycles', so
// that a cycle or a feed that fails leaves items to claim.
func FeedAhead(cfg queue.Settings) time.Duration {
	return max(time.Minute, 10*cfg.DispatchInterval)
}

// Activities hold the dispatcher's I/O. Each is safe to retry: claims and
// transitions are guarded statements, and starts are de-duplicated by
// workflow id.
type Activities struct {
	cfg Config
}

// NewActivities checks c once and fills in its defaults.
func NewActivities(c Config) (*Activities, error) {
	switch {
	case c.Queue == nil:
		return nil, errors.New("dispatch: a queue is required")
	case c.Engine == nil:
		return nil, errors.New("dispatch: an engine is required")
	case c.StartConcurrency < 0 || c.StartConcurrency > 1000:
		return nil, fmt.Errorf("dispatch: start concurrency %d outside 0..1000", c.StartConcurrency)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.StartConcurrency == 0 {
		c.StartConcurrency = 16
	}
	if c.Jitter == nil {
		c.Jitter = func(max time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(max))) }
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Activities{cfg: c}, nil
}

// queue is the queue the activities work on. Unexported: every exported
// method of Activities is registered as an activity.
func (a *Activities) queue() *queue.Queue { return a.cfg.Queue }

// Activity names, as registered.
const (
	ReadConfigActivity         = "ReadConfig"
	RecoverStaleClaimsActivity = "RecoverStaleClaims"
	ReconcileActivity          = "Reconcile"
	ClaimAndDispatchActivity   = "ClaimAndDispatch"
	RecordResultsActivity      = "RecordResults"
)

// Recovery is what stale-claim recovery did.
type Recovery struct {
	Released     int // workflow never started: back to READY
	Dispatched   int // workflow exists: the claim is marked DISPATCHED
	DeadLettered int
}

// Reconciliation is what comparing DISPATCHED items with the engine did.
type Reconciliation struct {
	Checked      int
	Completed    int
	Failed       int // back to READY for another try
	DeadLettered int
}

// Dispatch is what one claim and its starts did.
type Dispatch struct {
	BatchID        string
	Claimed        int
	Started        int
	AlreadyStarted int
	StartFailed    int // released for retry
	DeadLettered   int // released, retries used up
	// AtCapacity: max_in_flight items were already in flight, so the
	// cycle claimed nothing.
	AtCapacity bool `json:",omitempty"`
	// Fed counts the items the item type's feeder enqueued before the
	// claim (Config.Feeders).
	Fed int `json:",omitempty"`
}

// ReadConfig reads the item type's configuration, every cycle, so a change
// takes effect at the next cycle without a restart.
func (a *Activities) ReadConfig(ctx context.Context, itemType string) (queue.Settings, error) {
	cfg, err := a.cfg.Queue.GetConfig(ctx, itemType)
	if err != nil {
		return cfg, err
	}
	if a.cfg.Schedules != nil {
		if err := a.cfg.Schedules.Ensure(ctx, itemType, cfg.DispatchInterval); err != nil {
			// The cycle itself can go on; the next one tries again.
			a.cfg.Logger.Warn("schedule not updated to the configured interval", "item_type", itemType, "error", err)
		}
	}
	return cfg, nil
}

// RecoverStaleClaims heals claims whose dispatcher died: up to the
// configured cap, claims older than the threshold are checked against the
// engine. No workflow: back to READY (retry+1). A workflow: it was started
// before the crash, so the claim becomes DISPATCHED. First, up to the same
// cap, READY items whose retries are already used up (the max was
// lowered under them) are dead-lettered: no claim would ever take them.
func (a *Activities) RecoverStaleClaims(ctx context.Context, cfg queue.Settings) (Recovery, error) {
	var r Recovery
	exhausted, err := a.cfg.Queue.DeadLetterExhausted(ctx, cfg.ItemType, cfg.MaxDispatchRetries, cfg.MaxStaleRecoveryPerCycle)
	if err != nil {
		return r, err
	}
	if len(exhausted) > 0 {
		r.DeadLettered += len(exhausted)
		a.cfg.Logger.Warn("READY items with their retries used up dead-lettered (max_dispatch_retries lowered?)",
			"item_type", cfg.ItemType, "max_dispatch_retries", cfg.MaxDispatchRetries, "dead_lettered", len(exhausted))
	}
	stale, err := a.cfg.Queue.FindStaleClaims(ctx, cfg.ItemType, cfg.StaleClaimThreshold, cfg.MaxStaleRecoveryPerCycle)
	if err != nil || len(stale) == 0 {
		return r, err
	}
	batches := map[string]bool{} // a batch execution's existence, asked once
	for _, it := range stale {
		wf, exists, err := a.claimedExecution(ctx, it, batches)
		if err != nil {
			return r, err
		}
		if exists {
			res, err := a.cfg.Queue.MarkDispatchedBatch(ctx, it.Type, it.DispatchBatchID, []queue.Dispatch{{ItemID: it.ID, ExecWorkflowID: wf}})
			if err != nil {
				return r, err
			}
			r.Dispatched += len(res.Moved)
			continue
		}
		res, err := a.cfg.Queue.RecoverStale(ctx, it.Type, it.DispatchBatchID,
			[]queue.Failure{{ItemID: it.ID, Error: "stale claim: no execution workflow after " + cfg.StaleClaimThreshold.String()}},
			cfg.MaxDispatchRetries)
		if err != nil {
			return r, err
		}
		retried, dead := splitRetried(res)
		r.Released += retried
		r.DeadLettered += dead
	}
	a.cfg.Logger.Info("stale claims recovered", "item_type", cfg.ItemType, "released", r.Released, "dispatched", r.Dispatched, "dead_lettered", r.DeadLettered)
	return r, nil
}

// claimedExecution finds the execution a stale claim's dispatcher may have
// started before it died: its claim's batch execution, or its own
// workflow (the mode may have changed since the claim).
func (a *Activities) claimedExecution(ctx context.Context, it queue.Item, batches map[string]bool) (string, bool, error) {
	bw := BatchWorkflowID(it.Type, it.DispatchBatchID)
	exists, asked := batches[bw]
	if !asked {
		var err error
		if exists, err = a.cfg.Engine.Exists(ctx, bw); err != nil {
			return "", false, fmt.Errorf("dispatch: look up %s: %w", bw, err)
		}
		batches[bw] = exists
	}
	if exists {
		return bw, true, nil
	}
	wf := ExecWorkflowID(it.Type, it.ID)
	exists, err := a.cfg.Engine.Exists(ctx, wf)
	if err != nil {
		return "", false, fmt.Errorf("dispatch: look up %s: %w", wf, err)
	}
	return wf, exists, nil
}

// Reconcile asks the engine how the oldest DISPATCHED items' workflows
// ended, in batched visibility queries: completed → COMPLETED (context
// deleted); failed, terminated, timed out → READY with retry+1, or
// DEAD_LETTER. Only items already due are asked about: with a pre-start
// buffer of 30 s at 25 items/s, the items started ahead of their time
// would be six in seven of the ids asked about, each a visibility lookup
// on the engine.
func (a *Activities) Reconcile(ctx context.Context, cfg queue.Settings) (Reconciliation, error) {
	var r Reconciliation
	items, err := a.cfg.Queue.ListDispatched(ctx, cfg.ItemType, a.cfg.Now(), 2*cfg.BatchSize)
	if err != nil || len(items) == 0 {
		return r, err
	}
	r.Checked = len(items)
	byWorkflow := make(map[string][]string, len(items)) // a batch execution has many items
	for _, it := range items {
		wf := cmp.Or(it.ExecWorkflowID, ExecWorkflowID(it.Type, it.ID))
		byWorkflow[wf] = append(byWorkflow[wf], it.ID)
	}
	closed, err := a.cfg.Engine.Closed(ctx, slices.Collect(maps.Keys(byWorkflow)))
	if err != nil {
		return r, err
	}
	var done []string
	var failed []queue.Failure
	for wf, c := range closed {
		switch {
		case c.Completed && !isBatchWorkflow(wf):
			done = append(done, byWorkflow[wf]...)
		case c.Completed:
			// A batch execution settles each of its items before it
			// completes; one it left is executed again (idempotently).
			for _, id := range byWorkflow[wf] {
				failed = append(failed, queue.Failure{ItemID: id, Error: "batch execution " + wf + " completed without settling the item"})
			}
		default:
			for _, id := range byWorkflow[wf] {
				failed = append(failed, queue.Failure{ItemID: id, Error: "execution workflow " + c.Status})
			}
		}
	}
	if len(done) > 0 {
		res, err := a.cfg.Queue.MarkCompletedBatch(ctx, cfg.ItemType, done)
		if err != nil {
			return r, err
		}
		r.Completed = len(res.Moved)
	}
	if len(failed) > 0 {
		res, err := a.cfg.Queue.MarkFailedBatch(ctx, cfg.ItemType, failed, cfg.MaxDispatchRetries)
		if err != nil {
			return r, err
		}
		r.Failed, r.DeadLettered = splitRetried(res)
	}
	return r, nil
}

// recordPatience is how long a batch's outcome is retried once its
// workflows are started: a database restart takes seconds, while an
// unrecorded claim waits for the stale-claim recovery (minutes), holding
// in-flight capacity meanwhile.
const recordPatience = 20 * time.Second

// recordPatiently runs record (a guarded, idempotent transition of the
// batch) until it succeeds or recordPatience has passed, heartbeating.
func recordPatiently(ctx context.Context, record func() error) error {
	wait := 200 * time.Millisecond
	deadline := time.Now().Add(recordPatience)
	for {
		err := record()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, "recording the batch")
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// ClaimAndDispatch claims one batch and starts its execution workflows.
// Claim and starts share one activity so the batch's contexts never pass
// through the dispatcher's workflow history. If it dies between the claim
// and the marks, the items stay CLAIMED and stale recovery settles them.
func (a *Activities) ClaimAndDispatch(ctx context.Context, cfg queue.Settings) (Dispatch, error) {
	fed := a.feed(ctx, cfg)
	batch, err := a.cfg.Queue.ClaimBatch(ctx, cfg.ClaimParams())
	if err != nil {
		return Dispatch{Fed: fed}, err
	}
	d := Dispatch{BatchID: batch.ID, Claimed: len(batch.Items), AtCapacity: batch.AtCapacity, Fed: fed}
	if len(batch.Items) == 0 {
		return d, nil
	}
	if cfg.Batched() {
		return a.dispatchBatch(ctx, cfg, batch, d)
	}
	type result struct {
		item queue.ClaimedItem
		err  error
	}
	results := make([]result, len(batch.Items))
	fanOut(len(batch.Items), a.cfg.StartConcurrency, func(i int) {
		it := batch.Items[i]
		results[i] = result{item: it, err: a.cfg.Engine.Start(ctx, StartRequest{
			WorkflowID:   ExecWorkflowID(it.Type, it.ID),
			WorkflowType: cfg.ExecWorkflowType,
			TaskQueue:    cfg.ExecTaskQueue,
			// Measured per start, not per batch: a batch's starts take
			// seconds, and a paced slot is a precise time.
			Delay:     a.startDelay(it.ScheduledExecTime, a.cfg.Now(), cfg, it.Paced),
			ItemID:    it.ID,
			Context:   string(it.Context),
			NotBefore: notBefore(it, cfg),
		})}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, i)
		}
	})

	var ok []queue.Dispatch
	var failed []queue.Failure
	for _, r := range results {
		wf := ExecWorkflowID(r.item.Type, r.item.ID)
		switch {
		case r.err == nil:
			d.Started++
			ok = append(ok, queue.Dispatch{ItemID: r.item.ID, ExecWorkflowID: wf})
		case errors.Is(r.err, ErrAlreadyStarted):
			d.AlreadyStarted++
			ok = append(ok, queue.Dispatch{ItemID: r.item.ID, ExecWorkflowID: wf})
		default:
			failed = append(failed, queue.Failure{ItemID: r.item.ID, Error: "start " + wf + ": " + r.err.Error()})
		}
	}
	if len(ok) > 0 {
		if err := recordPatiently(ctx, func() error {
			_, err := a.cfg.Queue.MarkDispatchedBatch(ctx, cfg.ItemType, batch.ID, ok)
			return err
		}); err != nil {
			return d, err
		}
	}
	if len(failed) > 0 {
		var res queue.BatchResult
		err := recordPatiently(ctx, func() (err error) {
			res, err = a.cfg.Queue.ReleaseForRetryBatch(ctx, cfg.ItemType, batch.ID, failed, cfg.MaxDispatchRetries)
			return err
		})
		if err != nil {
			return d, err
		}
		d.StartFailed, d.DeadLettered = splitRetried(res)
		a.cfg.Logger.Warn("execution workflow starts failed", "item_type", cfg.ItemType, "batch", batch.ID,
			"failed", len(failed), "dead_lettered", d.DeadLettered, "first_error", failed[0].Error)
	}
	return d, nil
}

// feed has the item type's feeder, if it has one, enqueue what comes due
// before the claim's reach and FeedAhead beyond, and returns how many it
// enqueued. A feed that fails is logged, not the cycle's failure: the
// items fed before are claimed all the same, and the next cycle feeds.
func (a *Activities) feed(ctx context.Context, cfg queue.Settings) int {
	f := a.cfg.Feeders[cfg.ItemType]
	if f == nil {
		return 0
	}
	n, err := f.Feed(ctx, a.cfg.Now().Add(cfg.PreStartBuffer+FeedAhead(cfg)))
	if err != nil {
		a.cfg.Logger.Warn("feeding the queue failed", "item_type", cfg.ItemType, "error", err)
		return 0
	}
	return n
}

// dispatchBatch starts one batch execution for the claimed batch (BATCH
// mode): its id comes from the batch, so a cycle run again finds it
// started. Started and AlreadyStarted count that one workflow.
func (a *Activities) dispatchBatch(ctx context.Context, cfg queue.Settings, batch queue.Batch, d Dispatch) (Dispatch, error) {
	items := make([]BatchItem, len(batch.Items))
	now := a.cfg.Now()
	for i, it := range batch.Items {
		at := it.ScheduledExecTime
		if !it.Paced && cfg.JitterWindow > 0 {
			// The jitter spreads unpaced items due together, as their
			// own workflows' delayed starts do in PER_ITEM mode.
			at = later(at, now).Add(a.cfg.Jitter(cfg.JitterWindow))
		}
		items[i] = BatchItem{ID: it.ID, Context: string(it.Context), At: at, Paced: it.Paced}
	}
	slices.SortStableFunc(items, func(x, y BatchItem) int { return x.At.Compare(y.At) })
	wf := BatchWorkflowID(cfg.ItemType, batch.ID)
	err := a.cfg.Engine.Start(ctx, StartRequest{
		WorkflowID: wf, WorkflowType: BatchWorkflowName, TaskQueue: cfg.ExecTaskQueue,
		Input: BatchInput{
			ItemType: cfg.ItemType, BatchID: batch.ID, Items: items,
			ItemWorkflowType: cfg.ExecWorkflowType, TaskQueue: cfg.ExecTaskQueue,
			Lead: max(pacedLead(cfg), time.Second), MaxRetries: cfg.MaxDispatchRetries,
		},
	})
	switch {
	case err == nil:
		d.Started = 1
	case errors.Is(err, ErrAlreadyStarted):
		d.AlreadyStarted = 1
	default:
		failed := make([]queue.Failure, len(items))
		for i, it := range items {
			failed[i] = queue.Failure{ItemID: it.ID, Error: "start " + wf + ": " + err.Error()}
		}
		var res queue.BatchResult
		if err := recordPatiently(ctx, func() (err error) {
			res, err = a.cfg.Queue.ReleaseForRetryBatch(ctx, cfg.ItemType, batch.ID, failed, cfg.MaxDispatchRetries)
			return err
		}); err != nil {
			return d, err
		}
		d.StartFailed, d.DeadLettered = splitRetried(res)
		a.cfg.Logger.Warn("batch execution start failed", "item_type", cfg.ItemType, "batch", batch.ID, "items", len(items), "error", err)
		return d, nil
	}
	ok := make([]queue.Dispatch, len(items))
	for i, it := range items {
		ok[i] = queue.Dispatch{ItemID: it.ID, ExecWorkflowID: wf}
	}
	return d, recordPatiently(ctx, func() error {
		_, err := a.cfg.Queue.MarkDispatchedBatch(ctx, cfg.ItemType, batch.ID, ok)
		return err
	})
}

// splitRetried counts the items a failure transition sent back to READY
// and those it dead-lettered.
func splitRetried(res queue.BatchResult) (retried, dead int) {
	for _, o := range res.Moved {
		if o.Status == queue.StatusDeadLetter {
			dead++
		} else {
			retried++
		}
	}
	return retried, dead
}

// startDelay never starts an unpaced item before its scheduled time (a
// claim may run up to the pre-start buffer early), then adds the jitter
// that spreads a batch's starts over the window. A paced item's slot is
// already its place in the spread: no jitter, and it starts the paced lead
// ahead of the slot (at most the pre-start buffer) to wait out the rest in
// the worker, where the clock is exact (see NotBefore).
func (a *Activities) startDelay(scheduled, now time.Time, cfg queue.Settings, paced bool) time.Duration {
	if paced {
		return max(scheduled.Sub(now)-pacedLead(cfg), 0)
	}
	d := max(scheduled.Sub(now), 0)
	if cfg.JitterWindow > 0 {
		d += a.cfg.Jitter(cfg.JitterWindow)
	}
	return d
}

// pacedLead is the configured lead, within the pre-start buffer.
func pacedLead(cfg queue.Settings) time.Duration {
	return max(min(cfg.PacedLead, cfg.PreStartBuffer), 0)
}

// notBefore is the slot a paced item started ahead of it must wait for.
func notBefore(it queue.ClaimedItem, cfg queue.Settings) time.Time {
	if !it.Paced || pacedLead(cfg) == 0 {
		return time.Time{}
	}
	return it.ScheduledExecTime
}

// RecordResults writes the cycle's summary to the audit log and counts it
// in the metrics.
func (a *Activities) RecordResults(ctx context.Context, c CycleResult) error {
	var took time.Duration
	if !c.StartedAt.IsZero() {
		took = a.cfg.Now().Sub(c.StartedAt)
	}
	a.cfg.Metrics.recordCycle(c, took)
	batch := c.Dispatch.BatchID
	if batch == "" {
		batch = "CYCLE"
	}
	return a.cfg.Queue.WriteAudit(ctx, []queue.AuditEntry{{
		BatchID: batch, ItemType: c.ItemType, Action: "BATCH_COMPLETE",
		Detail: fmt.Sprintf("claimed=%d started=%d already_started=%d start_failed=%d dead_lettered=%d stale_released=%d stale_dispatched=%d completed=%d exec_failed=%d",
			c.Dispatch.Claimed, c.Dispatch.Started, c.Dispatch.AlreadyStarted, c.Dispatch.StartFailed,
			c.Dispatch.DeadLettered+c.Recovery.DeadLettered+c.Reconciliation.DeadLettered,
			c.Recovery.Released, c.Recovery.Dispatched, c.Reconciliation.Completed, c.Reconciliation.Failed),
	}})
}
