package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/wait"
	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// recordLoop records outcomes in batches: up to RecordBatchSize, gathered
// for at most RecordLinger after the first, one transaction each. It
// returns when r.outcomes is closed and drained.
func (r *Relayer) recordLoop(ctx context.Context) {
	batch := make([]outcome, 0, r.cfg.RecordBatchSize)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		o, ok := <-r.outcomes
		if !ok {
			return
		}
		batch = append(batch[:0], o)
		open := true
		if r.cfg.RecordLinger > 0 {
			linger.Reset(r.cfg.RecordLinger)
		}
	gather:
		for len(batch) < r.cfg.RecordBatchSize {
			select {
			case o, ok := <-r.outcomes:
				if !ok {
					open = false
					break gather
				}
				batch = append(batch, o)
				continue
			default:
			}
			if r.cfg.RecordLinger <= 0 {
				break
			}
			select {
			case o, ok := <-r.outcomes:
				if !ok {
					open = false
					break gather
				}
				batch = append(batch, o)
			case <-linger.C:
				break gather
			}
		}
		linger.Stop()
		r.flush(ctx, batch)
		if !open {
			return
		}
	}
}

// flush records a batch and, whatever happened, gives its room back. It
// wakes the claimer only when the batch may have made work claimable that
// no notification announces: room in a relayer that was full, a settled
// strict head (the participant's next sequence may go), a message put
// back. Delivered throughput messages wake nobody: new work comes with
// its notification, so that claims gather what arrived in a debounce
// window rather than one claim a delivered message.
func (r *Relayer) flush(ctx context.Context, batch []outcome) {
	r.flushPart(ctx, batch)
	wasFull := r.inFlight.Add(-int64(len(batch)))+int64(len(batch)) >= int64(r.cfg.MaxInFlight)
	if wasFull || slices.ContainsFunc(batch, func(o outcome) bool { return o.c.strict || o.requeueAfter >= 0 }) {
		r.wakeUp()
	}
}

// flushPart records batch; a hook error splits it in halves, recorded
// apart, so one message a hook refuses does not hold up the others. A
// database error is retried a few times. Outcomes left unrecorded stay
// in flight: the reaper requeues them for inquiry, which settles them
// without a second send.
func (r *Relayer) flushPart(ctx context.Context, batch []outcome) {
	err := r.record(ctx, batch)
	if err == nil {
		return
	}
	var he *hookError
	if errors.As(err, &he) {
		r.m.hookFailure()
		if len(batch) > 1 {
			mid := len(batch) / 2
			r.flushPart(ctx, batch[:mid])
			r.flushPart(ctx, batch[mid:])
			return
		}
	}
	for try := 1; try <= 3 && ctx.Err() == nil; try++ {
		if !wait.For(ctx, 100*time.Millisecond<<try) {
			break
		}
		if err = r.record(ctx, batch); err == nil {
			return
		}
		if errors.As(err, &he) {
			r.m.hookFailure()
		}
	}
	r.m.recordFailure(len(batch))
	ids := make([]string, 0, min(len(batch), 10))
	for _, o := range batch[:min(len(batch), 10)] {
		ids = append(ids, o.c.msg.OutboxID.String())
	}
	r.cfg.Logger.Error("outbox outcomes not recorded; left in flight for the reaper", "relayer", r.cfg.ID,
		"outcomes", len(batch), "outbox_ids", ids, "err", err)
}

// hookError is a hook's refusal, which rolled the batch back.
type hookError struct{ err error }

func (e *hookError) Error() string { return "outbox: hook: " + e.err.Error() }
func (e *hookError) Unwrap() error { return e.err }

