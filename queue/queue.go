package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/internal/pgerr"
	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/queue/internal/dbsqlc"
)

// MaxBatchSize bounds one claim or one batch transition.
const MaxBatchSize = 10000

// DB is what the queue needs from a pool: statements and transactions.
// *pgxpool.Pool satisfies it.
type DB interface {
	dbsqlc.DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// Queue runs the queue's operations on a database.
type Queue struct {
	db DB
	q  *dbsqlc.Queries
}

// New returns a Queue on db.
func New(db DB) *Queue {
	return &Queue{db: db, q: dbsqlc.New(customPlans{db})}
}

// customPlans runs statements as unnamed prepared statements (pgx's
// QueryExecModeCacheDescribe), which PostgreSQL plans for the values at
// hand on every execution. The queue's transitions and reads pick rows by
// status, batch and time, whose counts swing between cycles: a cached
// generic plan, made while few rows were CLAIMED, can walk every claimed
// row's index entry instead of the batch's (measured: 3× slower dispatch
// at 300k items). The enqueue, inside a caller's transaction, inserts by
// key and keeps the connection's cached plans.
type customPlans struct{ dbsqlc.DBTX }

func (c customPlans) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return c.DBTX.Exec(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

func (c customPlans) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return c.DBTX.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

func (c customPlans) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return c.DBTX.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

// SaveContextAndEnqueue saves the item's context and then its READY queue
// row, in one transaction: a failure leaves neither.
//
// It is idempotent: replaying the same item (same context, schedule and
// tenant) changes nothing and reports Enqueued=false with the item's current
// status, even after the item completed. The same id with different content
// is ErrConflict, and changes nothing.
func (q *Queue) SaveContextAndEnqueue(ctx context.Context, p EnqueueParams) (EnqueueResult, error) {
	var res EnqueueResult
	err := pgx.BeginFunc(ctx, q.db, func(tx pgx.Tx) error {
		var err error
		res, err = q.SaveContextAndEnqueueTx(ctx, tx, p)
		return err
	})
	return res, err
}

// SaveContextAndEnqueueTx is SaveContextAndEnqueue inside the caller's
// transaction, so the enqueue commits or rolls back with the caller's own
// writes. On ErrConflict the caller must roll back.
func (q *Queue) SaveContextAndEnqueueTx(ctx context.Context, tx pgx.Tx, p EnqueueParams) (EnqueueResult, error) {
	if err := p.validate(); err != nil {
		return EnqueueResult{}, err
	}
	if p.ContextVersion == 0 {
		p.ContextVersion = 1
	}
	qtx := q.q.WithTx(tx)
	// Insert first, the common case; a duplicate falls through to the
	// comparison. ON CONFLICT DO NOTHING is PostgreSQL's form of
	// insert-then-catch-unique-violation: catching 23505 would abort the
	// transaction, and the queue insert must share it.
	//
	// The whole decision runs in a subtransaction so that a replay leaves
	// the caller's transaction exactly as it found it.
	var res EnqueueResult
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		stx := qtx.WithTx(sp)
		ctxRows := int64(1) // an item without a context has all it needs
		if len(p.Context) > 0 {
			var err error
			if ctxRows, err = stx.InsertContext(ctx, dbsqlc.InsertContextParams{
				ItemType: p.ItemType, ItemID: p.ItemID, Context: p.Context, ContextVersion: int32(p.ContextVersion),
			}); err != nil {
				return fmt.Errorf("queue: save context %s/%s: %w", p.ItemType, p.ItemID, err)
			}
		}
		qRows, err := stx.InsertQueueItem(ctx, dbsqlc.InsertQueueItemParams{
			ItemType: p.ItemType, ItemID: p.ItemID, TenantID: p.TenantID,
			ScheduledExecTime: p.ScheduledExecTime, InitWorkflowID: ptr.Optional(p.InitWorkflowID), Paced: p.Paced,
		})
		if err != nil {
			return fmt.Errorf("queue: enqueue %s/%s: %w", p.ItemType, p.ItemID, err)
		}
		if ctxRows == 1 && qRows == 1 {
			if err := stx.InsertEnqueueAudit(ctx, dbsqlc.InsertEnqueueAuditParams{ItemType: p.ItemType, ItemID: p.ItemID}); err != nil {
				return fmt.Errorf("queue: audit enqueue %s/%s: %w", p.ItemType, p.ItemID, err)
			}
			res = EnqueueResult{Enqueued: true, Status: StatusReady}
			return nil
		}
		res, err = q.compareReplay(ctx, stx, p, ctxRows == 1 && len(p.Context) > 0)
		if err != nil {
			return err
		}
		// Whatever this call inserted beside an existing item is undone: a
		// completed item's context is not re-created, nor is anything kept
		// from a conflicting call.
		return errReplay
	})
	if errors.Is(err, errReplay) {
		return res, nil
	}
	return res, err
}

