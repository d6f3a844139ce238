// Package temporaltest starts Temporal's own server in process for
// integration tests, with a client on it; both stop when the test ends
// (Start), or when the caller says (Open).
package temporaltest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/proto"

	"github.com/paydispatch/paydispatch/temporal/devserver"
)

// Start runs a server (namespace "default", in-memory store) and dials it.
func Start(t testing.TB) (*devserver.Server, client.Client) {
	t.Helper()
	srv, c, stop, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return srv, c
}

// Open is Start for code with no testing.TB (a runnable example, a server
// shared by a package's tests): the server, a client on it, and the
// function that closes both.
func Open() (*devserver.Server, client.Client, func(), error) {
	srv, err := devserver.Start(context.Background(), devserver.Options{LogLevel: "fatal"})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("temporaltest: start: %w", err)
	}
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		_ = srv.Stop()
		return nil, nil, nil, fmt.Errorf("temporaltest: dial: %w", err)
	}
	return srv, c, func() { c.Close(); _ = srv.Stop() }, nil
}

// CountEvents reads a workflow's history (its latest run) and counts its
// events by type.
func CountEvents(t testing.TB, c client.Client, workflowID string) map[enumspb.EventType]int {
	t.Helper()
	n := map[enumspb.EventType]int{}
	for it := c.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT); it.HasNext(); {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", workflowID, err)
		}
		n[ev.GetEventType()]++
	}
	return n
}

// HistoryHolds reports whether any event of a workflow's history (its
// latest run), payloads included, holds the bytes of s.
func HistoryHolds(t testing.TB, c client.Client, workflowID, s string) bool {
	t.Helper()
	for it := c.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT); it.HasNext(); {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", workflowID, err)
		}
		raw, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(s)) {
			return true
		}
	}
	return false
}
