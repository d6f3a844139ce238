package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/queue/internal/dbsqlc"
)

// Deferral hands an item whose execution must not go now back to the
// queue: READY at At (a slot on a later day), or PARKED when At is zero
// (held until its domain resumes it).
type Deferral struct {
	ItemID string
	At     time.Time
}

// Defer moves items being executed (DISPATCHED, or CLAIMED under
// batchID) back: each READY at its At, paced, or PARKED; their retries
// are kept, since nothing failed. One guarded statement with its audit
// (DEFERRED, PARKED); items elsewhere are left as they are, and the
// result lists them as rejected.
func (q *Queue) Defer(ctx context.Context, itemType, batchID string, ds []Deferral) (BatchResult, error) {
	if err := checkBatch(itemType, len(ds)); err != nil {
		return BatchResult{}, err
	}
	ids, ats := make([]string, len(ds)), make([]time.Time, len(ds))
	for i, d := range ds {
		ids[i], ats[i] = d.ItemID, time.Unix(0, 0).UTC() // the epoch: park
		if !d.At.IsZero() {
			ats[i] = d.At
		}
	}
	rows, err := q.q.DeferItems(ctx, dbsqlc.DeferItemsParams{ItemType: itemType, ItemIds: ids, Ats: ats, BatchID: batchID})
	if err != nil {
		return BatchResult{}, fmt.Errorf("queue: defer %d %s: %w", len(ds), itemType, err)
	}
	moved := make([]Outcome, len(rows))
	for i, r := range rows {
		moved[i] = Outcome{ItemID: r.ItemID, Status: Status(r.QueueStatus)}
	}
	return q.withRejections(ctx, itemType, ids, moved)
}

// Resume is an item its domain lets go again: READY at At, paced (a new
// slot). A PARKED item is moved; an item not in the queue (held before it
// was ever enqueued) is enqueued; any other is left alone.
type Resume struct {
	ItemID, TenantID string
	At               time.Time
}

// ResumeTx resumes items in the caller's transaction, so that they move
// with the domain change that lets them go, and returns the ids it moved
// or enqueued. Audited RESUMED (or ENQUEUED).
func (q *Queue) ResumeTx(ctx context.Context, tx pgx.Tx, itemType string, rs []Resume) ([]string, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	ids, tenants, ats := make([]string, len(rs)), make([]string, len(rs)), make([]time.Time, len(rs))
	for i, r := range rs {
		ids[i], tenants[i], ats[i] = r.ItemID, r.TenantID, r.At
	}
	out, err := q.q.WithTx(tx).ResumeItems(ctx, dbsqlc.ResumeItemsParams{ItemType: itemType, ItemIds: ids, TenantIds: tenants, Ats: ats})
	if err != nil {
		return nil, fmt.Errorf("queue: resume %d %s: %w", len(rs), itemType, err)
	}
	return out, nil
}

// CompleteParkedTx ends PARKED items (their domain cancelled them) in
// the caller's transaction: COMPLETED, audited. Others are left alone.
func (q *Queue) CompleteParkedTx(ctx context.Context, tx pgx.Tx, itemType string, itemIDs []string) ([]string, error) {
	if len(itemIDs) == 0 {
		return nil, nil
	}
	out, err := q.q.WithTx(tx).CompleteParked(ctx, dbsqlc.CompleteParkedParams{ItemType: itemType, ItemIds: itemIDs})
	if err != nil {
		return nil, fmt.Errorf("queue: complete %d parked %s: %w", len(itemIDs), itemType, err)
	}
	return out, nil
}

// LockReadyTx locks those of the items that are READY to the caller's
// commit and returns them: the dispatcher's claim walks past them, so a
// lever moves what has not been claimed, and nothing it moves is claimed
// meanwhile.
func (q *Queue) LockReadyTx(ctx context.Context, tx pgx.Tx, itemType string, itemIDs []string) ([]string, error) {
	if len(itemIDs) == 0 {
		return nil, nil
	}
	out, err := q.q.WithTx(tx).LockReady(ctx, dbsqlc.LockReadyParams{ItemType: itemType, ItemIds: itemIDs})
	if err != nil {
		return nil, fmt.Errorf("queue: lock %d ready %s: %w", len(itemIDs), itemType, err)
	}
	return out, nil
}

