package pacing

import (
	"context"
	"time"
)

// Concurrent single assignments for the same config and instant are
// coalesced into one pacing_assign call, the way a database groups
// commits: a request that finds no call in flight for its instant goes at
// once; requests arriving meanwhile wait and go together in the next call.
// Sixty-four clients asking for 16:00 then cost a few calls, not sixty-four
// calls each walking past the windows the others hold.

type coalesceKey struct {
	config string
	at     int64 // requested time, Unix ms
}

type pendingAssign struct {
	eventID string
	done    chan assignResult
}

type assignResult struct {
	slot Slot
	err  error
}

type coalesceQueue struct {
	pending  []pendingAssign
	inFlight int
}

// maxCallsPerInstant is how many calls for one instant run at once: two
// keep both cores of a small machine busy without a convoy on the windows.
const maxCallsPerInstant = 2

// assignCoalesced is Assign's path to the database.
func (l *Limiter) assignCoalesced(ctx context.Context, cfg Config, eventID string, requested time.Time) (Slot, error) {
	key := coalesceKey{config: cfg.Name, at: requested.UnixMilli()}
	p := pendingAssign{eventID: eventID, done: make(chan assignResult, 1)}
	l.mu.Lock()
	q := l.queues[key]
	if q == nil {
		q = &coalesceQueue{}
		l.queues[key] = q
	}
	q.pending = append(q.pending, p)
	lead := q.inFlight < maxCallsPerInstant
	if lead {
		q.inFlight++
	}
	l.mu.Unlock()
	if lead {
		go l.runCoalesced(cfg, key, requested)
	}
	select {
	case r := <-p.done:
		return r.slot, r.err
	case <-ctx.Done():
		return Slot{}, ctx.Err() // the call may still assign the slot; a retry gets it back
	}
}

// runCoalesced sends the instant's waiting requests in calls of up to
// BulkChunk until none are left.
func (l *Limiter) runCoalesced(cfg Config, key coalesceKey, requested time.Time) {
	for {
		l.mu.Lock()
		q := l.queues[key]
		if len(q.pending) == 0 {
			q.inFlight--
			if q.inFlight == 0 {
				delete(l.queues, key)
			}
			l.mu.Unlock()
			return
		}
		n := min(len(q.pending), max(l.opts.BulkChunk, 1))
		batch := q.pending[:n:n]
		q.pending = q.pending[n:]
		l.mu.Unlock()

		ids := make([]string, len(batch))
		for i, p := range batch {
			ids[i] = p.eventID
		}
		// Not the caller's context: the call serves many callers.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		slots, err := l.assign(ctx, cfg, requested, ids)
		cancel()
		bySlot := make(map[string]Slot, len(slots))
		for _, s := range slots {
			if _, seen := bySlot[s.EventID]; !seen { // an id asked twice: its first answer
				bySlot[s.EventID] = s
			}
		}
		for _, p := range batch {
			s, ok := bySlot[p.eventID]
			switch {
			case err != nil:
				p.done <- assignResult{err: err}
			case !ok:
				p.done <- assignResult{err: errNoResult(p.eventID)}
			default:
				p.done <- assignResult{slot: s}
			}
		}
	}
}