// record writes a batch of outcomes and calls the hooks, in one
// transaction.
func (r *Relayer) record(ctx context.Context, batch []outcome) error {
	p := recordParams(batch)
	var delivered []Delivery
	var dead []DeadLetter
	var settled map[uuid.UUID]bool
	var chained []claimed
	// Strict heads this batch settles for good: their participants' next
	// heads are claimed in the same transaction (chained), unless the
	// relayer is stopping. spawnMu is held until they are started, so that
	// Run does not stop waiting for calls before.
	var heads []Message
	for _, o := range batch {
		if o.c.strict && (o.state == StateDispatched || o.state == StateFailed) {
			heads = append(heads, o.c.msg)
		}
	}
	if len(heads) > 0 {
		r.spawnMu.Lock()
		defer r.spawnMu.Unlock()
		if r.stopping {
			heads = nil
		}
	}
	start := time.Now()
	err := pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
		rows, err := r.q.WithTx(tx).RecordOutcomes(ctx, p)
		if err != nil {
			return fmt.Errorf("outbox: record %d outcomes: %w", len(batch), err)
		}
		settled = make(map[uuid.UUID]bool, len(rows))
		for _, row := range rows {
			settled[row.OutboxID] = true
		}
		delivered, dead = delivered[:0], dead[:0]
		for _, o := range batch {
			if !settled[o.c.msg.OutboxID] {
				continue
			}
			switch o.state {
			case StateDispatched:
				delivered = append(delivered, Delivery{Message: o.c.msg, Result: o.res, Inquired: o.inquiry == Delivered})
			case StateFailed:
				dead = append(dead, DeadLetter{Message: o.c.msg, ErrorCode: o.code, Result: o.res})
			}
		}
		slices.SortFunc(delivered, func(a, b Delivery) int { return bySequence(a.Message, b.Message) })
		slices.SortFunc(dead, func(a, b DeadLetter) int { return bySequence(a.Message, b.Message) })
		if h := r.cfg.Hooks.OnDelivered; h != nil && len(delivered) > 0 {
			if err := h(ctx, tx, delivered); err != nil {
				return &hookError{err}
			}
		}
		if h := r.cfg.Hooks.OnDead; h != nil && len(dead) > 0 {
			if err := h(ctx, tx, dead); err != nil {
				return &hookError{err}
			}
		}
		chained = r.chain(ctx, tx, heads, settled)
		return nil
	})
	if err != nil {
		return err
	}
	n := 0
	for _, c := range chained {
		n += 1 + len(c.followers)
	}
	r.m.claim(Strict, n)
	r.spawn(chained)
	states := map[State]int{}
	enqueued := make(map[uuid.UUID]time.Time, len(delivered))
	for _, o := range batch {
		if !settled[o.c.msg.OutboxID] {
			// The reaper took it back first (this relayer was too slow, or
			// this is a retry of a batch that did commit): whoever holds it
			// now settles it, by inquiry if it was sent.
			r.cfg.Logger.Warn("outbox outcome not recorded: claim no longer held", "relayer", r.cfg.ID,
				"outbox_id", o.c.msg.OutboxID, "attempt", o.c.msg.Attempt, "state", o.state)
			continue
		}
		states[o.state]++
		if o.state == StateDispatched {
			enqueued[o.c.msg.OutboxID] = o.c.enqueuedAt
		}
	}
	r.m.recorded(states, delivered, enqueued)
	r.cfg.Logger.Debug("outbox record", "relayer", r.cfg.ID, "outcomes", len(batch), "took", time.Since(start))
	return nil
}

// recordParams is an outcome batch as RecordOutcomes takes it: one
// array per column, an attempt id made here for each outcome.
func recordParams(batch []outcome) dbsqlc.RecordOutcomesParams {
	p := dbsqlc.RecordOutcomesParams{}
	for _, o := range batch {
		m := o.c.msg
		p.OutboxIds = append(p.OutboxIds, m.OutboxID)
		p.AttemptIds = append(p.AttemptIds, uuid.Must(uuid.NewV7()))
		p.AttemptNos = append(p.AttemptNos, int32(m.Attempt))
		p.InstructionIds = append(p.InstructionIds, m.InstructionID)
		p.IdempotencyKeys = append(p.IdempotencyKeys, m.IdempotencyKey)
		p.RailTypes = append(p.RailTypes, m.RailType)
		p.Payloads = append(p.Payloads, m.Payload)
		p.States = append(p.States, string(o.state))
		p.RailReferences = append(p.RailReferences, o.res.Reference)
		p.RailCodes = append(p.RailCodes, o.res.Code)
		p.ErrorCodes = append(p.ErrorCodes, o.code)
		p.ErrorMessages = append(p.ErrorMessages, truncate(o.text, 2000))
		p.LatenciesMs = append(p.LatenciesMs, int32(min(o.latency.Milliseconds(), 1<<31-1)))
		p.InquiryOutcomes = append(p.InquiryOutcomes, string(o.inquiry))
		after := int64(-1)
		if o.requeueAfter >= 0 {
			after = o.requeueAfter.Milliseconds()
		}
		p.RequeueAfterMs = append(p.RequeueAfterMs, after)
		p.RequeueInquire = append(p.RequeueInquire, o.requeueInquire)
		p.Traceparents = append(p.Traceparents, m.TraceParent)
	}
	return p
}

func bySequence(a, b Message) int {
	return cmp.Or(cmp.Compare(a.ParticipantID, b.ParticipantID), cmp.Compare(a.SequenceID, b.SequenceID))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// chain claims, in the outcome batch's transaction, the next heads of the
// strict participants whose heads it settles (of those actually settled
// here), in a savepoint: a failed chained claim leaves the outcomes
// recorded, and the claim loop claims those heads instead.
func (r *Relayer) chain(ctx context.Context, tx pgx.Tx, heads []Message, settled map[uuid.UUID]bool) []claimed {
	var participants []string
	for _, m := range heads {
		if settled[m.OutboxID] {
			participants = append(participants, m.ParticipantID)
		}
	}
	if len(participants) == 0 {
		return nil
	}
	var claims []claimed
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		rows, err := r.q.WithTx(sp).ClaimStrictNext(ctx, dbsqlc.ClaimStrictNextParams{
			ParticipantIds: participants, RelayerID: r.cfg.ID, AttemptIds: attemptIDs(len(participants)),
		})
		if err != nil {
			return err
		}
		now := time.Now()
		for _, c := range rows {
			claims = append(claims, claimedFrom(dbsqlc.ClaimDueRow(c), now))
		}
		// Behind each chained head, its lane's run, within the room left
		// (what this batch settles is still counted in flight: a margin).
		_, err = r.claimFollowers(ctx, r.q.WithTx(sp), claims, r.cfg.MaxInFlight-int(r.inFlight.Load())-len(claims))
		return err
	})
	if err != nil {
		r.cfg.Logger.Warn("outbox chained strict claim failed; the claim loop will take those heads", "relayer", r.cfg.ID, "err", err)
		return nil
	}
	return claims
}
