package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/queue/internal/dbsqlc"
)

// DeadFilter selects dead letters; zero fields select all.
type DeadFilter struct {
	ItemType string
	TenantID string
	// Reason matches a part of the item's last error, in any case.
	Reason string
	// DiedFrom and DiedTo bound when the item was dead-lettered:
	// [DiedFrom, DiedTo).
	DiedFrom, DiedTo time.Time
}

// DeadPosition is where a page of dead letters ended: the next page
// starts after it.
type DeadPosition struct {
	DiedAt           time.Time
	ItemType, ItemID string
}

// DeadItem is a dead-lettered item.
type DeadItem struct {
	ItemType, ItemID, TenantID string
	DiedAt                     time.Time
	ScheduledExecTime          time.Time
	RetryCount                 int
	LastError                  string
}

// Position is the item's place in the dead letters' order.
func (d DeadItem) Position() DeadPosition {
	return DeadPosition{DiedAt: d.DiedAt, ItemType: d.ItemType, ItemID: d.ItemID}
}

// farFuture stands in for an open upper time bound.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// epoch stands in for an open lower time bound.
var epoch = time.Unix(0, 0).UTC()

// DeadLetters lists up to limit dead letters after the position (nil:
// from the first), oldest death first.
func (q *Queue) DeadLetters(ctx context.Context, f DeadFilter, after *DeadPosition, limit int) ([]DeadItem, error) {
	p := dbsqlc.ListDeadParams{
		AfterAt: epoch, DiedFrom: f.DiedFrom, DiedTo: f.DiedTo, ItemType: f.ItemType, TenantID: f.TenantID,
		Reason: f.Reason, MaxRows: int32(limit),
	}
	if p.DiedFrom.IsZero() {
		p.DiedFrom = epoch
	}
	if p.DiedTo.IsZero() {
		p.DiedTo = farFuture
	}
	if after != nil {
		p.AfterAt, p.AfterType, p.AfterID = after.DiedAt, after.ItemType, after.ItemID
	}
	rows, err := q.q.ListDead(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("queue: dead letters: %w", err)
	}
	out := make([]DeadItem, len(rows))
	for i, r := range rows {
		out[i] = DeadItem{
			ItemType: r.ItemType, ItemID: r.ItemID, TenantID: r.TenantID, DiedAt: r.DiedAt,
			ScheduledExecTime: r.ScheduledExecTime, RetryCount: int(r.RetryCount), LastError: r.LastError,
		}
	}
	return out, nil
}

// Requeue asks for a dead item to be READY again at At.
type Requeue struct {
	ItemID string
	At     time.Time
}

// RequeueDead moves dead items of one type back to READY, by an
// operator's decision: each at its At (a slot from a rate-limit config:
// the item is paced, started the type's paced lead ahead of it, never
// jittered), with its retries anew, in one statement that writes a
// REQUEUE audit row each (detail: why). db may be a transaction. It
// returns the ids it moved: an item no longer dead is left alone.
func RequeueDead(ctx context.Context, db dbsqlc.DBTX, itemType string, reqs []Requeue, detail string) ([]string, error) {
	ids, ats := make([]string, len(reqs)), make([]time.Time, len(reqs))
	for i, r := range reqs {
		ids[i], ats[i] = r.ItemID, r.At
	}
	rows, err := dbsqlc.New(db).RequeueDead(ctx, dbsqlc.RequeueDeadParams{ItemType: itemType, ItemIds: ids, Ats: ats, Detail: detail})
	if err != nil {
		return nil, fmt.Errorf("queue: requeue %d dead %s items: %w", len(reqs), itemType, err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ItemID
	}
	return out, nil
}
