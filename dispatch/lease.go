package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/dispatch/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/queue"
)

// LeaseRunner runs dispatch cycles in-process, for deployments without a
// Temporal Schedule: the scheduled loop under a distributed lock
// (docs/design.md, "Scheduled dispatcher and leases").
// Every replica runs one; on each tick, only the replica holding the item
// type's lease in PostgreSQL runs the cycle.
//
// Lock-at-most: a lease expires AtMost after it was taken, so a crashed
// holder blocks dispatch for at most that long; the cycle is cancelled
// before then, so no two holders ever run at once. Lock-at-least: a
// released lease stays taken until AtLeast after it was taken, so replicas
// whose tickers fire together do not run the cycle twice in one interval.
type LeaseRunner struct {
	LeaseConfig
}

// LeaseConfig configures a LeaseRunner. DB, Acts and ItemTypes are
// required.
type LeaseConfig struct {
	DB        dbsqlc.DBTX
	Acts      *Activities
	ItemTypes []string
	// Holder names this replica (default: host-pid-random).
	Holder string
	// AtMost bounds a lease (default 5 min); AtLeast holds it after a
	// cycle (default half the dispatch interval).
	AtMost, AtLeast time.Duration
	// Logger defaults to one that discards.
	Logger *slog.Logger
	// OnCycle, when set, is told when this replica begins and ends a cycle
	// (for metrics and tests).
	OnCycle func(itemType string, begin bool)
}

// NewLeaseRunner checks c once and fills in its defaults.
func NewLeaseRunner(c LeaseConfig) (*LeaseRunner, error) {
	switch {
	case c.DB == nil || c.Acts == nil:
		return nil, errors.New("dispatch: a lease runner needs a database and the activities")
	case c.AtMost < 0 || c.AtLeast < 0:
		return nil, errors.New("dispatch: lease durations must not be negative")
	}
	if c.Holder == "" {
		host, _ := os.Hostname()
		c.Holder = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	if c.AtMost == 0 {
		c.AtMost = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return &LeaseRunner{c}, nil
}

// Run runs until ctx ends: one loop per item type, ticking at the type's
// configured dispatch interval (re-read every tick).
func (r *LeaseRunner) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, t := range r.ItemTypes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.loop(ctx, t)
		}()
	}
	wg.Wait()
	return nil
}

func (r *LeaseRunner) loop(ctx context.Context, itemType string) {
	interval := 5 * time.Second
	for {
		if cfg, err := r.Acts.queue().GetConfig(ctx, itemType); err == nil {
			interval = cfg.DispatchInterval
		}
		if _, _, err := r.Tick(ctx, itemType, interval); err != nil && ctx.Err() == nil {
			r.Logger.Warn("dispatch cycle failed", "item_type", itemType, "holder", r.Holder, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// Tick runs one cycle if this replica can take the lease; ran is false when
// another replica holds it.
func (r *LeaseRunner) Tick(ctx context.Context, itemType string, interval time.Duration) (res CycleResult, ran bool, err error) {
	q := dbsqlc.New(r.DB)
	name := "dispatch-" + itemType
	_, err = q.AcquireLease(ctx, dbsqlc.AcquireLeaseParams{Name: name, Holder: r.Holder, AtMostSecs: r.AtMost.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return CycleResult{}, false, nil // another replica's turn
	}
	if err != nil {
		return CycleResult{}, false, fmt.Errorf("dispatch: acquire lease %s: %w", name, err)
	}
	atLeast := r.AtLeast
	if atLeast == 0 {
		atLeast = interval / 2
	}
	defer func() {
		// Released even when ctx has ended, so a restart is not blocked.
		relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := q.ReleaseLease(relCtx, dbsqlc.ReleaseLeaseParams{Name: name, Holder: r.Holder, AtLeastSecs: atLeast.Seconds()}); err != nil {
			r.Logger.Warn("lease not released; it expires by itself", "lease", name, "error", err)
		}
	}()
	// Finish well inside the lease, so nobody else can take it meanwhile.
	cycleCtx, cancel := context.WithTimeout(ctx, r.AtMost*9/10)
	defer cancel()
	if r.OnCycle != nil {
		r.OnCycle(itemType, true)
		defer r.OnCycle(itemType, false)
	}
	res, err = r.Acts.RunCycle(cycleCtx, itemType)
	return res, true, err
}

// RunCycle runs one dispatch cycle for an item type, its steps called
// in turn (runCycle): the lease runner's tick and DispatchCycle's local
// activity. A claim that came back full (batch_size items) left due items
// behind, so the cycle claims again, each claim recorded as its own
// batch, for up to half its interval: batch_size bounds a claim, not the
// rate (at 1,000/s a one-second cycle needs two claims of 500).
func (a *Activities) RunCycle(ctx context.Context, itemType string) (CycleResult, error) {
	began := time.Now()
	var cfg queue.Settings
	res, err := runCycle(steps{
		readConfig: func(t string) (c queue.Settings, err error) { cfg, err = a.ReadConfig(ctx, t); return cfg, err },
		recover:    func(c queue.Settings) (Recovery, error) { return a.RecoverStaleClaims(ctx, c) },
		reconcile:  func(c queue.Settings) (Reconciliation, error) { return a.Reconcile(ctx, c) },
		dispatch:   func(c queue.Settings) (Dispatch, error) { return a.ClaimAndDispatch(ctx, c) },
		record:     func(res CycleResult) error { return a.RecordResults(ctx, res) },
	}, itemType, began)
	for full := res.Dispatch; err == nil && full.Claimed >= cfg.BatchSize && cfg.BatchSize > 0 &&
		time.Since(began) < cfg.DispatchInterval/2; {
		more := CycleResult{ItemType: itemType, StartedAt: time.Now()}
		if more.Dispatch, err = a.ClaimAndDispatch(ctx, cfg); err != nil || more.Dispatch.Claimed == 0 {
			break
		}
		if err = a.RecordResults(ctx, more); err != nil {
			break
		}
		res.Dispatch = res.Dispatch.plus(more.Dispatch)
		full = more.Dispatch
	}
	return res, err
}

// plus adds another claim's counts to d; BatchID stays the first claim's.
func (d Dispatch) plus(o Dispatch) Dispatch {
	d.Claimed += o.Claimed
	d.Started += o.Started
	d.AlreadyStarted += o.AlreadyStarted
	d.StartFailed += o.StartFailed
	d.DeadLettered += o.DeadLettered
	d.AtCapacity = d.AtCapacity || o.AtCapacity
	return d
}
