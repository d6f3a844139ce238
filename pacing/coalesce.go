package pacing

import (
	"context"
	"sync"
	"time"
)

// A batcher coalesces concurrent requests under one key into calls, the
// way a database groups commits: a request that finds fewer than maxCalls
// calls in flight for its key starts one at once; requests arriving
// meanwhile wait and go together in the next call, up to chunk a call.
// Sixty-four clients asking for slots at 16:00 then cost a few calls, not
// sixty-four calls each walking past the windows the others hold; a
// group's executions under one config are counted in one statement and
// one commit, not one each.
type batcher[K comparable, Req, Res any] struct {
	maxCalls, chunk int
	// call answers reqs, one result a request in their order. It runs on
	// a context of its own: it serves many callers.
	call func(ctx context.Context, reqs []Req) []Res

	mu     sync.Mutex
	queues map[K]*batchQueue[Req, Res]
}

type batchQueue[Req, Res any] struct {
	pending  []batchRequest[Req, Res]
	inFlight int
}

type batchRequest[Req, Res any] struct {
	req  Req
	done chan Res
}

// do sends req with whatever else is waiting under key and returns its
// result. A caller that gives up (ctx) leaves its request to the call,
// which may still carry it out: callers retry idempotently, or count
// on the safe side.
func (b *batcher[K, Req, Res]) do(ctx context.Context, key K, req Req) (Res, error) {
	p := batchRequest[Req, Res]{req: req, done: make(chan Res, 1)}
	b.mu.Lock()
	if b.queues == nil {
		b.queues = map[K]*batchQueue[Req, Res]{}
	}
	q := b.queues[key]
	if q == nil {
		q = &batchQueue[Req, Res]{}
		b.queues[key] = q
	}
	q.pending = append(q.pending, p)
	lead := q.inFlight < b.maxCalls
	if lead {
		q.inFlight++
	}
	b.mu.Unlock()
	if lead {
		go b.run(key)
	}
	select {
	case r := <-p.done:
		return r, nil
	case <-ctx.Done():
		var zero Res
		return zero, ctx.Err()
	}
}

// run sends key's waiting requests in calls of up to chunk until none are
// left.
func (b *batcher[K, Req, Res]) run(key K) {
	for {
		b.mu.Lock()
		q := b.queues[key]
		if len(q.pending) == 0 {
			q.inFlight--
			if q.inFlight == 0 {
				delete(b.queues, key)
			}
			b.mu.Unlock()
			return
		}
		n := min(len(q.pending), max(b.chunk, 1))
		batch := q.pending[:n:n]
		q.pending = q.pending[n:]
		b.mu.Unlock()

		reqs := make([]Req, n)
		for i, p := range batch {
			reqs[i] = p.req
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res := b.call(ctx, reqs)
		cancel()
		for i, p := range batch {
			p.done <- res[i]
		}
	}
}

// Single assignments for the same config and instant go together.

type coalesceKey struct {
	config   string
	at       int64 // requested time, Unix ms
	deadline int64 // Unix ms, 0: none
}

type assignRequest struct {
	cfg       Limit
	requested time.Time
	deadline  time.Time
	eventID   string
}

type assignResult struct {
	slot Slot
	err  error
}

// maxCallsPerInstant is how many calls for one instant run at once: two
// keep both cores of a small machine busy without a convoy on the windows.
const maxCallsPerInstant = 2

// assignCoalesced is Assign's path to the database.
func (l *Limiter) assignCoalesced(ctx context.Context, cfg Limit, eventID string, requested, deadline time.Time) (Slot, error) {
	var dl int64
	if !deadline.IsZero() {
		dl = deadline.UnixMilli()
	}
	r, err := l.assigns.do(ctx, coalesceKey{config: cfg.Name, at: requested.UnixMilli(), deadline: dl},
		assignRequest{cfg: cfg, requested: requested, deadline: deadline, eventID: eventID})
	if err != nil {
		return Slot{}, err // the call may still assign the slot; a retry gets it back
	}
	return r.slot, r.err
}

// assignBatch is one pacing_assign call for requests of one config and
// instant.
func (l *Limiter) assignBatch(ctx context.Context, reqs []assignRequest) []assignResult {
	ids := make([]string, len(reqs))
	for i, r := range reqs {
		ids[i] = r.eventID
	}
	slots, err := l.assign(ctx, reqs[0].cfg, reqs[0].requested, reqs[0].deadline, ids)
	bySlot := make(map[string]Slot, len(slots))
	for _, s := range slots {
		if _, seen := bySlot[s.EventID]; !seen { // an id asked twice: its first answer
			bySlot[s.EventID] = s
		}
	}
	out := make([]assignResult, len(reqs))
	for i, r := range reqs {
		s, ok := bySlot[r.eventID]
		switch {
		case err != nil:
			out[i] = assignResult{err: err}
		case !ok:
			out[i] = assignResult{err: errNoResult(r.eventID)}
		default:
			out[i] = assignResult{slot: s}
		}
	}
	return out
}
