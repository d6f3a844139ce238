package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/wait"
	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// Relayer claims due instructions, hands them to the Sender and records
// the outcomes. Any number of relayers, in any number of processes, may
// run against one database.
type Relayer struct {
	cfg Config
	q   *dbsqlc.Queries
	m   *Metrics

	running  atomic.Bool
	wake     chan struct{} // a claim pass is wanted; buffered 1
	inFlight atomic.Int64  // claimed here and not yet recorded
	outcomes chan outcome  // to the recorder; room for MaxInFlight; one per Run
	global   chan struct{} // rail calls at once
	railsMu  sync.Mutex
	rails    map[string]chan struct{}

	// Set by Run for the goroutines that process claims.
	runCtx, workCtx context.Context
	calls           sync.WaitGroup
	// spawnMu orders the recorder's chained claims against shutdown: once
	// stopping is set, nothing more is claimed, and Run waits for calls.
	spawnMu  sync.Mutex
	stopping bool
}

// New validates cfg (after defaults) and returns a relayer.
func New(cfg Config) (*Relayer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Relayer{
		cfg:    cfg,
		q:      dbsqlc.New(cfg.Pool),
		m:      cfg.Metrics,
		wake:   make(chan struct{}, 1),
		global: make(chan struct{}, cfg.Concurrency),
		rails:  map[string]chan struct{}{},
	}, nil
}

// ID is the relayer's name in the archive.
func (r *Relayer) ID() string { return r.cfg.ID }

// Run relays until ctx is done, then stops claiming, lets the rail calls
// under way finish and records them (for up to ShutdownTimeout), and
// returns nil. Claims it could not record are the reaper's. It returns an
// error only when the relayer is already running.
func (r *Relayer) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("outbox: relayer already running")
	}
	defer r.running.Store(false)
	log := r.cfg.Logger.With("relayer", r.cfg.ID)
	log.Info("outbox relayer starting", "notify", !r.cfg.DisableNotify, "poll", !r.cfg.DisablePoll,
		"reaper", !r.cfg.DisableReaper)

	r.outcomes = make(chan outcome, r.cfg.MaxInFlight)
	// Rail calls and records outlive ctx by up to ShutdownTimeout, so that
	// what was sent gets recorded.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	r.runCtx, r.workCtx, r.stopping = ctx, workCtx, false
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		r.recordLoop(workCtx)
	}()

	var helpers sync.WaitGroup
	start := func(f func(context.Context)) {
		helpers.Add(1)
		go func() {
			defer helpers.Done()
			f(ctx)
		}()
	}
	if !r.cfg.DisableNotify {
		start(r.listen)
	}
	if !r.cfg.DisablePoll {
		start(r.poll)
	}
	if !r.cfg.DisableReaper {
		start(r.reapLoop)
	}

	r.wakeUp()
	r.claimLoop(ctx)

	stop := time.AfterFunc(r.cfg.ShutdownTimeout, cancelWork)
	defer stop.Stop()
	r.spawnMu.Lock()
	r.stopping = true
	r.spawnMu.Unlock()
	r.calls.Wait()
	close(r.outcomes)
	<-recorded
	helpers.Wait()
	if n := r.inFlight.Load(); n > 0 {
		log.Warn("outbox relayer stopped with claims unrecorded; the reaper will requeue them", "claims", n)
		r.inFlight.Store(0)
	}
	log.Info("outbox relayer stopped")
	return nil
}

// wakeUp asks for a claim pass; several requests before it starts make one.
func (r *Relayer) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// claimLoop claims whenever woken (notification, poll, timer, or room
// freed by recorded outcomes) until ctx is done.
func (r *Relayer) claimLoop(ctx context.Context) {
	due := time.NewTimer(time.Hour)
	due.Stop()
	var dueAt time.Time
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-due.C:
			dueAt = time.Time{}
		}
		drained, err := r.claimPass(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			backoff := min(50*time.Millisecond<<min(failures, 7), 5*time.Second)
			r.cfg.Logger.Warn("outbox claim failed", "relayer", r.cfg.ID, "err", err, "retry_in", backoff)
			if !wait.For(ctx, backoff) {
				return
			}
			r.wakeUp()
			continue
		}
		failures = 0
		if !drained {
			continue
		}
		// Nothing more is due: wake when the next backoff ends, polling or not.
		in, err := r.q.NextDue(ctx)
		if err != nil || in < 0 {
			continue
		}
		at := time.Now().Add(time.Duration(in*float64(time.Second)) + time.Millisecond)
		if dueAt.IsZero() || at.Before(dueAt) {
			dueAt = at
			due.Reset(time.Until(at))
		}
	}
}

