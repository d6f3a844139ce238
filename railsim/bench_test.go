package railsim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// The simulator alone: handler, decoding, validation and ledger, with no
// network. Run with: go test -run '^$' -bench . ./railsim/
func BenchmarkHandlerSend(b *testing.B) {
	sim := railsim.New(railsim.Options{})
	h := sim.Handler()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			key := "k" + strconv.FormatInt(n, 10)
			part := "p" + strconv.FormatInt(n%8, 10)
			body, _ := json.Marshal(rail.JSONRequest{Instruction: instruction(key, "INV"), ParticipantID: part, SequenceID: n})
			req := httptest.NewRequest(http.MethodPost, rail.PathInstructions, bytes.NewReader(body))
			req.Header.Set(rail.HeaderIdempotencyKey, key)
			req.Header.Set(rail.HeaderParticipantID, part)
			req.Header.Set(rail.HeaderSequenceID, strconv.FormatInt(n, 10))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusCreated {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
		}
	})
	if l := sim.Ledger(); l.Unique != int64(b.N) {
		b.Fatalf("ledger %+v after %d sends", l, b.N)
	}
}

// rail.HTTPRail against the simulator over loopback: the path a relayer
// takes, connection pool included. Reports sends per second.
func BenchmarkLoopbackJSONRail(b *testing.B) {
	benchmarkLoopback(b, rail.RailSEPAJSON)
}

func BenchmarkLoopbackPacs008Rail(b *testing.B) {
	benchmarkLoopback(b, rail.RailPacs008)
}

func benchmarkLoopback(b *testing.B, railType string) {
	sim := railsim.New(railsim.Options{})
	url, stop, err := sim.Start(b.Context(), "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	var r rail.Rail
	if railType == rail.RailPacs008 {
		r, err = rail.NewPacs008Rail(rail.Pacs008Config{Config: rail.Config{BaseURL: url}})
	} else {
		r, err = rail.NewHTTPRail(rail.Config{BaseURL: url})
	}
	if err != nil {
		b.Fatal(err)
	}
	payload, _ := json.Marshal(instruction("pay-1", "INV"))
	var next atomic.Int64
	b.SetParallelism(8) // a relayer keeps many calls in flight
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			m := outbox.Message{
				ParticipantID:  fmt.Sprintf("p%d", n%8),
				SequenceID:     n,
				IdempotencyKey: "k" + strconv.FormatInt(n, 10),
				RailType:       railType,
				Payload:        payload,
				Attempt:        1,
			}
			if res := r.Send(b.Context(), m); res.Outcome != outbox.Delivered {
				b.Fatalf("%+v", res)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sends/s")
	if l := sim.Ledger(); l.Unique != int64(b.N) || l.Duplicates != 0 {
		b.Fatalf("ledger %+v after %d sends", l, b.N)
	}
}