// EnqueueBatchTx is SaveContextAndEnqueueTx for many items of one type:
// the contexts and queue rows of a batch of new items in one statement
// rather than three round trips each, and its audit in one row for each
// init workflow's items (one per item when each has its own workflow).
// If any item exists already (a replay, or a conflict), the batch's
// statements are undone and each item goes through
// SaveContextAndEnqueueTx, with its replay and conflict rules (and an
// audit row each); so the items end the same either way. Results are in
// the order of ps. On ErrConflict the caller must roll back.
func (q *Queue) EnqueueBatchTx(ctx context.Context, tx pgx.Tx, ps []EnqueueParams) ([]EnqueueResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	type row struct {
		ItemID            string          `json:"item_id"`
		TenantID          string          `json:"tenant_id"`
		ScheduledExecTime time.Time       `json:"scheduled_exec_time"`
		InitWorkflowID    string          `json:"init_workflow_id"`
		Paced             bool            `json:"paced"`
		Context           json.RawMessage `json:"context,omitempty"`
		ContextVersion    int             `json:"context_version"`
	}
	rows := make([]row, len(ps))
	ids, inits := make([]string, len(ps)), make([]string, len(ps))
	withContext := 0
	for i, p := range ps {
		if err := p.validate(); err != nil {
			return nil, err
		}
		if p.ItemType != ps[0].ItemType {
			return q.enqueueEach(ctx, tx, ps)
		}
		if p.ContextVersion == 0 {
			p.ContextVersion = 1
		}
		rows[i] = row{ItemID: p.ItemID, TenantID: p.TenantID, ScheduledExecTime: p.ScheduledExecTime, InitWorkflowID: p.InitWorkflowID,
			Paced: p.Paced, Context: p.Context, ContextVersion: p.ContextVersion}
		ids[i], inits[i] = p.ItemID, p.InitWorkflowID
		if len(p.Context) > 0 {
			withContext++
		}
	}
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		stx := q.q.WithTx(sp)
		if withContext == 0 && len(ps) >= copyAtLeast {
			// Items without contexts (a Phase A chunk's) are COPYed: written
			// a page at a time, without ON CONFLICT's probe of each key
			// before its insert. One that exists fails the COPY on its key.
			n, err := sp.CopyFrom(ctx, pgx.Identifier{"exec_queue"}, queueColumns, &queueRows{ps: ps, at: -1})
			if pgerr.Is(err, pgerr.UniqueViolation) {
				return errReplay // some exist: each decides on its own
			}
			if err != nil {
				return fmt.Errorf("queue: enqueue batch of %d %s: %w", len(ps), ps[0].ItemType, err)
			}
			if int(n) != len(ps) {
				return fmt.Errorf("queue: enqueue batch of %d %s: %d copied", len(ps), ps[0].ItemType, n)
			}
		} else {
			raw, err := json.Marshal(rows)
			if err != nil {
				return fmt.Errorf("queue: enqueue batch: %w", err)
			}
			inserted, err := stx.InsertContextsAndItems(ctx, dbsqlc.InsertContextsAndItemsParams{Items: raw, ItemType: ps[0].ItemType})
			if err != nil {
				return fmt.Errorf("queue: enqueue batch of %d %s: %w", len(ps), ps[0].ItemType, err)
			}
			if int(inserted.Items) != len(ps) || int(inserted.Contexts) != withContext {
				return errReplay // some exist: each decides on its own
			}
		}
		if err := stx.InsertEnqueueAudits(ctx, dbsqlc.InsertEnqueueAuditsParams{ItemType: ps[0].ItemType, ItemIds: ids, InitWorkflowIds: inits}); err != nil {
			return fmt.Errorf("queue: audit enqueue batch of %d %s: %w", len(ps), ps[0].ItemType, err)
		}
		return nil
	})
	if errors.Is(err, errReplay) {
		return q.enqueueEach(ctx, tx, ps)
	}
	if err != nil {
		return nil, err
	}
	out := make([]EnqueueResult, len(ps))
	for i := range out {
		out[i] = EnqueueResult{Enqueued: true, Status: StatusReady}
	}
	return out, nil
}

