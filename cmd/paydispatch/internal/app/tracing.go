package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Tracing is a process's OpenTelemetry traces, configured by the
// standard OTEL_* variables and off unless OTEL_TRACES_EXPORTER names an
// exporter. Off, nothing is traced and nothing is spent: no provider, no
// Temporal interceptor, no HTTP middleware, no trace context stored.
type Tracing struct {
	// Provider is the tracer provider, nil when tracing is off.
	Provider trace.TracerProvider
	// Exporters are the exporters OTEL_TRACES_EXPORTER named (empty: off).
	Exporters []string
	sdk       *sdktrace.TracerProvider
}

// ErrTracingConfig: an OTEL_* variable has a value tracing cannot use.
var ErrTracingConfig = errors.New("tracing")

// StartTracing sets up traces as the environment says (getenv, for
// OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_PROTOCOL,
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL and OTEL_SERVICE_NAME; the
// exporters and the SDK read the rest of the standard variables, such as
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_TRACES_SAMPLER and OTEL_RESOURCE_ATTRIBUTES, from the process's
// environment):
//
//   - OTEL_TRACES_EXPORTER unset, empty or "none" (the default), or
//     OTEL_SDK_DISABLED=true: off;
//   - "otlp": OTLP over HTTP/protobuf (the standard's default), or gRPC
//     when the protocol variable says "grpc";
//   - "console": spans printed as JSON to console (the process's standard
//     output);
//   - several, comma-separated: each of them.
//
// The service is OTEL_SERVICE_NAME, else "paydispatch"; role (serve,
// worker, relay) and version are attributes of it. On, the provider and
// the W3C trace-context propagator also become OpenTelemetry's globals.
// An unknown exporter or protocol is an error wrapping ErrTracingConfig,
// before anything starts.
func StartTracing(ctx context.Context, getenv func(string) string, role, version string, console io.Writer, log *slog.Logger) (*Tracing, error) {
	t := &Tracing{}
	names, protocol, err := tracingSettings(getenv)
	if err != nil || len(names) == 0 {
		return t, err
	}
	var exporters []sdktrace.SpanExporter
	for _, name := range names {
		var exp sdktrace.SpanExporter
		switch {
		case name == "console":
			exp, err = stdouttrace.New(stdouttrace.WithWriter(console))
		case protocol == "grpc":
			exp, err = otlptracegrpc.New(ctx)
		default:
			exp, err = otlptracehttp.New(ctx)
		}
		if err != nil {
			return t, fmt.Errorf("tracing: the %s exporter: %w", name, err)
		}
		exporters = append(exporters, exp)
	}
	service := getenv("OTEL_SERVICE_NAME")
	if service == "" {
		service = "paydispatch"
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (WithFromEnv) win
	// over these.
	res, err := resource.New(ctx, resource.WithAttributes(
		attribute.String("service.name", service), attribute.String("service.version", version),
		attribute.String("paydispatch.role", role)), resource.WithFromEnv())
	if err != nil {
		return t, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES: %w", ErrTracingConfig, err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, exp := range exporters {
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	t.sdk = sdktrace.NewTracerProvider(opts...)
	t.Provider, t.Exporters = t.sdk, names
	otel.SetTracerProvider(t.sdk)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	log.Info("tracing on", "exporters", strings.Join(names, ","), "protocol", protocol, "service", service)
	return t, nil
}

// tracingSettings reads which exporters OTEL_TRACES_EXPORTER names (none:
// off) and the OTLP protocol.
func tracingSettings(getenv func(string) string) (names []string, protocol string, err error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, "", nil
	}
	for _, n := range strings.Split(getenv("OTEL_TRACES_EXPORTER"), ",") {
		switch n = strings.ToLower(strings.TrimSpace(n)); n {
		case "", "none":
		case "otlp", "console":
			names = append(names, n)
		default:
			return nil, "", fmt.Errorf("%w: OTEL_TRACES_EXPORTER %q: want otlp, console or none (unset: none)", ErrTracingConfig, n)
		}
	}
	protocol = getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "":
		protocol = "http/protobuf"
	case "http/protobuf", "grpc":
	default:
		return nil, "", fmt.Errorf("%w: OTEL_EXPORTER_OTLP_PROTOCOL %q: want http/protobuf (the default) or grpc", ErrTracingConfig, protocol)
	}
	return names, protocol, nil
}

// On says whether traces are on.
func (t *Tracing) On() bool { return t != nil && t.Provider != nil }

// TracerProvider is the provider, nil when traces are off (for
// temporal.Options and RelayConfig).
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if !t.On() {
		return nil
	}
	return t.Provider
}

// Stop flushes the spans not yet exported (for up to 5 s) and stops the
// exporters; off, it does nothing. Call it once every role has stopped.
func (t *Tracing) Stop() {
	if t == nil || t.sdk == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.sdk.Shutdown(ctx)
}

// TraceHTTP gives each request h serves a server span (otelhttp), the
// child of the trace context the request carries in a W3C traceparent
// header, if any, and named "<method> <route>" by route (the pattern
// the request matches; "" leaves the method alone). nil tp (traces off):
// h as it is.
func TraceHTTP(tp trace.TracerProvider, h http.Handler, route func(*http.Request) string) http.Handler {
	if tp == nil {
		return h
	}
	return otelhttp.NewHandler(h, "paydispatch.api",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if route != nil {
				if p := route(r); p != "" {
					// A ServeMux pattern: "POST /v1/payments" (a method of
					// its own), or "/x" (any method).
					if strings.Contains(p, " ") {
						return p
					}
					return r.Method + " " + p
				}
			}
			return r.Method
		}))
}

// TracerOf is tp's tracer for a package of this module, nil when tp is
// (traces off).
func TracerOf(tp trace.TracerProvider, pkg string) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer("github.com/paydispatch/paydispatch/" + pkg)
}
