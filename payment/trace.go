package payment

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A payment's trace crosses two stores: Phase A keeps its trace context
// in the payment's context (Context.TraceParent), where the execution a
// dispatcher starts later picks it up, and the execution gives its own
// to the rail instruction it enqueues (outbox.Instruction.TraceParent),
// where the relayer picks it up. With tracing off neither is written and
// nothing is spent: no span in the context, an empty string.

// traceParent is the W3C traceparent of the span ctx holds, or "" when
// it holds none.
func traceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// executionSpan starts a payment's execution span, payment.execute, the
// child of the trace context Phase A stored with it, linked to the span
// of the workflow engine's activity that runs it (the dispatcher's
// trace). No tracer, or no stored trace context: ctx as it is and no
// span.
func (a *ExecActivities) executionSpan(ctx context.Context, in ExecutionInput, executionTime time.Time) (context.Context, trace.Span) {
	if a.cfg.Tracer == nil || in.Context.TraceParent == "" {
		return ctx, nil
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("payment.key", in.PaymentID),
		attribute.String("payment.tenant_id", in.Context.Request.TenantID),
		attribute.String("payment.execution_ref", in.Ref),
	)}
	if !in.NotBefore.IsZero() {
		opts = append(opts, trace.WithAttributes(attribute.String("payment.slot", in.NotBefore.UTC().Format(time.RFC3339Nano)),
			attribute.Int64("payment.lag_ms", executionTime.Sub(in.NotBefore).Milliseconds())))
	}
	if engine := trace.SpanContextFromContext(ctx); engine.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: engine}))
	}
	stored := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": in.Context.TraceParent})
	parent := trace.SpanContextFromContext(stored)
	if !parent.IsValid() {
		return ctx, nil // unreadable: no span rather than a stray trace
	}
	return a.cfg.Tracer.Start(trace.ContextWithRemoteSpanContext(ctx, parent), "payment.execute", opts...)
}

// endSpan ends an execution's span: done says the execution went
// through (or failed for good, FAILED with its code), not done that its
// process waits for its workflow.
func endSpan(span trace.Span, done bool, err error) {
	span.SetAttributes(attribute.Bool("payment.execution_done", done))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