// copyAtLeast is the fewest items EnqueueBatchTx COPYs: below it, the
// COPY's round trips cost more than the probes it saves.
const copyAtLeast = 100

// queueColumns are the columns queueRows gives a COPY into exec_queue;
// the others take their defaults, as InsertQueueItem leaves them.
var queueColumns = []string{"item_type", "item_id", "tenant_id", "scheduled_exec_time", "init_workflow_id", "paced"}

// queueRows are new items as COPY rows (an init workflow id "" is NULL).
type queueRows struct {
	ps  []EnqueueParams
	at  int
	row [6]any
}

func (r *queueRows) Next() bool {
	r.at++
	return r.at < len(r.ps)
}

func (r *queueRows) Values() ([]any, error) {
	// Pointers, not values: a string or a time in an interface is a copy
	// on the heap.
	p := &r.ps[r.at]
	var init any
	if p.InitWorkflowID != "" {
		init = &p.InitWorkflowID
	}
	r.row = [6]any{&p.ItemType, &p.ItemID, &p.TenantID, &p.ScheduledExecTime, init, p.Paced}
	return r.row[:], nil
}

func (r *queueRows) Err() error { return nil }

// enqueueEach enqueues ps one by one.
func (q *Queue) enqueueEach(ctx context.Context, tx pgx.Tx, ps []EnqueueParams) ([]EnqueueResult, error) {
	out := make([]EnqueueResult, len(ps))
	for i, p := range ps {
		res, err := q.SaveContextAndEnqueueTx(ctx, tx, p)
		if err != nil {
			return nil, err
		}
		out[i] = res
	}
	return out, nil
}

// errReplay rolls back the subtransaction of a replay.
var errReplay = errors.New("replay")

// compareReplay decides between an idempotent replay and a conflict.
// insertedContext says the context row is this call's own (the existing
// item's context was already deleted at completion, or never existed).
func (q *Queue) compareReplay(ctx context.Context, stx *dbsqlc.Queries, p EnqueueParams, insertedContext bool) (EnqueueResult, error) {
	row, err := stx.CompareEnqueued(ctx, dbsqlc.CompareEnqueuedParams{
		ItemType: p.ItemType, ItemID: p.ItemID, Context: p.Context, ContextVersion: int32(p.ContextVersion),
	})
	if err != nil {
		return EnqueueResult{}, fmt.Errorf("queue: compare %s/%s: %w", p.ItemType, p.ItemID, err)
	}
	if row.QueueStatus == nil {
		// A context without a queue row: an orphan from an enqueue that
		// never happened. This call's queue insert cannot have failed to
		// insert, so this is unreachable unless rows vanish concurrently.
		return EnqueueResult{}, fmt.Errorf("queue: %s/%s has a context but no queue row: %w", p.ItemType, p.ItemID, ErrConflict)
	}
	sameRow := *row.TenantID == p.TenantID && row.ScheduledExecTime.Equal(p.ScheduledExecTime)
	// A context this call inserted means the item had none: it was sent
	// without one, or it completed (its context is deleted then, so only
	// its row can be compared).
	sameContext := row.ContextEqual && !insertedContext || insertedContext && Status(*row.QueueStatus) == StatusCompleted
	if !sameRow || !sameContext {
		return EnqueueResult{}, fmt.Errorf("queue: enqueue %s/%s: %w", p.ItemType, p.ItemID, ErrConflict)
	}
	return EnqueueResult{Enqueued: false, Status: Status(*row.QueueStatus)}, nil
}

