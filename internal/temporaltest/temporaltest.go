// Package temporaltest starts Temporal's own server in process for
// integration tests, with a client on it; both stop when the test ends.
package temporaltest

import (
	"context"
	"log/slog"
	"testing"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/paydispatch/paydispatch/temporal/devserver"
)

// Start runs a server (namespace "default", in-memory store) and dials it.
func Start(t testing.TB) (*devserver.Server, client.Client) {
	t.Helper()
	srv, err := devserver.Start(context.Background(), devserver.Options{LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return srv, c
}
