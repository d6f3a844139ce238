package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/webhook"
)

// WebhooksOptions configure the webhook benchmark: the drain, with one
// tenant's signed-webhook endpoint on a loopback receiver.
type WebhooksOptions struct {
	DrainOptions
	// FailEvery: the receiver answers 503 to every FailEvery-th request
	// (0: never).
	FailEvery int
}

// WebhooksSettings binds the benchmark's flags: the drain's, with the
// defaults of the measurement issue 47 reports (one tenant, 100/s), and
// the receiver's failures.
func WebhooksSettings(o *WebhooksOptions) []*config.Setting {
	s := DrainSettings(&o.DrainOptions)
	for _, x := range s {
		switch x.Flag {
		case "payments":
			x.Default = "6000"
		case "max-per-window":
			x.Default = "100"
		case "window":
			x.Default = "PT1S"
		case "debtors":
			x.Default = "1"
			x.Usage += " (the endpoint is t0's: with more, only t0's payments' events are sent to it)"
		case "svg":
			x.Default = ""
		}
	}
	return append(s, config.Int("fail-every", 10, 0, 1_000_000, "the receiver answers 503 to every Nth request (0: never)", &o.FailEvery))
}

// RunWebhooks runs the drain with the webhook endpoint, then reports
// what the endpoint received.
func RunWebhooks(ctx context.Context, o WebhooksOptions) error {
	o.webhooks = &webhookRun{failEvery: int64(o.FailEvery)}
	return RunDrain(ctx, o.DrainOptions)
}

// webhookTenant is the tenant whose endpoint the benchmark registers.
const webhookTenant = "t0"

// webhookRun is the benchmark's endpoint: a loopback receiver that
// checks each delivery's signature, answers 503 to one request in
// failEvery, and records each event it accepts (once: a receiver
// deduplicates on the event id) with when it arrived.
type webhookRun struct {
	failEvery int64
	secret    string
	endpoint  uuid.UUID
	server    *http.Server
	stopRelay func()

	requests, failed, badSignatures, duplicates atomic.Int64

	mu       sync.Mutex
	arrivals map[uuid.UUID]arrival
	// reqs is every request with a good signature, by event: the tail's
	// attempts and their gaps.
	reqs map[uuid.UUID][]request
}

// arrival is an event the receiver accepted: its place in the order of
// arrival, when, and what the event says.
type arrival struct {
	Seq       int
	At        time.Time
	Type      string
	CreatedAt time.Time
}