func (p EnqueueParams) validate() error {
	switch {
	case p.ItemType == "":
		return errors.New("queue: enqueue: item type is required")
	case p.ItemID == "":
		return errors.New("queue: enqueue: item id is required")
	case p.ScheduledExecTime.IsZero():
		return errors.New("queue: enqueue: scheduled exec time is required")
	case len(p.Context) > 0 && !json.Valid(p.Context):
		return errors.New("queue: enqueue: context must be valid JSON, or none")
	case p.ContextVersion < 0:
		return errors.New("queue: enqueue: context version must be positive")
	}
	return nil
}

// ClaimBatch claims up to BatchSize due READY items, fairly between tenants
// and each tenant's oldest first, marks them CLAIMED under a new batch id
// and returns them with their contexts: one statement. Rows locked by a
// concurrent claimer are skipped, so concurrent claims are disjoint. An
// empty batch has no items.
func (q *Queue) ClaimBatch(ctx context.Context, p ClaimParams) (Batch, error) {
	switch {
	case p.ItemType == "":
		return Batch{}, errors.New("queue: claim: item type is required")
	case p.BatchSize < 1 || p.BatchSize > MaxBatchSize:
		return Batch{}, fmt.Errorf("queue: claim: batch size %d outside 1..%d", p.BatchSize, MaxBatchSize)
	case p.MaxRetries < 1:
		return Batch{}, fmt.Errorf("queue: claim: max retries %d must be at least 1", p.MaxRetries)
	case p.PreStartBuffer < 0:
		return Batch{}, errors.New("queue: claim: pre-start buffer must not be negative")
	}
	batchID := NewBatchID()
	var inFlight int
	if p.MaxInFlight > 0 {
		n, err := q.q.CountInFlight(ctx, p.ItemType)
		if err != nil {
			return Batch{}, fmt.Errorf("queue: count %s items in flight: %w", p.ItemType, err)
		}
		inFlight = int(n)
		room := p.MaxInFlight - inFlight
		if room <= 0 {
			return Batch{ID: batchID, InFlight: inFlight, AtCapacity: true}, nil
		}
		p.BatchSize = min(p.BatchSize, room)
	}
	rows, err := q.q.ClaimBatch(ctx, dbsqlc.ClaimBatchParams{
		ItemType: p.ItemType, BatchSize: int32(p.BatchSize), PreStartBufferSecs: int32(p.PreStartBuffer / time.Second),
		MaxRetries: int32(p.MaxRetries), BatchID: batchID,
	})
	if err != nil {
		return Batch{}, fmt.Errorf("queue: claim %s batch: %w", p.ItemType, err)
	}
	items := make([]ClaimedItem, len(rows))
	for i, r := range rows {
		items[i] = claimedItem(r)
	}
	return Batch{ID: batchID, Items: items, InFlight: inFlight}, nil
}

func claimedItem(r dbsqlc.ClaimBatchRow) ClaimedItem {
	return ClaimedItem{
		Type: r.ItemType, ID: r.ItemID, TenantID: r.TenantID,
		ScheduledExecTime: r.ScheduledExecTime, InitWorkflowID: ptr.Deref(r.InitWorkflowID),
		RetryCount: int(r.RetryCount), ClaimedAt: ptr.Deref(r.ClaimedAt), CreatedAt: r.CreatedAt,
		Context: r.Context, ContextVersion: int(ptr.Deref(r.ContextVersion)), Paced: r.Paced,
	}
}

