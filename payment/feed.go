package payment

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/queue"
)

// Feeder writes the queue items of payments as their slots come near.
// Phase A writes a payment's queue item only when its slot is before the
// queue's mark (payment_queue_mark): a file due tomorrow is stored with
// its slots and without its items, which cost a sixth of its intake.
// Every dispatch cycle feeds the items of the slots up to its horizon,
// before its claim (dispatch.Config.Feeders), and moves the mark up to
// it. The rule it keeps: every SCHEDULED payment not paused whose slot is
// before the mark has its queue item.
type Feeder struct {
	db    DB
	queue *queue.Queue
}

// NewFeeder returns the feeder of the payments on db into q.
func NewFeeder(db DB, q *queue.Queue) *Feeder { return &Feeder{db: db, queue: q} }

// Feed enqueues the waiting payments whose slots are before dueBy and
// not yet enqueued, and moves the mark up to dueBy, in one transaction;
// it returns how many it enqueued. The first feed on a database (no mark
// yet: every payment was enqueued at Phase A) sets the mark and writes
// nothing. A dueBy below the mark leaves it where it is.
func (f *Feeder) Feed(ctx context.Context, dueBy time.Time) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, f.db, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		if err := q.LockQueueMark(ctx); err != nil {
			return fmt.Errorf("payment: feed: lock the mark: %w", err)
		}
		mark, err := q.QueueMark(ctx)
		if err != nil {
			return fmt.Errorf("payment: feed: read the mark: %w", err)
		}
		if mark != nil && !dueBy.After(*mark) {
			return nil
		}
		if mark != nil {
			rows, err := q.WaitingBetween(ctx, dbsqlc.WaitingBetweenParams{FromTime: *mark, ToTime: dueBy})
			if err != nil {
				return fmt.Errorf("payment: feed: payments due from %s to %s: %w", mark.Format(time.RFC3339), dueBy.Format(time.RFC3339), err)
			}
			items := make([]queue.EnqueueParams, len(rows))
			for i, r := range rows {
				items[i] = queue.EnqueueParams{ItemID: r.PaymentID, TenantID: r.TenantID, ScheduledExecTime: r.Slot, Paced: r.Paced}
			}
			added, err := f.queue.EnqueueAbsentTx(ctx, tx, ItemType, items)
			if err != nil {
				return err
			}
			n = len(added)
		}
		if err := q.SetQueueMark(ctx, dueBy); err != nil {
			return fmt.Errorf("payment: feed: set the mark: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// queueMarkShared holds the feeder off to tx's commit and returns the
// mark it left (nil: none yet, every payment is enqueued at once). Phase
// A's store and a lever moving payments that have no queue items hold
// it: the payments they give slots before the mark get their items in
// the same transaction, and the feeder, after them, sees their slots.
func queueMarkShared(ctx context.Context, q *dbsqlc.Queries) (*time.Time, error) {
	if err := q.LockQueueMarkShared(ctx); err != nil {
		return nil, fmt.Errorf("payment: lock the queue's mark: %w", err)
	}
	mark, err := q.QueueMark(ctx)
	if err != nil {
		return nil, fmt.Errorf("payment: read the queue's mark: %w", err)
	}
	return mark, nil
}

// beforeMark reports whether a slot at t is before the mark (no mark:
// every slot is).
func beforeMark(mark *time.Time, t time.Time) bool { return mark == nil || t.Before(*mark) }
