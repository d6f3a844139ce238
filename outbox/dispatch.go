package outbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// outcome is what became of one claim, for the recorder.
type outcome struct {
	c       claimed
	state   State
	res     Result // the rail's last answer
	code    string // the outbox's error code
	text    string // error message: the rail's, or the validation error
	latency time.Duration
	// inquiry is what an inquiry at the start of the attempt answered.
	inquiry Outcome
	// requeueAfter < 0: not requeued.
	requeueAfter   time.Duration
	requeueInquire bool
}

// process runs one claim to its outcome. Never a blind resend: a message
// marked for inquiry is sent only after the rail said it does not have
// it. ctx ends the wait for a rail slot (shutdown: the claim is put back
// unsent); the rail calls themselves run on workCtx, bounded by
// RailTimeout.
func (r *Relayer) process(ctx, workCtx context.Context, c claimed) outcome {
	m := c.msg
	release, err := r.acquire(ctx, m.RailType)
	if err != nil {
		return r.putBack(c, "", "relayer stopping before the rail call")
	}
	defer release()

	var inquiry Outcome
	var spent time.Duration
	if c.inquire {
		res, took := r.call(workCtx, m, "inquire", r.cfg.Sender.Inquire)
		spent += took
		inquiry = res.Outcome
		switch res.Outcome {
		case Delivered:
			r.m.inquiry(Delivered)
			return outcome{c: c, state: StateDispatched, res: res, latency: spent, inquiry: inquiry, requeueAfter: -1}
		case Terminal:
			r.m.inquiry(Terminal)
			return outcome{c: c, state: StateFailed, res: res, code: CodeRailTerminal, text: res.Message,
				latency: spent, inquiry: inquiry, requeueAfter: -1}
		case NotReceived:
			r.m.inquiry(NotReceived)
			// Safe to send: go on.
		default:
			// Unknown, or an answer an inquiry may not give: still unknown.
			r.m.inquiry(Unknown)
			r.m.unknownOutcome("inquire")
			inquiry = Unknown
			return r.unknown(c, res, spent, inquiry)
		}
	}
	if err := r.cfg.Sender.Validate(m); err != nil {
		return outcome{c: c, state: StateFailed, code: CodeInvalidPayload, text: err.Error(),
			res:     Result{Outcome: Terminal, Code: CodeInvalidPayload, Message: err.Error()},
			latency: spent, inquiry: inquiry, requeueAfter: -1}
	}
	if age := time.Since(c.at); age > r.cfg.sendDeadline() {
		// Too late to send safely: the reaper may hand it to another
		// relayer while our call is under way.
		return r.putBack(c, inquiry, fmt.Sprintf("claim %v old, past the send deadline %v", age.Round(time.Millisecond), r.cfg.sendDeadline()))
	}
	res, took := r.call(workCtx, m, "send", r.cfg.Sender.Send)
	return r.sent(c, res, spent+took, inquiry)
}

// sent classifies a send's answer into the claim's outcome.
func (r *Relayer) sent(c claimed, res Result, spent time.Duration, inquiry Outcome) outcome {
	m := c.msg
	switch res.Outcome {
	case Delivered:
		return outcome{c: c, state: StateDispatched, res: res, latency: spent, inquiry: inquiry, requeueAfter: -1}
	case Terminal:
		return outcome{c: c, state: StateFailed, res: res, code: CodeRailTerminal, text: res.Message,
			latency: spent, inquiry: inquiry, requeueAfter: -1}
	case Retryable, NotReceived:
		if m.Attempt >= r.cfg.MaxAttempts {
			return outcome{c: c, state: StateFailed, res: res, code: CodeMaxAttempts,
				text:    fmt.Sprintf("still retryable after %d attempts: %s", m.Attempt, res.Message),
				latency: spent, inquiry: inquiry, requeueAfter: -1}
		}
		return outcome{c: c, state: StateRetryable, res: res, code: CodeRailRetryable, text: res.Message,
			latency: spent, inquiry: inquiry, requeueAfter: r.cfg.backoff(m.Attempt, rand.Float64())}
	default:
		// Unknown, or an outcome the contract does not have: it may have
		// arrived.
		r.m.unknownOutcome("send")
		return r.unknown(c, res, spent, inquiry)
	}
}

// unknown requeues a message for inquiry, with backoff. Never
// dead-lettered: the rail may have it.
func (r *Relayer) unknown(c claimed, res Result, spent time.Duration, inquiry Outcome) outcome {
	if res.Outcome != Unknown {
		res.Message = fmt.Sprintf("outcome %q treated as unknown: %s", res.Outcome, res.Message)
		res.Outcome = Unknown
	}
	return outcome{c: c, state: StateUnknown, res: res, code: CodeOutcomeUnknown, text: res.Message,
		latency: spent, inquiry: inquiry,
		requeueAfter: r.cfg.backoff(c.msg.Attempt, rand.Float64()), requeueInquire: true}
}