// LockMovableTx is LockReadyTx for a domain that enqueues some of its
// items late: it also returns, of the items not locked, those that are
// not in the queue at all (absent), which no execution holds. The caller
// must keep items from being enqueued meanwhile (the domain's own lock):
// an item absent here may be enqueued after the read.
func (q *Queue) LockMovableTx(ctx context.Context, tx pgx.Tx, itemType string, itemIDs []string) (ready, absent []string, err error) {
	if ready, err = q.LockReadyTx(ctx, tx, itemType, itemIDs); err != nil || len(ready) == len(itemIDs) {
		return ready, nil, err
	}
	rest := make([]string, 0, len(itemIDs)-len(ready))
	locked := make(map[string]bool, len(ready))
	for _, id := range ready {
		locked[id] = true
	}
	for _, id := range itemIDs {
		if !locked[id] {
			rest = append(rest, id)
		}
	}
	present, err := q.q.WithTx(tx).PresentAmong(ctx, dbsqlc.PresentAmongParams{ItemType: itemType, ItemIds: rest})
	if err != nil {
		return nil, nil, fmt.Errorf("queue: find %d %s: %w", len(rest), itemType, err)
	}
	there := make(map[string]bool, len(present))
	for _, id := range present {
		there[id] = true
	}
	for _, id := range rest {
		if !there[id] {
			absent = append(absent, id)
		}
	}
	return ready, absent, nil
}

// EnqueueAbsentTx enqueues, READY at their times, those of the items
// that are not in the queue, in any status, in the caller's transaction,
// and returns their ids; the others are left as they are. Audited
// ENQUEUED. What a domain that enqueues its far-off items late calls as
// they come near (it has no contexts: the items' domain keeps them).
func (q *Queue) EnqueueAbsentTx(ctx context.Context, tx pgx.Tx, itemType string, ps []EnqueueParams) ([]string, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	arg := dbsqlc.EnqueueAbsentParams{ItemType: itemType, ItemIds: make([]string, len(ps)), TenantIds: make([]string, len(ps)),
		Ats: make([]time.Time, len(ps)), Paced: make([]bool, len(ps))}
	for i, p := range ps {
		p.ItemType = itemType
		if err := p.validate(); err != nil {
			return nil, err
		}
		arg.ItemIds[i], arg.TenantIds[i], arg.Ats[i], arg.Paced[i] = p.ItemID, p.TenantID, p.ScheduledExecTime, p.Paced
	}
	out, err := q.q.WithTx(tx).EnqueueAbsent(ctx, arg)
	if err != nil {
		return nil, fmt.Errorf("queue: enqueue %d absent %s: %w", len(ps), itemType, err)
	}
	return out, nil
}

// LockStatesTx locks those of the items that are in the queue to the
// caller's commit and returns their statuses (an item not there is
// absent): what a lever needs to tell the items it may move (PARKED,
// READY, absent) from those an execution holds.
func (q *Queue) LockStatesTx(ctx context.Context, tx pgx.Tx, itemType string, itemIDs []string) (map[string]Status, error) {
	out := make(map[string]Status, len(itemIDs))
	if len(itemIDs) == 0 {
		return out, nil
	}
	rows, err := q.q.WithTx(tx).LockStates(ctx, dbsqlc.LockStatesParams{ItemType: itemType, ItemIds: itemIDs})
	if err != nil {
		return nil, fmt.Errorf("queue: lock %d %s: %w", len(itemIDs), itemType, err)
	}
	for _, r := range rows {
		out[r.ItemID] = Status(r.QueueStatus)
	}
	return out, nil
}

// MoveReadyTx moves READY items to new times (a lever moved their
// slots: paced), or PARKED where the time is zero, in the caller's
// transaction; audited MOVED or PARKED. Others are left alone.
func (q *Queue) MoveReadyTx(ctx context.Context, tx pgx.Tx, itemType string, ds []Deferral) ([]string, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	ids, ats := make([]string, len(ds)), make([]time.Time, len(ds))
	for i, d := range ds {
		ids[i], ats[i] = d.ItemID, time.Unix(0, 0).UTC()
		if !d.At.IsZero() {
			ats[i] = d.At
		}
	}
	out, err := q.q.WithTx(tx).MoveReady(ctx, dbsqlc.MoveReadyParams{ItemType: itemType, ItemIds: ids, Ats: ats})
	if err != nil {
		return nil, fmt.Errorf("queue: move %d ready %s: %w", len(ds), itemType, err)
	}
	return out, nil
}

// CompleteReadyTx ends READY items their domain ended without an
// execution, in the caller's transaction; audited.
func (q *Queue) CompleteReadyTx(ctx context.Context, tx pgx.Tx, itemType string, itemIDs []string) ([]string, error) {
	if len(itemIDs) == 0 {
		return nil, nil
	}
	out, err := q.q.WithTx(tx).CompleteReady(ctx, dbsqlc.CompleteReadyParams{ItemType: itemType, ItemIds: itemIDs})
	if err != nil {
		return nil, fmt.Errorf("queue: complete %d ready %s: %w", len(itemIDs), itemType, err)
	}
	return out, nil
}