// NewBatchID returns a fresh, time-ordered claim batch id.
func NewBatchID() string {
	return "BATCH-" + uuid.Must(uuid.NewV7()).String()
}

// BatchResult is what a batch transition did: the items that moved, and the
// items whose guard did not match (left unchanged).
type BatchResult struct {
	Moved    []Outcome
	Rejected []Rejection
}

// Err is nil when every item moved, else a *TransitionError.
func (r BatchResult) Err(op string, expected Status) error {
	if len(r.Rejected) == 0 {
		return nil
	}
	return &TransitionError{Op: op, Expected: expected, Rejected: r.Rejected}
}

// MarkDispatchedBatch moves items of one batch CLAIMED → DISPATCHED,
// recording each one's execution workflow id, in one statement. An item no
// longer claimed by batchID is left as it is and reported.
func (q *Queue) MarkDispatchedBatch(ctx context.Context, itemType, batchID string, ds []Dispatch) (BatchResult, error) {
	if err := checkBatch(itemType, len(ds)); err != nil {
		return BatchResult{}, err
	}
	ids := make([]string, len(ds))
	wfs := make([]string, len(ds))
	for i, d := range ds {
		ids[i], wfs[i] = d.ItemID, d.ExecWorkflowID
	}
	moved, err := q.q.MarkDispatched(ctx, dbsqlc.MarkDispatchedParams{
		ItemIds: ids, ExecWorkflowIds: wfs, ItemType: itemType, BatchID: batchID,
	})
	if err != nil {
		return BatchResult{}, fmt.Errorf("queue: mark dispatched: %w", err)
	}
	outcomes := make([]Outcome, len(moved))
	for i, id := range moved {
		outcomes[i] = Outcome{ItemID: id, Status: StatusDispatched}
	}
	return q.withRejections(ctx, itemType, ids, outcomes)
}

// ReleaseForRetryBatch moves items of one batch CLAIMED → READY with
// retry_count+1 and their errors recorded, or to DEAD_LETTER when that uses
// up maxRetries.
func (q *Queue) ReleaseForRetryBatch(ctx context.Context, itemType, batchID string, fs []Failure, maxRetries int) (BatchResult, error) {
	return q.releaseBatch(ctx, itemType, batchID, fs, maxRetries, "RETRY")
}

// RecoverStale is ReleaseForRetryBatch for claims whose dispatcher vanished:
// the same transition, audited as a stale recovery.
func (q *Queue) RecoverStale(ctx context.Context, itemType, batchID string, fs []Failure, maxRetries int) (BatchResult, error) {
	return q.releaseBatch(ctx, itemType, batchID, fs, maxRetries, "STALE_RECOVERY")
}

func (q *Queue) releaseBatch(ctx context.Context, itemType, batchID string, fs []Failure, maxRetries int, action string) (BatchResult, error) {
	if err := checkBatch(itemType, len(fs)); err != nil {
		return BatchResult{}, err
	}
	if maxRetries < 1 {
		return BatchResult{}, fmt.Errorf("queue: max retries %d must be at least 1", maxRetries)
	}
	ids, errs := splitFailures(fs)
	rows, err := q.q.ReleaseForRetry(ctx, dbsqlc.ReleaseForRetryParams{
		ItemIds: ids, Errors: errs, MaxRetries: int32(maxRetries), ItemType: itemType, BatchID: batchID, Action: action,
	})
	if err != nil {
		return BatchResult{}, fmt.Errorf("queue: release for retry: %w", err)
	}
	outcomes := make([]Outcome, len(rows))
	for i, r := range rows {
		outcomes[i] = Outcome{ItemID: r.ItemID, Status: Status(r.QueueStatus), RetryCount: int(r.RetryCount)}
	}
	return q.withRejections(ctx, itemType, ids, outcomes)
}

