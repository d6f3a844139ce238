package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/webhook"
)

// open lets deliveries reach the tests' loopback receivers.
var open = webhook.Policy{AllowHTTP: true, AllowPrivate: true}

// receiver is a tenant's endpoint: it checks every delivery's signature,
// answers with status(n) to the n-th request (n from 1), and keeps, per
// subject, the sequence numbers of the events it accepted in the order
// they came.
type receiver struct {
	*httptest.Server
	secret   string
	status   func(n int64) int
	hold     chan struct{} // when set, a request waits for it to close
	requests atomic.Int64
	badSigs  atomic.Int64
	busy     atomic.Int64
	maxBusy  atomic.Int64

	// latency delays every answer; statusOf, when set, answers instead
	// of status, by the event's subject.
	latency  time.Duration
	statusOf func(subject string, n int64) int
	// inOrder: events are numbered from 0 in each subject, and a request
	// for one whose predecessor was not yet accepted counts as early, one
	// already accepted as again.
	inOrder bool

	mu           sync.Mutex
	accepted     map[string][]int
	early, again int
}

func newReceiver(t *testing.T, status func(n int64) int) *receiver {
	r := &receiver{status: status, accepted: map[string][]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	n := r.requests.Add(1)
	b := r.busy.Add(1)
	defer r.busy.Add(-1)
	for m := r.maxBusy.Load(); b > m && !r.maxBusy.CompareAndSwap(m, b); m = r.maxBusy.Load() {
	}
	body, _ := io.ReadAll(req.Body)
	if err := webhook.Verify(req.Header.Get(webhook.SignatureHeader), body, r.secret, webhook.DefaultTolerance, time.Now()); err != nil {
		r.badSigs.Add(1)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.hold != nil {
		<-r.hold
	}
	time.Sleep(r.latency)
	var ev struct {
		Subject string `json:"subject"`
		Seq     int    `json:"seq"`
	}
	_ = json.Unmarshal(body, &ev)
	code := r.status(n)
	if r.statusOf != nil {
		code = r.statusOf(ev.Subject, n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inOrder {
		// The subject's seq-th event may come only once the ones before
		// it were accepted; after that it is a redelivery.
		switch got := len(r.accepted[ev.Subject]); {
		case ev.Seq > got:
			r.early++
		case ev.Seq < got:
			r.again++
			code = http.StatusOK // accepted before: a receiver deduplicates
		}
	}
	if code < 300 && (!r.inOrder || ev.Seq == len(r.accepted[ev.Subject])) {
		r.accepted[ev.Subject] = append(r.accepted[ev.Subject], ev.Seq)
	}
	w.WriteHeader(code)
}

func (r *receiver) seqs(subject string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.accepted[subject]...)
}

func register(t *testing.T, pool *pgxpool.Pool, tenant string, r *receiver, types ...string) webhook.Endpoint {
	t.Helper()
	ep, secret, err := (webhook.NewStore(webhook.StoreConfig{DB: pool, Policy: open})).Register(context.Background(), webhook.NewEndpoint{TenantID: tenant, URL: r.URL, EventTypes: types})
	if err != nil {
		t.Fatal(err)
	}
	r.secret = secret
	return ep
}

// publish writes one round of events: the seq-th of each subject.
func publish(t *testing.T, pool *pgxpool.Pool, tenant, typ string, subjects []string, seq int) {
	t.Helper()
	events := make([]webhook.Event, len(subjects))
	for i, s := range subjects {
		payload, _ := json.Marshal(map[string]any{"id": uuid.New(), "subject": s, "seq": seq})
		events[i] = webhook.Event{TenantID: tenant, Subject: s, Type: typ, Payload: payload}
	}
	if _, err := webhook.Publish(context.Background(), pool, events); err != nil {
		t.Fatal(err)
	}
}

func startRelayer(t *testing.T, cfg webhook.Config) {
	t.Helper()
	r, err := webhook.NewRelayer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// states counts an endpoint's deliveries by state.
func states(t *testing.T, pool *pgxpool.Pool, ep uuid.UUID) map[string]int {
	t.Helper()
	out := map[string]int{}
	var before int64
	for {
		ds, err := (webhook.NewStore(webhook.StoreConfig{DB: pool})).Deliveries(context.Background(), ep, "", before, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			out[d.State]++
		}
		if len(ds) < 1000 {
			return out
		}
		before = ds[len(ds)-1].ID
	}
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fastConfig(pool *pgxpool.Pool) webhook.Config {
	return webhook.Config{Pool: pool, Policy: open, Timeout: 5 * time.Second, BackoffBase: 5 * time.Millisecond,
		BackoffMax: 40 * time.Millisecond, MaxAttempts: 50, Poll: 20 * time.Millisecond}
}

// TestDeliversInOrderThroughFailures: two relayers deliver 60 subjects'
// six events each to an endpoint that answers 500 to one request in
// five. Every request is signed, and each subject's events are accepted
// complete and in order; another tenant's endpoint and an endpoint that
// takes another type receive none of them.
func TestDeliversInOrderThroughFailures(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	flaky := newReceiver(t, func(n int64) int {
		if n%5 == 0 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	other := newReceiver(t, func(int64) int { return http.StatusOK })
	otherType := newReceiver(t, func(int64) int { return http.StatusOK })
	ep := register(t, pool, "t-1", flaky, "payment.delivered")
	register(t, pool, "t-2", other)
	register(t, pool, "t-1", otherType, "payment.cancelled")

	subjects := make([]string, 60)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("pay-%02d", i)
	}
	startRelayer(t, fastConfig(pool))
	startRelayer(t, fastConfig(pool))
	for seq := range 6 {
		publish(t, pool, "t-1", "payment.delivered", subjects, seq)
		time.Sleep(30 * time.Millisecond) // rounds overlap the deliveries of the ones before
	}
	waitFor(t, "all 360 deliveries made", 60*time.Second, func() bool { return states(t, pool, ep.ID)[webhook.StateDelivered] == 360 })

	for _, s := range subjects {
		if got := flaky.seqs(s); fmt.Sprint(got) != "[0 1 2 3 4 5]" {
			t.Errorf("subject %s: accepted %v, want [0 1 2 3 4 5]", s, got)
		}
	}
	if n := flaky.requests.Load(); n-n/5 != 360 {
		t.Errorf("%d requests, %d answered 500: want 360 accepted, each 500 retried", n, n/5)
	}
	if flaky.badSigs.Load() != 0 {
		t.Errorf("%d deliveries failed their signature", flaky.badSigs.Load())
	}
	if other.requests.Load()+otherType.requests.Load() != 0 {
		t.Errorf("another tenant's endpoint got %d, an endpoint of another type %d", other.requests.Load(), otherType.requests.Load())
	}
}

// TestSlowEndpointHoldsOnlyItsOwn: an endpoint that does not answer holds
// PerEndpoint deliveries in flight, while another tenant's endpoint gets
// all of its own; once it answers, its backlog goes out too.
func TestSlowEndpointHoldsOnlyItsOwn(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	slow := newReceiver(t, func(int64) int { return http.StatusOK })
	slow.hold = make(chan struct{})
	fast := newReceiver(t, func(int64) int { return http.StatusOK })
	slowEP := register(t, pool, "t-slow", slow)
	fastEP := register(t, pool, "t-fast", fast)

	subjects := make([]string, 40)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("pay-%02d", i)
	}
	cfg := fastConfig(pool)
	cfg.PerEndpoint, cfg.MaxInFlight, cfg.Timeout = 2, 8, 30*time.Second
	startRelayer(t, cfg)
	publish(t, pool, "t-slow", "payment.delivered", subjects, 0)
	publish(t, pool, "t-fast", "payment.delivered", subjects, 0)

	waitFor(t, "the fast endpoint's 40 deliveries made", 20*time.Second, func() bool {
		return states(t, pool, fastEP.ID)[webhook.StateDelivered] == 40
	})
	if got := states(t, pool, slowEP.ID); got[webhook.StateSending] != 2 || got[webhook.StatePending] != 38 {
		t.Errorf("the slow endpoint's deliveries: %v, want 2 SENDING and 38 PENDING", got)
	}
	close(slow.hold)
	waitFor(t, "the slow endpoint's 40 deliveries made", 20*time.Second, func() bool {
		return states(t, pool, slowEP.ID)[webhook.StateDelivered] == 40
	})
	if m := slow.maxBusy.Load(); m > 2 {
		t.Errorf("the slow endpoint had %d requests at once, want at most PerEndpoint (2)", m)
	}
}

// TestDeadLetterThenRedrive: a delivery out of attempts is a dead letter
// with the endpoint's last answer, no longer holds up its subject, and a
// redrive sends it again.
func TestDeadLetterThenRedrive(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	var down atomic.Bool
	down.Store(true)
	r := newReceiver(t, func(int64) int {
		if down.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	ep := register(t, pool, "t-1", r)
	cfg := fastConfig(pool)
	cfg.MaxAttempts = 3
	startRelayer(t, cfg)
	publish(t, pool, "t-1", "payment.failed", []string{"pay-1"}, 0)
	publish(t, pool, "t-1", "payment.failed", []string{"pay-1"}, 1)

	ctx := context.Background()
	waitFor(t, "both deliveries dead", 20*time.Second, func() bool { return states(t, pool, ep.ID)[webhook.StateDead] == 2 })
	dead, err := (webhook.NewStore(webhook.StoreConfig{DB: pool})).Deliveries(ctx, ep.ID, webhook.StateDead, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		if d.Attempts != 3 || d.LastStatus != http.StatusServiceUnavailable || !strings.Contains(d.LastError, "503") {
			t.Errorf("dead letter %+v: want 3 attempts and the 503", d)
		}
	}
	down.Store(false)
	if n, err := (webhook.NewStore(webhook.StoreConfig{DB: pool})).Redrive(ctx, ep.ID, []int64{dead[1].ID}); err != nil || n != 1 {
		t.Fatalf("Redrive = %d, %v; want 1", n, err)
	}
	waitFor(t, "the redriven delivery made", 20*time.Second, func() bool { return states(t, pool, ep.ID)[webhook.StateDelivered] == 1 })
	if got := r.seqs("pay-1"); fmt.Sprint(got) != "[0]" {
		t.Errorf("accepted %v after redriving the first event, want [0]", got)
	}
}

// TestLastErrorNamesNoAddress: what a failed delivery records, which its
// tenant reads as lastError, is the kind of failure (no public address,
// refused, timeout, TLS, the HTTP status) and never the address the
// endpoint's name resolved to, nor the endpoint's answer. Under the
// default policy a name that resolves to loopback (one that was public
// when registered: DNS rebinding) is refused when the delivery connects,
// with nothing sent; and it reads as a name that resolves to nothing
// would, so a tenant cannot tell which internal names exist.
func TestLastErrorNamesNoAddress(t *testing.T) {
	t.Parallel()
	local := func(rawURL string) string { return strings.Replace(rawURL, "127.0.0.1", "localhost", 1) }
	ok := newReceiver(t, func(int64) int { return http.StatusOK })
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream 10.9.8.7:5432 refused", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	tlsServer := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsServer.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	tlsServer.StartTLS()
	t.Cleanup(tlsServer.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	for _, tt := range []struct {
		name, url string
		policy    webhook.Policy
		want      string
	}{
		{"a name that resolves to loopback", local(ok.URL), webhook.Policy{AllowHTTP: true}, "does not resolve to a public address"},
		{"a name that resolves to nothing", "http://paydispatch-test.invalid/", open, "does not resolve to a public address"},
		{"refused", local("http://" + closed.Addr().String() + "/"), open, "connection refused"},
		{"no answer", local("http://" + silent.Addr().String() + "/"), open, "timeout"},
		{"no TLS", strings.Replace(local(ok.URL), "http://", "https://", 1), open, "TLS: "},
		{"an untrusted certificate", local(tlsServer.URL), open, "TLS: "},
		{"an error status", local(down.URL), open, "HTTP 503 Service Unavailable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			ctx := context.Background()
			ep, _, err := (webhook.NewStore(webhook.StoreConfig{DB: pool, Policy: open})).Register(ctx, webhook.NewEndpoint{TenantID: "t-1", URL: tt.url})
			if err != nil {
				t.Fatal(err)
			}
			before := ok.requests.Load()
			cfg := fastConfig(pool)
			cfg.Policy, cfg.MaxAttempts, cfg.Timeout = tt.policy, 1, time.Second
			startRelayer(t, cfg)
			publish(t, pool, "t-1", "payment.failed", []string{"pay-1"}, 0)
			waitFor(t, "the delivery dead", 20*time.Second, func() bool { return states(t, pool, ep.ID)[webhook.StateDead] == 1 })
			ds, err := (webhook.NewStore(webhook.StoreConfig{DB: pool})).Deliveries(ctx, ep.ID, "", 0, 1)
			if err != nil || len(ds) != 1 {
				t.Fatalf("deliveries %+v, %v", ds, err)
			}
			got := ds[0].LastError
			if !strings.Contains(got, tt.want) {
				t.Errorf("lastError %q, want %q in it", got, tt.want)
			}
			for _, leak := range []string{"127.0.0.1", "::1", "10.9.8.7", "dial", "lookup"} {
				if strings.Contains(got, leak) {
					t.Errorf("lastError %q shows %q", got, leak)
				}
			}
			if tt.policy != open && ok.requests.Load() != before {
				t.Errorf("%d requests reached the endpoint the policy refuses", ok.requests.Load()-before)
			}
		})
	}
}

// TestManyPaymentsInOrderUnderConcurrency: 300 payments' chains of four
// events each (published as a payment makes them: each after the one
// before, the chains interleaved) go to one endpoint that answers 503 at
// random to one request in ten, by two relayers with the defaults. The
// endpoint has many payments' deliveries in flight at once, yet never a
// payment's event before its predecessor was accepted; each event is
// accepted exactly once, none is lost.
func TestManyPaymentsInOrderUnderConcurrency(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	rng := rand.New(rand.NewPCG(47, 5))
	var rngMu sync.Mutex
	r := newReceiver(t, func(int64) int {
		rngMu.Lock()
		defer rngMu.Unlock()
		if rng.IntN(10) == 0 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	r.inOrder, r.latency = true, 5*time.Millisecond
	ep := register(t, pool, "t-1", r)
	subjects := make([]string, 300)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("pay-%03d", i)
	}
	cfg := fastConfig(pool)
	cfg.PerEndpoint, cfg.MaxInFlight = 0, 0 // the defaults
	startRelayer(t, cfg)
	startRelayer(t, cfg)
	for seq := range 4 {
		for i := 0; i < len(subjects); i += 50 {
			publish(t, pool, "t-1", "payment.delivered", subjects[i:i+50], seq)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitFor(t, "all 1,200 deliveries made", 60*time.Second, func() bool { return states(t, pool, ep.ID)[webhook.StateDelivered] == 1200 })

	for _, s := range subjects {
		if got := r.seqs(s); fmt.Sprint(got) != "[0 1 2 3]" {
			t.Errorf("payment %s: accepted %v, want [0 1 2 3] once each", s, got)
		}
	}
	r.mu.Lock()
	early, again := r.early, r.again
	r.mu.Unlock()
	if early != 0 {
		t.Errorf("%d requests came before their payment's previous event was accepted", early)
	}
	if again != 0 {
		t.Errorf("%d events were sent again after being accepted", again)
	}
	// Across payments, deliveries overlap: more than the 4 a relayer had
	// in flight to one endpoint (8 for two racing for the cap), which held
	// it to about 83 events a second.
	t.Logf("at most %d requests at once", r.maxBusy.Load())
	if m := r.maxBusy.Load(); m <= 8 {
		t.Errorf("at most %d requests at once to the endpoint, want more than 8 (payments' deliveries side by side)", m)
	}
	if r.badSigs.Load() != 0 {
		t.Errorf("%d deliveries failed their signature", r.badSigs.Load())
	}
}

// TestFailureHoldsOnlyItsPayment: a payment whose event the endpoint
// keeps refusing (503) holds back its own later events, retried with
// backoff, and nobody else's: every other payment's events arrive
// meanwhile, in order.
func TestFailureHoldsOnlyItsPayment(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	var stuck atomic.Bool
	stuck.Store(true)
	r := newReceiver(t, func(int64) int { return http.StatusNoContent })
	r.inOrder = true
	r.statusOf = func(subject string, _ int64) int {
		if subject == "pay-stuck" && stuck.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	}
	ep := register(t, pool, "t-1", r)
	subjects := []string{"pay-stuck"}
	for i := range 100 {
		subjects = append(subjects, fmt.Sprintf("pay-%03d", i))
	}
	startRelayer(t, fastConfig(pool))
	for seq := range 3 {
		publish(t, pool, "t-1", "payment.delivered", subjects, seq)
	}
	waitFor(t, "the other payments' 300 deliveries made", 30*time.Second, func() bool {
		return states(t, pool, ep.ID)[webhook.StateDelivered] == 300
	})
	// One list of every state, one snapshot: listed state by state, the
	// refused one could go from SENDING to PENDING between the two lists
	// and be in neither.
	all, err := (webhook.NewStore(webhook.StoreConfig{DB: pool})).Deliveries(context.Background(), ep.ID, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, d := range all {
		if d.State != webhook.StatePending && d.State != webhook.StateSending {
			continue
		}
		if d.Subject != "pay-stuck" {
			t.Errorf("delivery %d of %s still %s", d.ID, d.Subject, d.State)
		}
		held = append(held, fmt.Sprintf("%s/%d", d.State, d.Attempts))
	}
	// Newest first: the two held back never sent, the refused one retried
	// (waiting for its backoff, or under way again).
	if len(held) != 3 || held[0] != "PENDING/0" || held[1] != "PENDING/0" || held[2] == "PENDING/0" {
		t.Errorf("the stuck payment's open deliveries (state/attempts, newest first) %v, want two PENDING/0 and the refused one retried", held)
	}
	stuck.Store(false)
	waitFor(t, "the stuck payment's events made", 30*time.Second, func() bool {
		return states(t, pool, ep.ID)[webhook.StateDelivered] == 303
	})
	if got := r.seqs("pay-stuck"); fmt.Sprint(got) != "[0 1 2]" {
		t.Errorf("the stuck payment's events accepted %v, want [0 1 2]", got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.early != 0 {
		t.Errorf("%d requests came before their payment's previous event was accepted", r.early)
	}
}

// TestRetryTakesItsPaymentsLaterEvents: when a payment's event is refused
// and waits for its retry, its later events, which cannot go before it,
// are due no earlier than it (a claim would otherwise step over them
// until then), and are delivered after it, in order, once it goes
// through; another payment's events are not moved.
func TestRetryTakesItsPaymentsLaterEvents(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	var stuck atomic.Bool
	stuck.Store(true)
	r := newReceiver(t, func(int64) int { return http.StatusNoContent })
	r.inOrder = true
	r.statusOf = func(subject string, _ int64) int {
		if subject == "pay-stuck" && stuck.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	}
	ep := register(t, pool, "t-1", r)
	for seq := range 3 {
		publish(t, pool, "t-1", "payment.delivered", []string{"pay-stuck", "pay-ok"}, seq)
	}
	cfg := fastConfig(pool)
	cfg.BackoffBase, cfg.BackoffMax = 2*time.Second, 2*time.Second
	startRelayer(t, cfg)
	var open []webhook.Delivery
	waitFor(t, "the refused event waiting for its retry and the other payment's delivered", 30*time.Second, func() bool {
		ds, err := (webhook.NewStore(webhook.StoreConfig{DB: pool})).Deliveries(context.Background(), ep.ID, webhook.StatePending, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		open = ds
		return len(ds) == 3 && ds[2].Attempts == 1 && states(t, pool, ep.ID)[webhook.StateDelivered] == 3
	})
	// Newest first: the two held back, then the refused one.
	head := open[2]
	for _, d := range open[:2] {
		if d.Subject != "pay-stuck" || d.NextAttempt == nil || head.NextAttempt == nil || d.NextAttempt.Before(*head.NextAttempt) {
			t.Errorf("delivery %d of %s due at %v, before its payment's refused event %d, due again at %v",
				d.ID, d.Subject, d.NextAttempt, head.ID, head.NextAttempt)
		}
	}
	stuck.Store(false)
	waitFor(t, "every event delivered", 30*time.Second, func() bool { return states(t, pool, ep.ID)[webhook.StateDelivered] == 6 })
	for _, s := range []string{"pay-stuck", "pay-ok"} {
		if got := r.seqs(s); fmt.Sprint(got) != "[0 1 2]" {
			t.Errorf("%s: accepted %v, want [0 1 2]", s, got)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.early != 0 {
		t.Errorf("%d requests came before their payment's previous event was accepted", r.early)
	}
}

// warnings is a log handler that keeps the messages of warnings and
// errors.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		return true
	})
	w.msgs = append(w.msgs, msg)
	return nil
}

// TestCycleRecordsAndClaimsInOneBatch: a relayer's cycle records the
// outcomes that came in and claims again in one batch. With an endpoint
// that accepts everything, no cycle falls back to recording its outcomes
// alone (a warning): the batch itself works.
func TestCycleRecordsAndClaimsInOneBatch(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	r := newReceiver(t, func(int64) int { return http.StatusNoContent })
	r.inOrder = true
	ep := register(t, pool, "t-1", r)
	subjects := make([]string, 100)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("pay-%03d", i)
	}
	for seq := range 3 {
		publish(t, pool, "t-1", "payment.delivered", subjects, seq)
	}
	w := &warnings{}
	cfg := fastConfig(pool)
	cfg.Logger = slog.New(w)
	startRelayer(t, cfg)
	waitFor(t, "all 300 deliveries made", 30*time.Second, func() bool { return states(t, pool, ep.ID)[webhook.StateDelivered] == 300 })
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, m := range w.msgs {
		if i == 3 {
			t.Errorf("and %d more", len(w.msgs)-3)
			break
		}
		t.Errorf("warning: %s", m)
	}
}
