package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/railsim"
	"github.com/paydispatch/paydispatch/temporal"
)

// TestOnePaymentOneTrace: one payment posted over HTTP to a handler, the
// workers, the dispatcher and a relayer wired as serve wires them with
// tracing on (spans kept in memory) is DELIVERED in one trace: the HTTP
// request's span, Phase A's workflow and activity spans (Temporal's
// interceptor), the execution's span (a child of Phase A's, through the
// trace context stored with the payment, although the dispatcher's
// workflow runs it) and the relayer's send span (a child of the
// execution's, through the outbox row) share the request's trace id.
func TestOnePaymentOneTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(ctx) })

	pool := pgtest.NewPool(t)
	srv, plain := temporaltest.Start(t)
	ti, err := temporal.TracingInterceptor(tp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewClientFromExisting(plain, client.Options{Namespace: "default", Interceptors: []interceptor.ClientInterceptor{ti},
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	tc := &temporal.Conn{Client: c, Address: srv.HostPort(), Namespace: "default", TracerProvider: tp}
	db := &postgres.DB{Pool: pool}
	log := slog.New(slog.DiscardHandler)
	if _, err := app.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.New(pool).UpdateConfig(ctx, payment.ItemType, map[string]string{"dispatch_interval_secs": "1"}); err != nil {
		t.Fatal(err)
	}
	startRoles(t, db, tc, log)
	railURL, stopSim, err := app.StartRailSim(ctx, "127.0.0.1:0", railsim.Options{}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopSim)
	stopRelay, err := app.StartRelayer(ctx, db, app.RelayConfig{
		RailURL: railURL, RailTimeout: 2 * time.Second, TracerProvider: tp,
		Relayer: outbox.Config{PollInterval: 50 * time.Millisecond, Debounce: 5 * time.Millisecond},
	}, payment.OutboxHooks(), nil, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopRelay)
	openAccounts(t, pool, "acme")

	router, err := httpapi.NewRouter(httpapi.RouterConfig{Log: log, Services: httpapi.Services{Payments: app.PaymentService(db, tc, payment.ServiceConfig{})}})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(app.TraceHTTP(tp, router, router.Route))
	t.Cleanup(api.Close)
	due := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339)
	resp, err := http.Post(api.URL+"/v1/payments", "application/json", strings.NewReader(`{"paymentId":"pay-traced","tenantId":"acme",
		"debtorAccount":"ACC-acme","amount":"12.50","currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},
		"requestedExecutionTime":"`+due+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/payments: %d %s", resp.StatusCode, body)
	}

	for deadline := time.Now().Add(2 * time.Minute); ; {
		var status string
		if err := pool.QueryRow(ctx, `SELECT coalesce((SELECT status FROM payments WHERE external_id = 'pay-traced'), '')`).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status == string(payment.StatusDelivered) || status == string(payment.StatusProcessing) {
			if spansOf(exp, "outbox.send") != nil && spansOf(exp, "payment.execute") != nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 min: payment %q; spans %v", status, names(exp.GetSpans()))
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Logf("span names: %v", names(exp.GetSpans()))
	requests := spansOf(exp, "POST /v1/payments")
	if len(requests) != 1 || requests[0].SpanKind != trace.SpanKindServer {
		t.Fatalf("HTTP request spans %v, want one server span named POST /v1/payments; all spans: %v", requests, names(exp.GetSpans()))
	}
	traceID := requests[0].SpanContext.TraceID()
	inTrace := func(name string) []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, s := range spansOf(exp, name) {
			if s.SpanContext.TraceID() == traceID {
				out = append(out, s)
			}
		}
		if len(out) == 0 {
			var traces []string
			for _, s := range spansOf(exp, name) {
				traces = append(traces, s.SpanContext.TraceID().String())
			}
			t.Errorf("no %s span in the request's trace %s (in traces %v)", name, traceID, traces)
		}
		return out
	}
	for _, name := range []string{"StartWorkflow:" + payment.PhaseAWorkflowName, "RunWorkflow:" + payment.PhaseAWorkflowName, "StartActivity:InitIntake"} {
		inTrace(name)
	}
	phaseA, execs, sends := inTrace("RunActivity:InitIntake"), inTrace("payment.execute"), inTrace("outbox.send")
	if t.Failed() {
		t.FailNow()
	}
	// The stored trace contexts make the chain: Phase A's activity →
	// the execution → the send.
	if exec := execs[0]; exec.Parent.SpanID() != phaseA[0].SpanContext.SpanID() || !exec.Parent.IsRemote() {
		t.Errorf("payment.execute's parent is %s (remote %v), want Phase A's activity span %s",
			exec.Parent.SpanID(), exec.Parent.IsRemote(), phaseA[0].SpanContext.SpanID())
	}
	if len(execs[0].Links) != 1 || execs[0].Links[0].SpanContext.TraceID() == traceID {
		t.Errorf("payment.execute links %v, want one to the engine's span in the dispatcher's trace", execs[0].Links)
	}
	if send := sends[0]; send.Parent.SpanID() != execs[0].SpanContext.SpanID() {
		t.Errorf("outbox.send's parent is %s, want payment.execute %s", send.Parent.SpanID(), execs[0].SpanContext.SpanID())
	}
	var stored, outboxed string
	if err := pool.QueryRow(ctx, `SELECT (SELECT context->>'traceparent' FROM payments WHERE external_id = 'pay-traced'),
		(SELECT traceparent FROM payment_outbox_attempts WHERE state = 'DISPATCHING' LIMIT 1)`).Scan(&stored, &outboxed); err != nil {
		t.Fatal(err)
	}
	if want := "00-" + traceID.String() + "-" + phaseA[0].SpanContext.SpanID().String() + "-01"; stored != want {
		t.Errorf("the payment's stored traceparent %q, want %q", stored, want)
	}
	if want := "00-" + traceID.String() + "-" + execs[0].SpanContext.SpanID().String() + "-01"; outboxed != want {
		t.Errorf("the outbox's traceparent %q, want %q", outboxed, want)
	}
	verifyLedger(t, pool)
}

// spansOf are the exported spans named name (nil: none).
func spansOf(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// names are the spans' distinct names, sorted.
func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		if !slices.Contains(out, s.Name) {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestStartTracing: off unless OTEL_TRACES_EXPORTER names an exporter;
// an exporter or protocol it does not know is ErrTracingConfig; the
// console exporter prints the spans, under OTEL_SERVICE_NAME.
func TestStartTracing(t *testing.T) {
	ctx := context.Background()
	// On, StartTracing sets OpenTelemetry's globals: put them back.
	provider, propagator := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() { otel.SetTracerProvider(provider); otel.SetTextMapPropagator(propagator) })
	log := slog.New(slog.DiscardHandler)
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, e := range []func(string) string{env(), env("OTEL_TRACES_EXPORTER", "none"), env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_SDK_DISABLED", "true")} {
		tr, err := app.StartTracing(ctx, e, "serve", "test", io.Discard, log)
		if err != nil || tr.On() || tr.TracerProvider() != nil || app.TraceHTTP(tr.TracerProvider(), http.NotFoundHandler(), nil) == nil {
			t.Fatalf("off: %+v %v", tr, err)
		}
		tr.Stop()
	}
	for _, e := range []func(string) string{env("OTEL_TRACES_EXPORTER", "jaeger"), env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")} {
		if _, err := app.StartTracing(ctx, e, "serve", "test", io.Discard, log); !errors.Is(err, app.ErrTracingConfig) {
			t.Errorf("got %v, want ErrTracingConfig", err)
		}
	}
	for _, protocol := range []string{"", "grpc"} {
		tr, err := app.StartTracing(ctx, env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", protocol), "serve", "test", io.Discard, log)
		if err != nil || !tr.On() {
			t.Fatalf("otlp %q: %+v %v", protocol, tr, err)
		}
		// Nothing sent: no span was made (an exporter connects lazily).
		tr.Stop()
	}
	var out strings.Builder
	tr, err := app.StartTracing(ctx, env("OTEL_TRACES_EXPORTER", "console", "OTEL_SERVICE_NAME", "pd-test"), "relay", "test", &out, log)
	if err != nil || !tr.On() {
		t.Fatalf("console: %+v %v", tr, err)
	}
	_, span := app.TracerOf(tr.TracerProvider(), "outbox").Start(ctx, "outbox.send")
	span.End()
	tr.Stop()
	for _, want := range []string{`"Name":"outbox.send"`, `"Value":"pd-test"`, `"Value":"relay"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("console output lacks %s: %s", want, out.String())
		}
	}
}
