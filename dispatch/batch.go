package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/queue"
)

// BatchWorkflowName is the batch execution workflow's registered name.
const BatchWorkflowName = "BatchExecution"

// BatchWorkflowID is the deterministic id of the batch execution of a
// claimed batch: a restarted cycle, or a stale claim's recovery, finds the
// one it started rather than start a second.
func BatchWorkflowID(itemType, batchID string) string {
	return "exec-batch-" + strings.ToLower(itemType) + "-" + batchID
}

// isBatchWorkflow tells a batch execution's id from an item's own.
func isBatchWorkflow(id string) bool { return strings.HasPrefix(id, "exec-batch-") }

// BatchInput is a batch execution's argument: the items of one claimed
// batch, in the order of their times.
type BatchInput struct {
	ItemType, BatchID string
	Items             []BatchItem
	// ItemWorkflowType and TaskQueue are the type's own execution
	// workflow, which takes an item over when its execution has to wait
	// or failed (see BatchRunner.RunGroup).
	ItemWorkflowType, TaskQueue string
	// Lead: a group's local activity starts this long before its first
	// item's time, and holds each item in the worker until its time.
	Lead time.Duration
	// MaxRetries is the type's max_dispatch_retries (a hand-over that
	// fails returns the item to the queue with one retry more).
	MaxRetries int
	// GroupsPerRun: the run continues as new after this many groups
	// (0: 1,000, a few thousand events), or sooner past historyBudget
	// events or when the engine suggests it.
	GroupsPerRun int `json:",omitempty"`
}

// BatchItem is one item of a batch execution.
type BatchItem struct {
	ID      string
	Context string    `json:",omitempty"`
	At      time.Time // its scheduled time, or its slot when Paced
	Paced   bool      `json:",omitempty"`
}

// Run names the workflow execution that executes an item, as its
// executor records it: an operator finds it in the engine under this id
// and run.
type Run struct{ WorkflowID, RunID string }

func (r Run) String() string { return r.WorkflowID + "/" + r.RunID }

// Executor executes one item of its type inside a batch execution (in a
// local activity, beside the group's other items). It holds the item until
// it.At on the worker's clock (Hold, or a rate limiter), executes it and
// reports whether the execution is over (done, succeeded or failed for
// good). Not done, or an error, hands the item to its type's own execution
// workflow, which goes on from where this run stopped: an executor must be
// idempotent, as a crashed worker's group runs again.
type Executor func(ctx context.Context, it BatchItem, run Run) (done bool, err error)

// GroupExecutor executes a group's items of its type together (an
// Executor's work for all of them at once, so that their effects can
// share transactions and statements), each still held to its time and
// each with its own outcome, as an Executor reports it: outcomes[i] is
// items[i]'s. An item not done, or failed, is handed to its type's own
// execution workflow, as an Executor's. It must be idempotent, as an
// Executor must.
type GroupExecutor func(ctx context.Context, items []BatchItem, run Run) (outcomes []Outcome)

// Outcome is one item's outcome in a GroupExecutor: as an Executor's
// return values.
type Outcome struct {
	Done bool
	Err  error
}

// ErrTypeDeferred is the application error type of an execution that
// must not go now (Deferred): its item goes back to the queue instead of
// completing or failing.
const ErrTypeDeferred = "DEFERRED"

// Deferred is what an Executor (or an item's own execution workflow)
// returns for an item that must not execute now, e.g. past its rail's
// cut-off: its item goes back to the queue READY at at (its slot on
// another day), or PARKED with a zero at (held, until its domain resumes
// it). Nothing failed, so its retries are kept. An execution workflow
// ends failed with it, so that the item's next execution may run under
// the same workflow id.
func Deferred(at time.Time, reason string) error {
	return temporal.NewNonRetryableApplicationError(reason, ErrTypeDeferred, nil, at.UTC())
}

// deferral says whether err is Deferred's, and when the item goes again
// (zero: parked).
func deferral(err error) (time.Time, bool) {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrTypeDeferred {
		return time.Time{}, false
	}
	var at time.Time
	if ae.HasDetails() {
		if err := ae.Details(&at); err != nil {
			return time.Time{}, true
		}
	}
	return at, true
}

// BatchConfig configures a BatchRunner. Queue, Engine and Executors are
// required.
type BatchConfig struct {
	Queue  *queue.Queue
	Engine Engine
	// Executors by item type.
	Executors map[string]Executor
	// GroupExecutors, by item type, run a group's items together in
	// place of their type's Executor (optional).
	GroupExecutors map[string]GroupExecutor
	// Concurrency bounds the items of a group executing at once
	// (default 128).
	Concurrency int
	Metrics     *Metrics
	Logger      *slog.Logger
}

// BatchRunner runs batch executions: registered on the exec worker with
// RegisterBatch. It knows item ids and each item type's Executor, nothing
// of what an item is.
type BatchRunner struct {
	cfg BatchConfig
}

