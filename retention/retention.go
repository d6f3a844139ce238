package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// DeleteFunc deletes at most limit rows of its table older than before,
// among those in a deletable state, and answers how many it deleted.
type DeleteFunc func(ctx context.Context, before time.Time, limit int) (int64, error)

// Policy is one table's retention.
type Policy struct {
	// Table names the table, in logs and in the metrics' table label.
	Table string
	// Keep is how long a row is kept; 0 keeps every row.
	Keep time.Duration
	// Delete deletes one batch.
	Delete DeleteFunc
}

// Defaults of Config's zero fields.
const (
	DefaultInterval  = time.Minute
	DefaultBatchSize = 1000
	DefaultPause     = 50 * time.Millisecond
	// DefaultLockKey is the advisory lock a round holds: "retn" in ASCII,
	// apart from the keys other packages take.
	DefaultLockKey int64 = 0x7265746e
)

// Config is a Cleaner's. Zero fields take the defaults above.
type Config struct {
	// Pool is where the round's lock is taken.
	Pool *pgxpool.Pool
	// Policies are run in order each round.
	Policies []Policy
	// Interval is the time between rounds.
	Interval time.Duration
	// BatchSize is the limit passed to each Delete.
	BatchSize int
	// Pause is the wait between two full batches, which leaves the
	// database to the hot path for a moment.
	Pause time.Duration
	// LockKey is the advisory lock that keeps rounds one at a time; every
	// process cleaning the same tables must use the same key.
	LockKey int64
	// Registerer gets the metrics; nil: none are exported.
	Registerer prometheus.Registerer
	// Logger logs rounds that deleted rows and errors; nil: slog.Default.
	Logger *slog.Logger
	// Now is the clock the cutoffs are taken from; nil: time.Now.
	Now func() time.Time
}

// Cleaner runs the policies. Build one with New.
type Cleaner struct {
	cfg     Config
	deleted *prometheus.CounterVec
	errs    *prometheus.CounterVec
	last    prometheus.Gauge
}

// New validates cfg, fills its defaults and registers the metrics.
func New(cfg Config) (*Cleaner, error) {
	if cfg.Pool == nil {
		return nil, errors.New("retention: Config.Pool is required")
	}
	seen := map[string]bool{}
	for _, p := range cfg.Policies {
		switch {
		case p.Table == "":
			return nil, errors.New("retention: a policy has no Table")
		case seen[p.Table]:
			return nil, fmt.Errorf("retention: table %s has two policies", p.Table)
		case p.Keep < 0:
			return nil, fmt.Errorf("retention: table %s: negative Keep %s", p.Table, p.Keep)
		case p.Delete == nil:
			return nil, fmt.Errorf("retention: table %s has no Delete", p.Table)
		}
		seen[p.Table] = true
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.Pause <= 0 {
		cfg.Pause = DefaultPause
	}
	if cfg.LockKey == 0 {
		cfg.LockKey = DefaultLockKey
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Cleaner{
		cfg: cfg,
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paydispatch_retention_deleted_rows_total",
			Help: "Rows the retention cleaner deleted, by table.",
		}, []string{"table"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paydispatch_retention_errors_total",
			Help: "Retention batches that failed, by table.",
		}, []string{"table"}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "paydispatch_retention_last_success_timestamp_seconds",
			Help: "When the last retention round that ran every policy without error ended (Unix seconds).",
		}),
	}
	if cfg.Registerer != nil {
		for _, m := range []prometheus.Collector{c.deleted, c.errs, c.last} {
			if err := cfg.Registerer.Register(m); err != nil {
				return nil, fmt.Errorf("retention: register metrics: %w", err)
			}
		}
	}
	return c, nil
}

// Round is what one round did.
type Round struct {
	// Ran is false when another process held the lock: nothing was done.
	Ran bool
	// Deleted counts the rows deleted, by table.
	Deleted map[string]int64
}

// Run runs a round at once and then every Interval until ctx is done.
// A failed round is logged and counted; the next one tries again.
func (c *Cleaner) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		r, err := c.RunOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			c.cfg.Logger.Error("retention round failed", "err", err)
		case err == nil && r.Ran:
			for table, n := range r.Deleted {
				if n > 0 {
					c.cfg.Logger.Info("retention deleted rows", "table", table, "rows", n)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunOnce runs one round, if no other process is running one: each
// policy with a Keep deletes its rows older than now less Keep, batch by
// batch, until a batch comes back short. A policy that fails does not
// stop the others; the round's error joins theirs.
func (c *Cleaner) RunOnce(ctx context.Context) (Round, error) {
	conn, err := c.cfg.Pool.Acquire(ctx)
	if err != nil {
		return Round{}, fmt.Errorf("retention: acquire the lock's connection: %w", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, c.cfg.LockKey).Scan(&locked); err != nil {
		return Round{}, fmt.Errorf("retention: take the lock: %w", err)
	}
	if !locked {
		return Round{}, nil
	}
	defer func() {
		// A session lock outlives a cancelled ctx: unlock without it, and
		// close a connection that cannot unlock, so the pool never hands
		// out a session that still holds it.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, c.cfg.LockKey); err != nil {
			_ = conn.Conn().Close(uctx)
		}
	}()
	r := Round{Ran: true, Deleted: make(map[string]int64, len(c.cfg.Policies))}
	var errs []error
	for _, p := range c.cfg.Policies {
		if p.Keep == 0 {
			continue
		}
		n, err := c.clean(ctx, p)
		r.Deleted[p.Table] = n
		if err != nil {
			errs = append(errs, fmt.Errorf("retention: %s: %w", p.Table, err))
			if ctx.Err() != nil {
				break // stopped: the batch was cut short, not failed; the next round deletes its rows
			}
			c.errs.WithLabelValues(p.Table).Inc()
		}
	}
	if len(errs) == 0 {
		c.last.Set(float64(c.cfg.Now().UnixNano()) / 1e9)
	}
	return r, errors.Join(errs...)
}

// clean deletes p's old rows, a batch at a time, until a batch is short.
// The cutoff is taken once, so rows that age during the round wait for
// the next one and a round always ends.
func (c *Cleaner) clean(ctx context.Context, p Policy) (int64, error) {
	before := c.cfg.Now().Add(-p.Keep)
	var total int64
	for {
		n, err := p.Delete(ctx, before, c.cfg.BatchSize)
		total += n
		c.deleted.WithLabelValues(p.Table).Add(float64(n))
		if err != nil {
			return total, err
		}
		if n < int64(c.cfg.BatchSize) {
			return total, nil
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(c.cfg.Pause):
		}
	}
}