// MarkCompletedBatch moves items DISPATCHED → COMPLETED and deletes their
// contexts, in one statement.
func (q *Queue) MarkCompletedBatch(ctx context.Context, itemType string, itemIDs []string) (BatchResult, error) {
	if err := checkBatch(itemType, len(itemIDs)); err != nil {
		return BatchResult{}, err
	}
	moved, err := q.q.MarkCompleted(ctx, dbsqlc.MarkCompletedParams{ItemIds: itemIDs, ItemType: itemType})
	if err != nil {
		return BatchResult{}, fmt.Errorf("queue: mark completed: %w", err)
	}
	outcomes := make([]Outcome, len(moved))
	for i, id := range moved {
		outcomes[i] = Outcome{ItemID: id, Status: StatusCompleted}
	}
	return q.withRejections(ctx, itemType, itemIDs, outcomes)
}

// MarkFailedBatch records failed executions: DISPATCHED → FAILED → READY
// with retry_count+1, or DEAD_LETTER when that uses up maxRetries (one
// statement; the audit log records both steps).
func (q *Queue) MarkFailedBatch(ctx context.Context, itemType string, fs []Failure, maxRetries int) (BatchResult, error) {
	if err := checkBatch(itemType, len(fs)); err != nil {
		return BatchResult{}, err
	}
	if maxRetries < 1 {
		return BatchResult{}, fmt.Errorf("queue: max retries %d must be at least 1", maxRetries)
	}
	ids, errs := splitFailures(fs)
	rows, err := q.q.MarkFailed(ctx, dbsqlc.MarkFailedParams{
		ItemIds: ids, Errors: errs, MaxRetries: int32(maxRetries), ItemType: itemType,
	})
	if err != nil {
		return BatchResult{}, fmt.Errorf("queue: mark failed: %w", err)
	}
	outcomes := make([]Outcome, len(rows))
	for i, r := range rows {
		outcomes[i] = Outcome{ItemID: r.ItemID, Status: Status(r.QueueStatus), RetryCount: int(r.RetryCount)}
	}
	return q.withRejections(ctx, itemType, ids, outcomes)
}

// withRejections completes a batch result with the items that did not move.
// Only that (rare) case costs a second query.
func (q *Queue) withRejections(ctx context.Context, itemType string, ids []string, moved []Outcome) (BatchResult, error) {
	res := BatchResult{Moved: moved}
	if len(moved) >= len(ids) && len(uniq(ids)) == len(moved) {
		return res, nil
	}
	movedSet := make(map[string]bool, len(moved))
	for _, o := range moved {
		movedSet[o.ItemID] = true
	}
	var missing []string
	for _, id := range uniq(ids) {
		if !movedSet[id] {
			missing = append(missing, id)
		}
	}
	rows, err := q.q.CurrentStatuses(ctx, dbsqlc.CurrentStatusesParams{ItemType: itemType, ItemIds: missing})
	if err != nil {
		return res, fmt.Errorf("queue: read rejected items: %w", err)
	}
	actual := make(map[string]dbsqlc.CurrentStatusesRow, len(rows))
	for _, r := range rows {
		actual[r.ItemID] = r
	}
	for _, id := range missing {
		r := actual[id]
		res.Rejected = append(res.Rejected, Rejection{ItemID: id, Actual: Status(r.QueueStatus), ActualBatchID: ptr.Deref(r.DispatchBatchID)})
	}
	return res, nil
}

func checkBatch(itemType string, n int) error {
	switch {
	case itemType == "":
		return errors.New("queue: item type is required")
	case n == 0:
		return errors.New("queue: no items given")
	case n > MaxBatchSize:
		return fmt.Errorf("queue: %d items exceed the batch limit of %d", n, MaxBatchSize)
	}
	return nil
}

func splitFailures(fs []Failure) (ids, errs []string) {
	ids = make([]string, len(fs))
	errs = make([]string, len(fs))
	for i, f := range fs {
		ids[i], errs[i] = f.ItemID, truncate(f.Error, 2000)
	}
	return ids, errs
}

