package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/kafka"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
)

// flaky loses some of its sends' answers, after sending or without
// sending: the outbox must send again, in order.
type flaky struct {
	*kafka.EventSender
	mu  sync.Mutex
	rnd *rand.Rand
}

func (f *flaky) Send(ctx context.Context, m outbox.Message) outbox.Result {
	f.mu.Lock()
	x := f.rnd.IntN(10)
	f.mu.Unlock()
	switch x {
	case 0:
		return outbox.Result{Outcome: outbox.Unknown, Code: "LOST_BEFORE"}
	case 1:
		f.EventSender.Send(ctx, m)
		return outbox.Result{Outcome: outbox.Unknown, Code: "LOST_AFTER"}
	}
	return f.EventSender.Send(ctx, m)
}

// SendBatch loses some calls' answers, after sending or without sending,
// as Send does: the whole lane's batch goes again.
func (f *flaky) SendBatch(ctx context.Context, ms []outbox.Message) []outbox.Result {
	f.mu.Lock()
	x := f.rnd.IntN(10)
	f.mu.Unlock()
	lost := func(code string) []outbox.Result {
		res := make([]outbox.Result, len(ms))
		for i := range res {
			res[i] = outbox.Result{Outcome: outbox.Unknown, Code: code}
		}
		return res
	}
	switch x {
	case 0:
		return lost("LOST_BEFORE")
	case 1:
		f.EventSender.SendBatch(ctx, ms)
		return lost("LOST_AFTER")
	}
	return f.EventSender.SendBatch(ctx, ms)
}

// TestEventSenderSendBatch: a lane's events of several payments,
// interleaved, go out in one call: each gets its own result (an invalid
// one Terminal, the others Delivered at their offset), and each payment's
// events are on the topic in the order given.
func TestEventSenderSendBatch(t *testing.T) {
	t.Parallel()
	cl, err := kafka.StartEmbedded(0, 4, "payment-events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	sender, err := kafka.NewEventSender(cl.Brokers(), "payment-events", payment.EventRailType)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	if !sender.Batches(payment.EventRailType) || sender.Batches("OTHER") {
		t.Fatal("the sender batches its own rail type only")
	}
	statuses := []string{"SCHEDULED", "ACCEPTED", "PROCESSING", "DELIVERED"}
	const payments = 12
	var ms []outbox.Message
	for _, st := range statuses {
		for p := range payments {
			id := fmt.Sprintf("ev-%02d-%s", p, st)
			ms = append(ms, outbox.Message{IdempotencyKey: id, SequenceID: int64(len(ms) + 1), RailType: payment.EventRailType,
				Payload: []byte(fmt.Sprintf(`{"id":%q,"type":"payment.status","tenantId":"acme","data":{"paymentId":"p-%02d","status":%q}}`, id, p, st))})
		}
	}
	bad := 5
	ms[bad].Payload = []byte(`{"id":"x"}`)
	res := sender.SendBatch(context.Background(), ms)
	if len(res) != len(ms) {
		t.Fatalf("%d results for %d messages", len(res), len(ms))
	}
	for i, r := range res {
		want := outbox.Delivered
		if i == bad {
			want = outbox.Terminal
		}
		if r.Outcome != want || (want == outbox.Delivered && !strings.HasPrefix(r.Reference, "payment-events/")) {
			t.Fatalf("message %d: %+v, want %s", i, r, want)
		}
	}
	byKey := map[string][]string{}
	for _, rec := range consume(t, cl.Brokers(), "payment-events", len(ms)-1, 10*time.Second) {
		var ev struct {
			Data struct{ Status string } `json:"data"`
		}
		if err := json.Unmarshal(rec.Value, &ev); err != nil {
			t.Fatal(err)
		}
		byKey[string(rec.Key)] = append(byKey[string(rec.Key)], ev.Data.Status)
	}
	for p := range payments {
		key := fmt.Sprintf("acme/p-%02d", p)
		want := statuses
		if p == bad {
			want = statuses[1:]
		}
		if fmt.Sprint(byKey[key]) != fmt.Sprint(want) {
			t.Fatalf("%s: %v, want %v", key, byKey[key], want)
		}
	}
}

// TestEventStream: with the stream on, every status change of every
// payment — Phase A's SCHEDULED, then three more made concurrently by 16
// goroutines — reaches the topic, keyed by the payment, each payment's in
// the order they were made, though a fifth of the sends lose their
// answer (and half of those were sent: duplicates, never gaps).
func TestEventStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	s := newStack(t, true)
	ctx := context.Background()
	if err := s.svc.Store().StartEventStream(ctx, 8); err != nil {
		t.Fatal(err)
	}
	sender, err := kafka.NewEventSender(s.cluster.Brokers(), "payment-events", payment.EventRailType)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	r, err := outbox.New(outbox.Config{Pool: s.pool, Sender: &flaky{EventSender: sender, rnd: rand.New(rand.NewPCG(1, 2))},
		BackoffBase: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	defer func() { stop(); <-done }()

	const n = 400
	at := time.Now().Add(time.Hour)
	reqs := make([]payment.Request, n)
	for i := range reqs {
		if err := json.Unmarshal([]byte(request(fmt.Sprintf("ev-%03d", i), at)), &reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.svc.StartBatch(ctx, reqs, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "400 payments scheduled", func() bool { return statuses(t, s.pool)["SCHEDULED"] == n })
	later := []string{"ACCEPTED", "PROCESSING", "FAILED"}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < n; i += 16 {
				for _, st := range later {
					if _, err := s.pool.Exec(ctx, `UPDATE payments SET status = $1 WHERE payment_id = $2`, st,
						payment.Key("acme", reqs[i].PaymentID)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()

	want := append([]string{"SCHEDULED"}, later...)
	type seen struct {
		ids      map[string]bool
		statuses []string
	}
	byKey := map[string]*seen{}
	complete := 0
	for deadline := time.Now().Add(2 * time.Minute); complete < n && time.Now().Before(deadline); {
		complete = 0
		byKey = map[string]*seen{}
		for _, rec := range consume(t, s.cluster.Brokers(), "payment-events", n*len(want), 5*time.Second) {
			var ev struct {
				ID   string `json:"id"`
				Data struct {
					Status, PaymentID string
				} `json:"data"`
			}
			if err := json.Unmarshal(rec.Value, &ev); err != nil {
				t.Fatal(err)
			}
			if string(rec.Key) != "acme/"+ev.Data.PaymentID || header(rec, kafka.HeaderEventID) != ev.ID {
				t.Fatalf("event %s keyed %q, id header %q", rec.Value, rec.Key, header(rec, kafka.HeaderEventID))
			}
			k := byKey[string(rec.Key)]
			if k == nil {
				k = &seen{ids: map[string]bool{}}
				byKey[string(rec.Key)] = k
			}
			if !k.ids[ev.ID] {
				k.ids[ev.ID] = true
				k.statuses = append(k.statuses, ev.Data.Status)
			}
		}
		for _, k := range byKey {
			if len(k.statuses) == len(want) {
				complete++
			}
		}
	}
	if len(byKey) != n {
		t.Fatalf("events of %d payments, want %d", len(byKey), n)
	}
	for key, k := range byKey {
		if fmt.Sprint(k.statuses) != fmt.Sprint(want) {
			t.Fatalf("%s: events %v, want %v in that order", key, k.statuses, want)
		}
	}
}