// NewBatchRunner checks c once and fills in its defaults.
func NewBatchRunner(c BatchConfig) (*BatchRunner, error) {
	if c.Queue == nil || c.Engine == nil || len(c.Executors) == 0 {
		return nil, errors.New("dispatch: a batch runner needs a queue, an engine and an executor")
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 128
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return &BatchRunner{cfg: c}, nil
}

// RegisterBatch puts the batch execution workflow and its local activity on
// an exec worker.
func RegisterBatch(r worker.Registry, b *BatchRunner) {
	r.RegisterWorkflowWithOptions(BatchExecution, workflow.RegisterOptions{Name: BatchWorkflowName})
	r.RegisterActivity(b)
}

// Group is a batch execution's local activity's argument: the items due in
// the next span.
type Group struct {
	ItemType, BatchID           string
	Items                       []BatchItem
	Run                         Run
	ItemWorkflowType, TaskQueue string
	MaxRetries                  int
}

// BatchSummary counts what a batch execution's run, or one of its groups,
// did with its items.
type BatchSummary struct {
	Completed, HandedOver, Failed, DeadLettered int
	// Deferred: items handed back to the queue for later (Deferred).
	Deferred int `json:",omitempty"`
}

func (s *BatchSummary) add(o BatchSummary) {
	s.Deferred += o.Deferred
	s.Completed += o.Completed
	s.HandedOver += o.HandedOver
	s.Failed += o.Failed
	s.DeadLettered += o.DeadLettered
}

// GroupResult is what a group's run did.
type GroupResult struct {
	BatchSummary
	// Finished is the worker's clock when the group ended: the workflow's
	// own clock stands still while local activities run in one task.
	Finished time.Time
}

// GroupSpan is how far past its first item's time a batch execution's
// group reaches: one local activity (one marker in the history) every
// span, while each item is held to its own time inside it. A
// GroupExecutor that lingers this long commits a group once.
const GroupSpan = 250 * time.Millisecond

// maxGroup bounds the items of one group. A backlog catching up makes
// every item due at once, and an executor's rate limiter then lets them
// go at the rate: a group of them runs for maxGroup / rate, and a worker
// lost in it costs no more than that again.
const maxGroup = 100

// groupAllowance is how long past its last item's time a group may run:
// a rate limiter may hold an item into a later window (pacing), and the
// settlement follows.
const groupAllowance = 10 * time.Minute

// historyBudget: a run continues as new past this many events, well
// before the engine's limits (its suggestion also counts).
const historyBudget = 10_000

// BatchExecution executes a claimed batch's items, each at its time: a
// local activity (RunGroup) a group of the items due in the next span,
// back to back, with a timer only to wait for a first item far ahead.
// Each item's outcome is its own: settled in the queue, or handed to its
// type's own workflow. Deterministic: the times come from the input and
// from the groups' recorded results.
func BatchExecution(ctx workflow.Context, in BatchInput) (BatchSummary, error) {
	var r *BatchRunner // names the local activity; the worker's is called
	var sum BatchSummary
	info := workflow.GetInfo(ctx)
	run := Run{WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	clock := workflow.Now(ctx)
	groups := 0
	for len(in.Items) > 0 {
		clock = later(clock, workflow.Now(ctx))
		first := in.Items[0].At
		if wait := first.Sub(clock) - in.Lead; wait > time.Second {
			if err := workflow.Sleep(ctx, wait); err != nil {
				return sum, err
			}
			clock = later(clock, workflow.Now(ctx))
		}
		end := later(clock, first).Add(GroupSpan)
		n := sort.Search(len(in.Items), func(i int) bool { return !in.Items[i].At.Before(end) })
		n = min(max(n, 1), maxGroup)
		g := Group{
			ItemType: in.ItemType, BatchID: in.BatchID, Items: in.Items[:n], Run: run,
			ItemWorkflowType: in.ItemWorkflowType, TaskQueue: in.TaskQueue, MaxRetries: in.MaxRetries,
		}
		budget := max(g.Items[n-1].At.Sub(clock), 0) + groupAllowance
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout:    budget,
			ScheduleToCloseTimeout: budget + 10*time.Minute,
			RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, MaximumInterval: 10 * time.Second, MaximumAttempts: 20},
		})
		var res GroupResult
		if err := workflow.ExecuteLocalActivity(lctx, r.RunGroup, g).Get(ctx, &res); err != nil {
			// The items not settled stay DISPATCHED: the reconcile sees this
			// run failed and queues them again.
			return sum, err
		}
		sum.add(res.BatchSummary)
		clock = later(clock, res.Finished)
		in.Items = in.Items[n:]
		if groups++; len(in.Items) > 0 {
			if i := workflow.GetInfo(ctx); groups >= cmp.Or(in.GroupsPerRun, 1000) ||
				i.GetContinueAsNewSuggested() || i.GetCurrentHistoryLength() > historyBudget {
				return sum, workflow.NewContinueAsNewError(ctx, BatchWorkflowName, in)
			}
		}
	}
	return sum, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// RunGroup executes a group's items side by side, each held to its time by
