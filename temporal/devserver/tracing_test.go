package devserver_test

import (
	"context"
	"testing"

	"github.com/paydispatch/paydispatch/temporal/devserver"
)

// TestServerLeavesTheTracesExporterAlone: OTEL_TRACES_EXPORTER sets
// paydispatch's traces; the embedded server exports none of its own and
// starts whatever it says (Temporal's server alone refuses "console").
func TestServerLeavesTheTracesExporterAlone(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
	srv, err := devserver.Start(context.Background(), devserver.Options{LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
}
