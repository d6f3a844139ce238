package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/internal/wait"
	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// reapLoop runs the reaper at start, every ReaperInterval, and earlier
// when the oldest claim in flight reaches ReaperTimeout: a claim whose
// relayer died is requeued ReaperTimeout after it was made, not up to an
// interval later. With nothing in flight it looks again within
// ReaperTimeout, so a claim made just after a look is not missed for a
// whole interval.
func (r *Relayer) reapLoop(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := Reap(ctx, r.cfg.Pool, r.cfg.ReaperTimeout, r.cfg.ReaperBatchSize)
		r.m.reaped(n)
		if err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("outbox reaper failed", "relayer", r.cfg.ID, "err", err)
		}
		if n > 0 {
			r.cfg.Logger.Warn("outbox reaper requeued claims with no outcome, for inquiry", "relayer", r.cfg.ID,
				"claims", n, "timeout", r.cfg.ReaperTimeout)
		}
		next := r.cfg.ReaperInterval
		switch age, err := r.q.OldestInflightAge(ctx); {
		case err == nil && age >= 0:
			until := r.cfg.ReaperTimeout - time.Duration(age*float64(time.Second)) + 10*time.Millisecond
			next = max(min(next, until), 10*time.Millisecond)
		case err == nil:
			// Nothing in flight: a claim made after this look is seen at
			// the next one, which must come before it could time out.
			next = min(next, r.cfg.ReaperTimeout)
		}
		if !wait.For(ctx, next) {
			return
		}
	}
}

// Reap requeues, for inquiry, every claim in flight for longer than
// olderThan (its relayer died or lost the database), batch at a time, and
// returns how many. Each gets a ZOMBIE_REQUEUE attempt; a strict
// participant's in-flight marker goes with the claim. Safe to run
// anywhere, any number of times at once: concurrent reapers take disjoint
// claims, and a claim being settled is skipped.
func Reap(ctx context.Context, db DBTX, olderThan time.Duration, batch int) (int, error) {
	q := dbsqlc.New(db)
	total := 0
	for {
		rows, err := q.ReapZombies(ctx, dbsqlc.ReapZombiesParams{TimeoutSecs: olderThan.Seconds(), BatchSize: int32(batch)})
		total += len(rows)
		if err != nil {
			return total, fmt.Errorf("outbox: reap: %w", err)
		}
		if len(rows) < batch {
			return total, nil
		}
	}
}