// start serves the receiver, registers it as webhookTenant's one
// endpoint and starts a webhook relayer with the product's defaults (the
// policy opened to loopback).
func (w *webhookRun) start(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	w.arrivals = map[uuid.UUID]arrival{}
	w.reqs = map[uuid.UUID][]request{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("bench: webhook receiver: %w", err)
	}
	w.server = &http.Server{Handler: http.HandlerFunc(w.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.server.Serve(ln) }()
	open := webhook.Policy{AllowHTTP: true, AllowPrivate: true}
	ep, secret, err := (webhook.NewStore(webhook.StoreConfig{DB: pool, Policy: open})).Register(ctx, webhook.NewEndpoint{
		TenantID: webhookTenant, URL: "http://" + ln.Addr().String() + "/hooks", Description: "bench webhooks"})
	if err != nil {
		_ = w.server.Close()
		return err
	}
	w.secret, w.endpoint = secret, ep.ID
	r, err := webhook.NewRelayer(webhook.Config{Pool: pool, Policy: open, Logger: log.With("component", "webhooks")})
	if err != nil {
		_ = w.server.Close()
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(runCtx) }()
	w.stopRelay = func() { cancel(); <-done }
	return nil
}

func (w *webhookRun) stop() {
	if w.stopRelay != nil {
		w.stopRelay()
	}
	if w.server != nil {
		_ = w.server.Close()
	}
}

func (w *webhookRun) serve(rw http.ResponseWriter, req *http.Request) {
	n := w.requests.Add(1)
	body, err := io.ReadAll(req.Body)
	if err != nil {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	now := time.Now()
	if err := webhook.Verify(req.Header.Get(webhook.SignatureHeader), body, w.secret, webhook.DefaultTolerance, now); err != nil {
		w.badSignatures.Add(1)
		rw.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev struct {
		ID        uuid.UUID `json:"id"`
		Type      string    `json:"type"`
		CreatedAt time.Time `json:"createdAt"`
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == uuid.Nil {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	refuse := w.failEvery > 0 && n%w.failEvery == 0
	w.mu.Lock()
	w.reqs[ev.ID] = append(w.reqs[ev.ID], request{At: now, Refused: refuse})
	if refuse {
		w.mu.Unlock()
		w.failed.Add(1)
		rw.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if _, seen := w.arrivals[ev.ID]; seen {
		w.duplicates.Add(1)
	} else {
		w.arrivals[ev.ID] = arrival{Seq: len(w.arrivals), At: now, Type: ev.Type, CreatedAt: ev.CreatedAt}
	}
	w.mu.Unlock()
	rw.WriteHeader(http.StatusNoContent)
}

// report waits (until deadline) for the endpoint's deliveries to be
// settled, then prints what the receiver got against what was published:
// events, events per second, the lag of the last event behind the last
// payment's final status, each payment's events complete and in order,
// payment.accepted per window by its createdAt, and the CPU stolen
// meanwhile. It fails when an event is missing or out of order.
func (w *webhookRun) report(ctx context.Context, out io.Writer, pool *pgxpool.Pool, instant, deadline time.Time, final []string, lim limits) error {
	cpuAtStart, cpuOK := readCPU()
	for {
		var open int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND state IN ('PENDING', 'SENDING')`,
			w.endpoint).Scan(&open); err != nil {
			return err
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(out, "webhooks: %d deliveries still open at the deadline\n", open)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.stop()
	// What was published, per payment in publication order.
	rows, err := pool.Query(ctx, `SELECT subject, event_id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY delivery_id`, w.endpoint)
	if err != nil {
		return err
	}
	expected := map[string][]uuid.UUID{}
	for rows.Next() {
		var s string
		var id uuid.UUID
		if err := rows.Scan(&s, &id); err != nil {
			rows.Close()
			return err
		}
		expected[s] = append(expected[s], id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var lastFinal time.Time
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(updated_at), now()) FROM payments WHERE tenant_id = $1 AND status = ANY($2)`,
		webhookTenant, final).Scan(&lastFinal); err != nil {
		return err
	}
	w.mu.Lock()
	arrivals := make(map[uuid.UUID]arrival, len(w.arrivals))
	for id, a := range w.arrivals {
		arrivals[id] = a
	}
	reqs := w.reqs
	w.mu.Unlock()

	c := checkArrivals(expected, arrivals)
	first, last := arrivalSpan(arrivals)
	fmt.Fprintf(out, "\nwebhooks: one endpoint of tenant %s on a loopback receiver answering 503 to one request in %d; the relayer's defaults\n",
		webhookTenant, w.failEvery)
	fmt.Fprintf(out, "events received: %s of %s published (%s requests, %s answered 503, %d bad signatures, %d duplicates)\n",
		thousands(len(arrivals)), thousands(c.Events), thousands(int(w.requests.Load())), thousands(int(w.failed.Load())),
		w.badSignatures.Load(), w.duplicates.Load())
	fmt.Fprintf(out, "events per second: %.1f from the first to the last (%.1f s); %.1f from the instant to the last\n",
		eventRate(len(arrivals), first, last), last.Sub(first).Seconds(), eventRate(countSince(arrivals, instant), instant, last))
	lag := lastEventLag(lastFinal, arrivals)
	fmt.Fprintf(out, "the last event arrived %.1f s after the last payment's final status (target ≤ 5 s): %s\n",
		lag.Seconds(), verdict(lag <= 5*time.Second))
	webhookTail(expected, arrivals, reqs, lastFinal, 10).print(out, lastFinal)
	fmt.Fprintf(out, "payments' events complete and in order: %s of %s (%d events missing in %d payments, %d out of order in %d payments): %s\n",
		thousands(c.good()), thousands(c.Payments),
		c.Missing, c.PaymentsMissing, c.OutOfOrder, c.PaymentsOutOfOrder, verdict(c.ok()))
	// payment.accepted by its createdAt, counted per window as a
	// receiver would: never more than the limit.
	accepted := map[int]int{}
	for _, a := range arrivals {
		if a.Type == "payment.accepted" {
			accepted[floorSeconds(a.CreatedAt.Sub(instant))]++
		}
	}
	if f, l := spanOf(accepted); l >= f {
		wc := countWindows(accepted, f, l, lim)
		fmt.Fprintf(out, "payment.accepted by createdAt: windows over the limit %d, most in one %d: %s\n", len(wc.Over), wc.Most, verdict(len(wc.Over) == 0))
	}
	if stolen, ok := stolenSince(cpuAtStart); cpuOK && ok {
		fmt.Fprintf(out, "CPU time stolen by the hypervisor while the last events went out: %.0f%%\n", stolen*100)
	}
	if !c.ok() {
		return fmt.Errorf("webhooks: %d events missing, %d out of order", c.Missing, c.OutOfOrder)
	}
	return nil
}

// arrivalCheck is what a receiver got against what was published.
type arrivalCheck struct {
	Payments, Events int
	// Missing: published events not received; OutOfOrder: received
	// events that arrived before one published ahead of them.
	Missing, OutOfOrder int
	// The payments with some missing, some out of order, and both.
	PaymentsMissing, PaymentsOutOfOrder, PaymentsBoth int
}

func (c arrivalCheck) ok() bool { return c.Missing == 0 && c.OutOfOrder == 0 }

// good is how many payments' events all arrived, in order.
func (c arrivalCheck) good() int {
	return c.Payments - c.PaymentsMissing - c.PaymentsOutOfOrder + c.PaymentsBoth
}

// checkArrivals compares each subject's events in publication order with
// the order they arrived in: an event is out of order when it arrived
// before an event published ahead of it in its subject.
func checkArrivals(expected map[string][]uuid.UUID, arrivals map[uuid.UUID]arrival) arrivalCheck {
	c := arrivalCheck{Payments: len(expected)}
	for _, ids := range expected {
		c.Events += len(ids)
		missing, disordered, latest := 0, 0, -1
		for _, id := range ids {
			a, ok := arrivals[id]
			switch {
			case !ok:
				missing++
			case a.Seq < latest:
				disordered++
			default:
				latest = a.Seq
			}
		}
		c.Missing += missing
		c.OutOfOrder += disordered
		if missing > 0 {
			c.PaymentsMissing++
		}
		if disordered > 0 {
			c.PaymentsOutOfOrder++
		}
		if missing > 0 && disordered > 0 {
			c.PaymentsBoth++
		}
	}
	return c
}

// arrivalSpan is when the first and the last event arrived.
func arrivalSpan(arrivals map[uuid.UUID]arrival) (first, last time.Time) {
	ts := make([]time.Time, 0, len(arrivals))
	for _, a := range arrivals {
		ts = append(ts, a.At)
	}
	if len(ts) == 0 {
		return first, last
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	return ts[0], ts[len(ts)-1]
}

// lastEventLag is how long after the last payment's final status the
// last event arrived; negative when every event was in before it (none
// received: zero).
func lastEventLag(lastFinal time.Time, arrivals map[uuid.UUID]arrival) time.Duration {
	if len(arrivals) == 0 {
		return 0
	}
	_, last := arrivalSpan(arrivals)
	return last.Sub(lastFinal)
}

// countSince is how many events arrived at or after t.
func countSince(arrivals map[uuid.UUID]arrival, t time.Time) int {
	n := 0
	for _, a := range arrivals {
		if !a.At.Before(t) {
			n++
		}
	}
	return n
}

// eventRate is n events over the span from first to last, per second
// (0 for an empty span).
func eventRate(n int, first, last time.Time) float64 {
	return rateIn(n, last.Sub(first))
}

// floorSeconds is d in whole seconds, rounded down (a time before the
// instant is in a negative second).
func floorSeconds(d time.Duration) int {
	s := int(d / time.Second)
	if d < 0 && d%time.Second != 0 {
		s--
	}
	return s
}