// putBack requeues a claim that made no send, due at once. It keeps its
// inquiry mark: a message that may be at the rail still needs its
// inquiry.
func (r *Relayer) putBack(c claimed, inquiry Outcome, why string) outcome {
	return outcome{c: c, state: StateRetryable, code: CodeNotSent, text: why, inquiry: inquiry,
		requeueAfter: 0, requeueInquire: c.inquire}
}

// call runs one rail call with the hard timeout. A Sender that does not
// return by its deadline (plus a grace) is abandoned and the outcome is
// Unknown; a panicking one is Unknown too. Either way the message is
// inquired about, never resent blindly.
func (r *Relayer) call(ctx context.Context, m Message, kind string, f func(context.Context, Message) Result) (Result, time.Duration) {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.RailTimeout)
	defer cancel()
	var span trace.Span
	if r.cfg.Tracer != nil {
		cctx, span = r.startSpan(cctx, m, kind)
	}
	start := time.Now()
	done := make(chan Result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- Result{Outcome: Unknown, Code: "SENDER_PANIC", Message: fmt.Sprint(p)}
			}
		}()
		done <- f(cctx, m)
	}()
	grace := time.NewTimer(r.cfg.RailTimeout + r.cfg.RailTimeout/10)
	defer grace.Stop()
	var res Result
	select {
	case res = <-done:
	case <-grace.C:
		res = Result{Outcome: Unknown, Code: "TIMEOUT", Message: fmt.Sprintf("%s: no answer within %v", kind, r.cfg.RailTimeout)}
	}
	took := time.Since(start)
	r.m.railCall(m.RailType, kind, took)
	if span != nil {
		endSpan(span, kind, res)
	}
	return res, took
}

// startSpan starts a rail call's span: outbox.send or outbox.inquire, the
// child of the trace context the message was enqueued with (a root span
// when it has none).
func (r *Relayer) startSpan(ctx context.Context, m Message, kind string) (context.Context, trace.Span) {
	if m.TraceParent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": m.TraceParent})
	}
	return r.cfg.Tracer.Start(ctx, "outbox."+kind, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("outbox.id", m.OutboxID.String()),
		attribute.String("outbox.instruction_id", m.InstructionID),
		attribute.String("outbox.participant_id", m.ParticipantID),
		attribute.Int64("outbox.sequence_id", m.SequenceID),
		attribute.String("outbox.rail_type", m.RailType),
		attribute.Int("outbox.attempt", m.Attempt),
		attribute.String("outbox.relayer_id", r.cfg.ID)))
}

// endSpan records a rail call's outcome on its span and ends it. An
// outcome other than delivered (or, for an inquiry, not received) is an
// error on the span.
func endSpan(span trace.Span, kind string, res Result) {
	span.SetAttributes(attribute.String("outbox.outcome", string(res.Outcome)))
	if res.Code != "" {
		span.SetAttributes(attribute.String("outbox.rail_code", res.Code))
	}
	if res.Outcome != Delivered && (kind != "inquire" || res.Outcome != NotReceived) {
		span.SetStatus(codes.Error, string(res.Outcome)+": "+res.Message)
	}
	span.End()
}

// acquire takes a slot of the message's rail, then a global one (in that
// order, so that calls waiting for a busy rail hold no global slot).
func (r *Relayer) acquire(ctx context.Context, rail string) (release func(), err error) {
	rs := r.railSlots(rail)
	select {
	case rs <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r.global <- struct{}{}:
	case <-ctx.Done():
		<-rs
		return nil, ctx.Err()
	}
	return func() { <-r.global; <-rs }, nil
}

func (r *Relayer) railSlots(rail string) chan struct{} {
	r.railsMu.Lock()
	defer r.railsMu.Unlock()
	s, ok := r.rails[rail]
	if !ok {
		s = make(chan struct{}, r.cfg.railLimit(rail))
		r.rails[rail] = s
	}
	return s
}

// backoff is the delay before attempt n+1: BackoffBase·2^(n−1), capped at
// BackoffMax, less up to BackoffJitter of it (u in [0, 1)). With jitter
// below one half each delay stays above the previous one until the cap.
func (c Config) backoff(attempt int, u float64) time.Duration {
	d := c.BackoffBase
	for i := 1; i < attempt && d < c.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.BackoffMax)
	return d - time.Duration(float64(d)*c.BackoffJitter*u)
}
