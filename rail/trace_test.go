package rail_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/paydispatch/paydispatch/outbox"
)

// TestRailTraceParent: a send and an inquiry made inside a span (the
// relayer's, when tracing is on) carry it in a W3C traceparent header;
// made outside one, they carry none.
func TestRailTraceParent(t *testing.T) {
	t.Parallel()
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	const want = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, kind := range railKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			seen := make(chan string, 4)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen <- r.Method + " " + r.Header.Get("traceparent")
				if r.Method == http.MethodGet {
					w.WriteHeader(http.StatusNotFound)
					_, _ = w.Write([]byte(`{"code":"NOT_FOUND"}`))
					return
				}
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(`{"status":"ACCEPTED","reference":"R"}`))
			}))
			t.Cleanup(srv.Close)
			r := kind.build(t, srv.URL, 0)
			m := message(kind, "pay-1", 1)
			for _, c := range []struct {
				ctx  context.Context
				want string
			}{{trace.ContextWithSpanContext(t.Context(), sc), want}, {t.Context(), ""}} {
				if got := r.Send(c.ctx, m); got.Outcome != outbox.Delivered {
					t.Fatalf("send: %+v", got)
				}
				r.Inquire(c.ctx, m)
				for _, method := range []string{"POST", "GET"} {
					if got := <-seen; got != method+" "+c.want {
						t.Errorf("%q, want %q", got, method+" "+c.want)
					}
				}
			}
		})
	}
}