// claimPass claims until nothing is due or the relayer is full; drained
// says nothing was left.
func (r *Relayer) claimPass(ctx context.Context) (drained bool, err error) {
	for ctx.Err() == nil {
		room := r.cfg.MaxInFlight - int(r.inFlight.Load())
		if room <= 0 {
			return false, nil // the recorder wakes us when there is room
		}
		claims, drained, err := r.claim(ctx, room)
		if err != nil {
			return false, err
		}
		r.spawn(claims)
		if drained {
			return true, nil
		}
	}
	return false, nil
}

// spawn starts a goroutine per claim, which takes it to its outcome.
// Only the claim loop and, under spawnMu, the recorder call it.
func (r *Relayer) spawn(claims []claimed) {
	for _, c := range claims {
		r.inFlight.Add(int64(1 + len(c.followers)))
		r.calls.Add(1)
		go func() {
			defer r.calls.Done()
			if len(c.followers) == 0 {
				r.outcomes <- r.process(r.runCtx, r.workCtx, c)
				return
			}
			for _, o := range r.processLane(r.runCtx, r.workCtx, c) {
				r.outcomes <- o
			}
		}()
	}
}

// claimTimeout bounds a claim transaction.
const claimTimeout = 30 * time.Second

// claimed is a message this relayer holds.
type claimed struct {
	msg        Message
	inquire    bool
	strict     bool
	enqueuedAt time.Time
	// at is when the claim returned, on this process's clock; the claim
	// itself happened a little earlier (sendDeadline keeps a margin).
	at time.Time
	// followers are the lane's messages claimed right behind this strict
	// head, in sequence order, sent with it in one call (processLane).
	followers []claimed
}

// claim takes up to room messages in one transaction: the heads of
// strict participants first, then due throughput rows.
func (r *Relayer) claim(ctx context.Context, room int) (claims []claimed, drained bool, err error) {
	strictN := min(r.cfg.StrictClaimBatchSize, room)
	var dueN, nFollowers int
	start := time.Now()
	// Not cut short by shutdown: a claim whose commit was under way when
	// ctx ended may have committed, and its messages must then be ours to
	// send or put back, not left to the reaper.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	err = pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
		// The claims have a fixed shape: generic plans, kept per
		// connection, instead of planning both statements on every pass
		// (planning costs a claim of one row more than its execution),
		// whatever the pool's setting.
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = auto"); err != nil {
			return err
		}
		q := r.q.WithTx(tx)
		strict, err := q.ClaimStrict(ctx, dbsqlc.ClaimStrictParams{BatchSize: int32(strictN), RelayerID: r.cfg.ID, AttemptIds: attemptIDs(strictN)})
		if err != nil {
			return fmt.Errorf("strict claim: %w", err)
		}
		now := time.Now()
		for _, c := range strict {
			claims = append(claims, claimedFrom(dbsqlc.ClaimDueRow(c), now))
		}
		nFollowers, err = r.claimFollowers(ctx, q, claims, room-len(strict))
		if err != nil {
			return fmt.Errorf("lane claim: %w", err)
		}
		dueN = min(r.cfg.ClaimBatchSize, room-len(strict)-nFollowers)
		if dueN <= 0 {
			return nil
		}
		due, err := q.ClaimDue(ctx, dbsqlc.ClaimDueParams{BatchSize: int32(dueN), RelayerID: r.cfg.ID, AttemptIds: attemptIDs(dueN)})
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		now = time.Now()
		for _, c := range due {
			claims = append(claims, claimedFrom(c, now))
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("outbox: %w", err)
	}
	nStrict := 0
	for _, c := range claims {
		if c.strict {
			nStrict++
		}
	}
	r.m.claim(Strict, nStrict+nFollowers)
	r.m.claim(Throughput, len(claims)-nStrict)
	drained = nStrict < strictN && dueN > 0 && len(claims)-nStrict < dueN
	r.cfg.Logger.Debug("outbox claim", "relayer", r.cfg.ID, "strict", nStrict, "followers", nFollowers,
		"due", len(claims)-nStrict, "room", room, "took", time.Since(start))
	return claims, drained, nil
}

func claimedFrom(c dbsqlc.ClaimDueRow, at time.Time) claimed {
	return claimed{
		msg: Message{
			OutboxID:       c.OutboxID,
			InstructionID:  c.InstructionID,
			ParticipantID:  c.ParticipantID,
			SequenceID:     c.SequenceID,
			IdempotencyKey: c.IdempotencyKey,
			RailType:       c.RailType,
			Payload:        c.Payload,
			Attempt:        int(c.AttemptNo),
			TraceParent:    c.Traceparent,
		},
		inquire:    c.Inquire,
		strict:     c.Strict,
		enqueuedAt: c.CreatedAt,
		at:         at,
	}
}

// attemptIDs makes n attempt ids (UUIDv7; uuid.NewV7 only fails when the
// system's random source does, and then the database's default would
// fail too).
func attemptIDs(n int) []uuid.UUID {
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	return ids
}
