package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
)

// leverRun pulls a drain's levers at their times after the instant, in
// a goroutine of its own, and prints each answer as it comes.
type leverRun struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	err    error
	steps  []limitStep
	pulled []pulledLever
}

// pulledLever is a lever pulled: what, when after the instant, how long
// its call took.
type pulledLever struct {
	What     string
	At, Took time.Duration
}

// startLevers pulls o's levers: the pause and resume of a tenant through
// svc, the limit change through lim (the limiter svc moves with) and
// then svc.RepaceConfig, as POST /admin/rate-limit/config does. The audit
// entries the API would write in each move's transaction are left out.
func startLevers(ctx context.Context, o DrainOptions, instant time.Time, svc *payment.Service, lim *pacing.Limiter) *leverRun {
	ctx, cancel := context.WithCancel(ctx)
	r := &leverRun{cancel: cancel, done: make(chan struct{})}
	type lever struct {
		at   time.Duration
		what string
		pull func() (said string, answer any, err error)
	}
	scope := payment.PauseScope{Kind: payment.PauseTenant, ID: o.PauseTenant}
	var ls []lever
	if o.PauseTenant != "" {
		ls = append(ls, lever{o.PauseAt, "pause", func() (string, any, error) {
			start := time.Now()
			p, err := svc.Pause(ctx, scope, nil)
			return fmt.Sprintf("pause TENANT %s (payment.Service.Pause): %s payments paused, %s queue items parked now, in %.3f s",
				o.PauseTenant, thousands(p.Payments), thousands(p.Parked), time.Since(start).Seconds()), p, err
		}}, lever{o.ResumeAt, "resume", func() (string, any, error) {
			start := time.Now()
			res, err := svc.Resume(ctx, scope, nil)
			return fmt.Sprintf("resume TENANT %s (payment.Service.Resume): %s, in %.3f s",
				o.PauseTenant, describeRepaced(res, instant), time.Since(start).Seconds()), res, err
		}})
	}
	if o.LimitChangeTo > 0 {
		ls = append(ls, lever{o.LimitChangeAt, "limit change", func() (string, any, error) {
			start := time.Now()
			if _, err := lim.PutConfig(ctx, pacing.Limit{Name: "payments", MaxPerWindow: o.LimitChangeTo, Window: o.Window,
				Headroom: pacing.DefaultHeadroom}); err != nil {
				return "", nil, err
			}
			committed := time.Since(instant)
			put := time.Since(start)
			r.mu.Lock()
			r.steps = append(r.steps, limitStep{At: committed, Max: o.LimitChangeTo})
			r.mu.Unlock()
			start = time.Now()
			res, err := svc.RepaceConfig(ctx, "payments", nil)
			return fmt.Sprintf("limit %d → %d per %s (pacing.Limiter.PutConfig: committed at %+.2f s, in %.3f s); "+
				"payment.Service.RepaceConfig: %s, in %.3f s", o.MaxPerWindow, o.LimitChangeTo, pacing.FormatISODuration(o.Window),
				committed.Seconds(), put.Seconds(), describeRepaced(res, instant), time.Since(start).Seconds()), res, err
		}})
	}
	slices.SortStableFunc(ls, func(a, b lever) int { return int(a.at - b.at) })
	go func() {
		defer close(r.done)
		for _, l := range ls {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(instant.Add(l.at))):
			}
			at := time.Since(instant)
			said, answer, err := l.pull()
			took := time.Since(instant) - at
			r.mu.Lock()
			if err != nil {
				r.err = fmt.Errorf("the lever at +%v (%s): %w", l.at, l.what, err)
			}
			r.pulled = append(r.pulled, pulledLever{What: l.what, At: at, Took: took})
			r.mu.Unlock()
			if err != nil {
				return
			}
			fmt.Fprintf(o.Out, "lever at %+.2f s: %s\n  its answer: %s\n", at.Seconds(), said, describeJSON(answer))
		}
	}()
	return r
}

// failed is the error a lever met (nil: none, or no levers).
func (r *leverRun) failed() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// finished reports whether every lever was pulled (no levers: true).
func (r *leverRun) finished() bool {
	if r == nil {
		return true
	}
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// changes are the limit's changes, from when each committed.
func (r *leverRun) changes() []limitStep {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.steps)
}

// pulledLevers are the levers pulled so far.
func (r *leverRun) pulledLevers() []pulledLever {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pulled)
}

// stop gives up the levers not pulled yet and waits for the goroutine.
func (r *leverRun) stop() {
	r.cancel()
	<-r.done
}

// countBySecond reads (second, count) rows of a query with the instant
// as $1.
func countBySecond(ctx context.Context, pool *pgxpool.Pool, query string, instant time.Time, args ...any) (map[int]int, error) {
	rows, err := pool.Query(ctx, query, append([]any{instant}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var s, n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] += n
	}
	return out, rows.Err()
}

// describeJSON is a lever's answer as the API gives it.
func describeJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