// FindStaleClaims lists up to limit items CLAIMED longer ago than olderThan,
// oldest claim first: claims whose dispatcher may have died.
func (q *Queue) FindStaleClaims(ctx context.Context, itemType string, olderThan time.Duration, limit int) ([]Item, error) {
	if limit < 1 {
		return nil, nil
	}
	rows, err := q.q.FindStaleClaims(ctx, dbsqlc.FindStaleClaimsParams{
		ItemType: itemType, OlderThanSecs: olderThan.Seconds(), MaxItems: int32(min(limit, MaxBatchSize)),
	})
	if err != nil {
		return nil, fmt.Errorf("queue: find stale claims: %w", err)
	}
	items := make([]Item, len(rows))
	for i, r := range rows {
		items[i] = itemFromRow(r)
	}
	return items, nil
}

// DeadLetterExhausted moves up to limit READY items whose retry count is
// already at or above maxRetries to DEAD_LETTER. The claim skips such
// items, so they are left behind when max_dispatch_retries is lowered
// below their count (or a dispatcher still on the old max releases one);
// without this sweep they would wait forever, neither run nor failed.
func (q *Queue) DeadLetterExhausted(ctx context.Context, itemType string, maxRetries, limit int) ([]Outcome, error) {
	if limit < 1 {
		return nil, nil
	}
	if maxRetries < 1 {
		return nil, fmt.Errorf("queue: max retries %d must be at least 1", maxRetries)
	}
	rows, err := q.q.DeadLetterExhausted(ctx, dbsqlc.DeadLetterExhaustedParams{
		ItemType: itemType, MaxRetries: int32(maxRetries), MaxItems: int32(min(limit, MaxBatchSize)),
	})
	if err != nil {
		return nil, fmt.Errorf("queue: dead-letter exhausted items: %w", err)
	}
	out := make([]Outcome, len(rows))
	for i, r := range rows {
		out[i] = Outcome{ItemID: r.ItemID, Status: Status(r.QueueStatus), RetryCount: int(r.RetryCount)}
	}
	return out, nil
}

// Get returns one item.
func (q *Queue) Get(ctx context.Context, itemType, itemID string) (Item, error) {
	r, err := q.q.GetItem(ctx, dbsqlc.GetItemParams{ItemType: itemType, ItemID: itemID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Item{}, fmt.Errorf("queue: item %s/%s: %w", itemType, itemID, ErrNotFound)
	}
	if err != nil {
		return Item{}, fmt.Errorf("queue: get %s/%s: %w", itemType, itemID, err)
	}
	return itemFromRow(r), nil
}

// Depth counts an item type's items per status and finds the oldest READY one.
func (q *Queue) Depth(ctx context.Context, itemType string) (Depth, error) {
	rows, err := q.q.DepthByStatus(ctx, itemType)
	if err != nil {
		return Depth{}, fmt.Errorf("queue: depth: %w", err)
	}
	d := Depth{ByStatus: make(map[Status]int64, len(Statuses))}
	for _, s := range Statuses {
		d.ByStatus[s] = 0
	}
	for _, r := range rows {
		d.ByStatus[Status(r.QueueStatus)] = r.Items
	}
	oldest, err := q.q.OldestReady(ctx, itemType)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return Depth{}, fmt.Errorf("queue: oldest ready: %w", err)
	default:
		d.OldestReady = &oldest
	}
	return d, nil
}

// WriteAudit appends entries to the audit log in one COPY.
func (q *Queue) WriteAudit(ctx context.Context, entries []AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	rows := make([]dbsqlc.InsertAuditParams, len(entries))
	for i, e := range entries {
		if e.ItemType == "" || e.Action == "" {
			return errors.New("queue: audit entry needs an item type and an action")
		}
		rows[i] = dbsqlc.InsertAuditParams{
			BatchID: ptr.Optional(e.BatchID), ItemType: e.ItemType, ItemID: ptr.Optional(e.ItemID), Action: e.Action,
			StatusBefore: ptr.Optional(string(e.StatusBefore)), StatusAfter: ptr.Optional(string(e.StatusAfter)),
			Detail: ptr.Optional(truncate(e.Detail, 4000)),
		}
	}
	if _, err := q.q.InsertAudit(ctx, rows); err != nil {
		return fmt.Errorf("queue: write audit: %w", err)
	}
	return nil
}

