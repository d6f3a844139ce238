package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/outbox/outboxtest"
)

// TestSendSpansFollowTheTraceParent: an instruction's trace context,
// given at the enqueue (single or batch), stays with it through a
// requeue after a retryable failure, a reaped claim and a dead letter
// and its requeue; each rail call's span (outbox.send, outbox.inquire)
// is the child of the enqueuer's span, and the Sender's context holds
// it. An instruction without one gets root spans.
func TestSendSpansFollowTheTraceParent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(ctx) }()
	_, parent := tp.Tracer("test").Start(ctx, "enqueuer")
	parent.End()
	psc := parent.SpanContext()
	traceParent := "00-" + psc.TraceID().String() + "-" + psc.SpanID().String() + "-01"

	traced := func(n int) outbox.Instruction {
		in := instruction("bank-trace", n)
		in.TraceParent = traceParent
		return in
	}
	single, batched, untraced, reaped, dead := traced(1), traced(2), instruction("bank-trace", 3), traced(4), traced(5)

	// A relayer that died after its claim: the reaper's requeue keeps the
	// trace context (from the DISPATCHING attempt).
	enqueue(t, pool, reaped)
	if msgs, err := outbox.ClaimOnly(ctx, pool, "dead-relayer", 10); err != nil || len(msgs) != 1 || msgs[0].TraceParent != traceParent {
		t.Fatalf("claim: %+v %v; want the instruction with its trace context", msgs, err)
	}
	if n, err := outbox.Reap(ctx, pool, 0, 10); err != nil || n != 1 {
		t.Fatalf("reap: %d %v", n, err)
	}
	pendingTraceParent := func(id string) string {
		t.Helper()
		var tp *string
		if err := pool.QueryRow(ctx, `SELECT traceparent FROM payment_outbox_pending WHERE instruction_id = $1`, id).Scan(&tp); err != nil {
			t.Fatal(err)
		}
		if tp == nil {
			return ""
		}
		return *tp
	}
	if got := pendingTraceParent(reaped.InstructionID); got != traceParent {
		t.Fatalf("reaped claim requeued with trace context %q, want %q", got, traceParent)
	}

	enqueue(t, pool, single)
	outboxtest.Enqueue(t, pool, []outbox.Instruction{batched, untraced, dead})
	if got := pendingTraceParent(untraced.InstructionID); got != "" {
		t.Fatalf("an instruction enqueued without a trace context has %q", got)
	}

	rail := newFakeRail()
	var seenMu sync.Mutex
	seen := map[string][]trace.SpanContext{} // the Sender's context, per send
	rail.send = func(m outbox.Message, n int) (outbox.Result, bool) {
		switch {
		case m.InstructionID == single.InstructionID && n == 1:
			return outbox.Result{Outcome: outbox.Retryable, Code: "RAIL_BUSY"}, false
		case m.InstructionID == dead.InstructionID:
			return outbox.Result{Outcome: outbox.Terminal, Code: "AC01", Message: "refused"}, false
		}
		return outbox.Result{Outcome: outbox.Delivered, Reference: "REF-" + m.IdempotencyKey}, true
	}
	cfg := fastConfig(pool, spanSender{rail, func(ctx context.Context, m outbox.Message) {
		seenMu.Lock()
		defer seenMu.Unlock()
		seen[m.InstructionID] = append(seen[m.InstructionID], trace.SpanContextFromContext(ctx))
	}})
	cfg.Tracer = tp.Tracer("github.com/paydispatch/paydispatch/outbox")
	stop := startRelayer(t, cfg)
	for _, in := range []outbox.Instruction{single, batched, untraced, reaped} {
		eventually(t, 30*time.Second, in.InstructionID+" delivered", func() bool {
			return lastState(t, pool, in.InstructionID) == outbox.StateDispatched
		})
	}
	eventually(t, 30*time.Second, "the refused instruction dead", func() bool {
		return lastState(t, pool, dead.InstructionID) == outbox.StateFailed
	})
	stop()

	spans := map[string][]tracetest.SpanStub{} // by instruction
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == "outbox.instruction_id" {
				spans[a.Value.AsString()] = append(spans[a.Value.AsString()], s)
			}
		}
	}
	for _, c := range []struct {
		in        outbox.Instruction
		sends     int
		inquiries int
		traced    bool
		outcome   outbox.Outcome // of the last send
	}{
		{single, 2, 0, true, outbox.Delivered}, {batched, 1, 0, true, outbox.Delivered}, {untraced, 1, 0, false, outbox.Delivered},
		{reaped, 1, 1, true, outbox.Delivered}, {dead, 1, 0, true, outbox.Terminal},
	} {
		got := map[string]int{}
		for _, s := range spans[c.in.InstructionID] {
			got[s.Name]++
			if s.SpanKind != trace.SpanKindClient {
				t.Errorf("%s: span %s of kind %v, want client", c.in.InstructionID, s.Name, s.SpanKind)
			}
			switch {
			case c.traced && (s.Parent.SpanID() != psc.SpanID() || s.SpanContext.TraceID() != psc.TraceID()):
				t.Errorf("%s: span %s has parent %s in trace %s, want %s in %s", c.in.InstructionID, s.Name,
					s.Parent.SpanID(), s.SpanContext.TraceID(), psc.SpanID(), psc.TraceID())
			case !c.traced && (s.Parent.IsValid() || s.SpanContext.TraceID() == psc.TraceID()):
				t.Errorf("%s: span %s has a parent (%s) without a trace context", c.in.InstructionID, s.Name, s.Parent.SpanID())
			}
			outcome := ""
			for _, a := range s.Attributes {
				if a.Key == "outbox.outcome" {
					outcome = a.Value.AsString()
				}
			}
			got[s.Name+" "+outcome]++
			if s.Name == "outbox.send" && (outcome != string(outbox.Delivered)) != (s.Status.Code == codes.Error) {
				t.Errorf("%s: send span with outcome %s has status %v", c.in.InstructionID, outcome, s.Status)
			}
		}
		if got["outbox.send"] != c.sends || got["outbox.inquire"] != c.inquiries || got["outbox.send "+string(c.outcome)] == 0 {
			t.Errorf("%s: spans %v, want %d outbox.send (the last %s) and %d outbox.inquire", c.in.InstructionID, got, c.sends, c.outcome, c.inquiries)
		}
		// The Sender ran inside its span.
		seenMu.Lock()
		for i, sc := range seen[c.in.InstructionID] {
			if !sc.IsValid() || (c.traced && sc.TraceID() != psc.TraceID()) {
				t.Errorf("%s: send %d ran in span context %v", c.in.InstructionID, i+1, sc)
			}
		}
		seenMu.Unlock()
	}

	// The dead letter keeps it, and an operator's requeue puts it back.
	var deadID uuid.UUID
	var deadTP *string
	if err := pool.QueryRow(ctx, `SELECT outbox_id, traceparent FROM payment_outbox_dead_letters WHERE instruction_id = $1`,
		dead.InstructionID).Scan(&deadID, &deadTP); err != nil || deadTP == nil || *deadTP != traceParent {
		t.Fatalf("dead letter's trace context %v (%v), want %q", deadTP, err, traceParent)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := outbox.RequeueDeadLetters(ctx, tx, outbox.Hooks{}, []outbox.Requeue{{OutboxID: deadID, At: time.Now().Add(time.Hour)}}, "test")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := pendingTraceParent(dead.InstructionID); got != traceParent {
		t.Fatalf("requeued dead letter's trace context %q, want %q", got, traceParent)
	}
}

// spanSender is a Sender that reports the context each send ran in.
type spanSender struct {
	*fakeRail
	saw func(context.Context, outbox.Message)
}

func (s spanSender) Send(ctx context.Context, m outbox.Message) outbox.Result {
	s.saw(ctx, m)
	return s.fakeRail.Send(ctx, m)
}
