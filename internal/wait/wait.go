// Package wait pauses a loop that must stop when its context is done: a
// retry's backoff, a poll's interval, a simulated latency.
package wait

import (
	"context"
	"time"
)

// For waits d, or until ctx is done; false when ctx is done first.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