// its executor, then settles them: the executed ones COMPLETED in one
// statement, the others handed to their type's own execution workflow
// (the item's own retry and dead-letter path; its neighbours never wait
// for it). A group run again after a crash executes its items again: the
// executors are idempotent, and settled items are left as they are.
func (r *BatchRunner) RunGroup(ctx context.Context, g Group) (GroupResult, error) {
	exec, ok := r.cfg.Executors[g.ItemType]
	if !ok {
		return GroupResult{}, temporal.NewNonRetryableApplicationError("no executor for item type "+g.ItemType, "NO_EXECUTOR", nil)
	}
	var out []Outcome
	if ge, ok := r.cfg.GroupExecutors[g.ItemType]; ok {
		out = runGroupExec(ctx, ge, g.Items, g.Run)
	} else {
		out = make([]Outcome, len(g.Items))
		fanOut(len(g.Items), r.cfg.Concurrency, func(i int) {
			done, err := runItem(ctx, exec, g.Items[i], g.Run)
			out[i] = Outcome{done, err}
		})
	}
	if err := ctx.Err(); err != nil {
		return GroupResult{}, err // timed out or the worker stops: the group runs again
	}
	var res GroupResult
	var done []string
	var over []BatchItem
	var deferred []queue.Deferral
	for i, o := range out {
		if o.Done && o.Err == nil {
			done = append(done, g.Items[i].ID)
			continue
		}
		if at, ok := deferral(o.Err); ok {
			deferred = append(deferred, queue.Deferral{ItemID: g.Items[i].ID, At: at})
			continue
		}
		if o.Err != nil {
			r.cfg.Logger.Warn("a batch's item failed: handed to its own execution", "item_type", g.ItemType,
				"item", g.Items[i].ID, "batch_execution", g.Run.WorkflowID, "error", o.Err)
		}
		over = append(over, g.Items[i])
	}
	if len(done) > 0 {
		moved, err := r.cfg.Queue.MarkExecutedBatch(ctx, g.ItemType, g.BatchID, g.Run.WorkflowID, done)
		if err != nil {
			return res, err
		}
		res.Completed = len(moved.Moved)
		if r.cfg.Metrics != nil {
			r.cfg.Metrics.completed.WithLabelValues(g.ItemType).Add(float64(res.Completed))
		}
	}
	if len(deferred) > 0 {
		moved, err := r.cfg.Queue.Defer(ctx, g.ItemType, g.BatchID, deferred)
		if err != nil {
			return res, err
		}
		res.Deferred = len(moved.Moved)
	}
	var failed []queue.Failure
	for _, it := range over {
		ok, err := r.handOver(ctx, g, it)
		switch {
		case err != nil:
			failed = append(failed, queue.Failure{ItemID: it.ID, Error: err.Error()})
		case ok:
			res.HandedOver++
		}
	}
	if len(failed) > 0 {
		moved, err := r.cfg.Queue.MarkFailedBatch(ctx, g.ItemType, failed, g.MaxRetries)
		if err != nil {
			return res, err
		}
		res.Failed, res.DeadLettered = splitRetried(moved)
	}
	res.Finished = time.Now()
	return res, nil
}

// fanOut calls f(0) … f(n-1), at most limit at once, and waits for them.
func fanOut(n, limit int, f func(i int)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}

// runItem runs one executor, a panic included, as the item's own outcome.
func runItem(ctx context.Context, exec Executor, it BatchItem, run Run) (done bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			done, err = false, fmt.Errorf("executor panicked: %v", p)
		}
	}()
	return exec(ctx, it, run)
}

// runGroupExec runs a group executor, a panic included, as every item's
// outcome; an answer of the wrong length fails every item.
func runGroupExec(ctx context.Context, ge GroupExecutor, items []BatchItem, run Run) (out []Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = make([]Outcome, len(items))
			for i := range out {
				out[i].Err = fmt.Errorf("group executor panicked: %v", p)
			}
		}
	}()
	out = ge(ctx, items, run)
	if len(out) != len(items) {
		err := fmt.Errorf("group executor answered %d outcomes for %d items", len(out), len(items))
		out = make([]Outcome, len(items))
		for i := range out {
			out[i].Err = err
		}
	}
	return out
}

// handOver starts the item's own execution workflow (its id is the one
// PER_ITEM mode gives it: a second hand-over finds it started), held to
// the item's time as PER_ITEM holds it, and then moves the queue item to
// it, so the reconcile and the settler follow that workflow. An error (the
// engine refused, the database) leaves the item for the queue's retry.
func (r *BatchRunner) handOver(ctx context.Context, g Group, it BatchItem) (bool, error) {
	wf := ExecWorkflowID(g.ItemType, it.ID)
	start := StartRequest{WorkflowID: wf, WorkflowType: g.ItemWorkflowType, TaskQueue: g.TaskQueue, ItemID: it.ID, Context: it.Context}
	if it.Paced {
		start.NotBefore = it.At // held in the worker, on its clock
	} else {
		start.Delay = max(time.Until(it.At), 0)
	}
	err := r.cfg.Engine.Start(ctx, start)
	if err != nil && !errors.Is(err, ErrAlreadyStarted) {
		return false, fmt.Errorf("hand over to %s: %w", wf, err)
	}
	return r.cfg.Queue.HandOver(ctx, g.ItemType, it.ID, g.BatchID, g.Run.WorkflowID, wf)
}