func itemFromRow(r dbsqlc.ExecQueue) Item {
	return Item{
		Type: r.ItemType, ID: r.ItemID, TenantID: r.TenantID, Status: Status(r.QueueStatus),
		ScheduledExecTime: r.ScheduledExecTime, InitWorkflowID: ptr.Deref(r.InitWorkflowID),
		DispatchBatchID: ptr.Deref(r.DispatchBatchID), ExecWorkflowID: ptr.Deref(r.ExecWorkflowID),
		ClaimedAt: r.ClaimedAt, DispatchedAt: r.DispatchedAt, CompletedAt: r.CompletedAt,
		RetryCount: int(r.RetryCount), LastError: ptr.Deref(r.LastError),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Paced: r.Paced,
	}
}

func uniq(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence
// (PostgreSQL rejects invalid UTF-8 in text).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// ListDispatched lists up to limit DISPATCHED items due by dueBy (their
// scheduled execution time at or before it), dispatched longest ago first:
// the ones whose execution may have finished. An item started ahead of its
// time is left out until then: its workflow cannot have run yet, and
// asking the engine about it is work for nothing.
func (q *Queue) ListDispatched(ctx context.Context, itemType string, dueBy time.Time, limit int) ([]Item, error) {
	if limit < 1 {
		return nil, nil
	}
	rows, err := q.q.ListDispatched(ctx, dbsqlc.ListDispatchedParams{ItemType: itemType, DueBy: dueBy, MaxItems: int32(min(limit, MaxBatchSize))})
	if err != nil {
		return nil, fmt.Errorf("queue: list dispatched: %w", err)
	}
	items := make([]Item, len(rows))
	for i, r := range rows {
		items[i] = itemFromRow(r)
	}
	return items, nil
}

// MarkExecutedBatch settles a batch execution's executed items →
// COMPLETED (their contexts deleted), in one statement: DISPATCHED ones,
// and ones still CLAIMED by batchID (executed before the dispatcher
// recorded the start; execWorkflowID is then recorded as their execution).
func (q *Queue) MarkExecutedBatch(ctx context.Context, itemType, batchID, execWorkflowID string, itemIDs []string) (BatchResult, error) {
	if err := checkBatch(itemType, len(itemIDs)); err != nil {
		return BatchResult{}, err
	}
	moved, err := q.q.MarkExecuted(ctx, dbsqlc.MarkExecutedParams{
		ItemType: itemType, ItemIds: itemIDs, BatchID: batchID, ExecWorkflowID: execWorkflowID,
	})
	if err != nil {
		return BatchResult{}, fmt.Errorf("queue: mark executed: %w", err)
	}
	outcomes := make([]Outcome, len(moved))
	for i, id := range moved {
		outcomes[i] = Outcome{ItemID: id, Status: StatusCompleted}
	}
	return q.withRejections(ctx, itemType, itemIDs, outcomes)
}

// HandOver passes an item's execution from workflow from (a batch
// execution) to workflow to, in one guarded statement: a DISPATCHED item
// under from, or one still CLAIMED by batchID, becomes DISPATCHED under to.
// It reports whether the item moved; one settled or handed over already
// is left as it is.
func (q *Queue) HandOver(ctx context.Context, itemType, itemID, batchID, from, to string) (bool, error) {
	n, err := q.q.HandOver(ctx, dbsqlc.HandOverParams{
		ItemType: itemType, ItemID: itemID, BatchID: batchID, FromWorkflowID: from, ToWorkflowID: to,
	})
	if err != nil {
		return false, fmt.Errorf("queue: hand %s %s over to %s: %w", itemType, itemID, to, err)
	}
	return n == 1, nil
}
