package pacing

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/pacing/internal/dbsqlc"
)

// DefaultSlotRetention keeps a past window's slots and counter a day: the
// day's schedule stays there to read (how a payroll was spread), while a
// slot's execution is recorded by its payment and queue item.
const DefaultSlotRetention = 24 * time.Hour

// maxDeleteBatch bounds a retention batch to what a statement should hold.
const maxDeleteBatch = 10_000

// DeleteSlots deletes up to limit slots of windows that began before
// before and have ended, oldest first within each config, and answers
// how many: pacing_slot's retention (package retention calls it). A slot
// of a window not yet over is never touched, whatever before says.
func DeleteSlots(ctx context.Context, db DBTX, before time.Time, limit int) (int64, error) {
	n, err := dbsqlc.New(db).DeleteSlots(ctx, dbsqlc.DeleteSlotsParams{Before: before, MaxRows: int32(min(max(limit, 1), maxDeleteBatch))})
	if err != nil {
		return 0, fmt.Errorf("pacing: delete past slots: %w", err)
	}
	return n, nil
}

// DeleteWindows deletes up to limit windows that began before before and
// have ended, oldest first within each config, and answers how many:
// pacing_window's retention. The current window and those ahead, where
// slots are still handed out, are never touched.
func DeleteWindows(ctx context.Context, db DBTX, before time.Time, limit int) (int64, error) {
	n, err := dbsqlc.New(db).DeleteWindows(ctx, dbsqlc.DeleteWindowsParams{Before: before, MaxRows: int32(min(max(limit, 1), maxDeleteBatch))})
	if err != nil {
		return 0, fmt.Errorf("pacing: delete past windows: %w", err)
	}
	return n, nil
}
