package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/webhook"
)

// hookEvent is what the demo reads of a payment event.
type hookEvent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		PaymentID      string `json:"paymentId"`
		Status         string `json:"status"`
		PreviousStatus string `json:"previousStatus"`
	} `json:"data"`
}

// hooks is each tenant's webhook endpoint, on loopback: it checks every
// delivery's signature with its tenant's secret and keeps each payment's
// events, once each, in the order they came.
type hooks struct {
	srv     *http.Server
	url     string
	secrets sync.Map // tenant → secret
	badSigs atomic.Int64

	mu       sync.Mutex
	seen     map[string]bool
	payments map[string][]hookEvent // by tenant/paymentId
}

func startHooks() (*hooks, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hooks{url: "http://" + ln.Addr().String(), seen: map[string]bool{}, payments: map[string][]hookEvent{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/{tenant}", h.receive)
	h.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

func (h *hooks) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.srv.Shutdown(ctx)
}

func (h *hooks) receive(w http.ResponseWriter, r *http.Request) {
	tenant := r.PathValue("tenant")
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	secret, ok := h.secrets.Load(tenant)
	if err != nil || !ok || webhook.Verify(r.Header.Get(webhook.SignatureHeader), body, secret.(string), webhook.DefaultTolerance, time.Now()) != nil {
		h.badSigs.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var e hookEvent
	if err := json.Unmarshal(body, &e); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	if !h.seen[e.ID] {
		h.seen[e.ID] = true
		key := tenant + "/" + e.Data.PaymentID
		h.payments[key] = append(h.payments[key], e)
	}
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// register gives each tenant an endpoint, with the tenant's own token.
func (h *hooks) register(ctx context.Context, tokens map[string]*client.Client) error {
	for t, c := range tokens {
		u, err := url.Parse(h.url + "/hooks/" + t)
		if err != nil {
			return err
		}
		ep, err := client.Result[*client.WebhookEndpointCreated](c.CreateWebhookEndpoint(ctx,
			&client.WebhookEndpointRequest{URL: *u, Description: client.NewOptString("paydispatch demo")}))
		if err != nil {
			return fmt.Errorf("register %s's webhook endpoint: %w", t, err)
		}
		h.secrets.Store(t, ep.Secret)
	}
	return nil
}

// incomplete counts the payments whose webhook events do not chain from
// RECEIVED, each from the one before, to their status now, and says why
// for the first.
func (h *hooks) incomplete(ctx context.Context, pool *pgxpool.Pool) (int, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return incompleteChains(ctx, pool, h.payments)
}

// incompleteChains counts the payments whose events (by tenant/paymentId,
// in the order received) do not chain from RECEIVED, each from the one
// before, to their status now (a payment.rescheduled leaves a SCHEDULED
// one SCHEDULED), and says why for the first.
func incompleteChains(ctx context.Context, pool *pgxpool.Pool, events map[string][]hookEvent) (int, string, error) {
	rows, err := pool.Query(ctx, `SELECT tenant_id || '/' || external_id, status FROM payments`)
	if err != nil {
		return 0, "", err
	}
	final := map[string]string{}
	for rows.Next() {
		var k, s string
		if err := rows.Scan(&k, &s); err != nil {
			rows.Close()
			return 0, "", err
		}
		final[k] = s
	}
	rows.Close()
	n, first := 0, ""
	for k, status := range final {
		prev, why := "RECEIVED", ""
		for _, e := range events[k] {
			if e.Type == payment.EventRescheduled && prev == "SCHEDULED" && e.Data.PreviousStatus == prev && e.Data.Status == prev {
				continue // rolled to a later business day: SCHEDULED still
			}
			if e.Data.PreviousStatus != prev || e.Type != "payment."+strings.ToLower(e.Data.Status) {
				why = fmt.Sprintf("%s: %s after %s", k, e.Type, prev)
				break
			}
			prev = e.Data.Status
		}
		if why == "" && prev != status {
			why = fmt.Sprintf("%s: events end at %s, its status is %s", k, prev, status)
		}
		if why != "" {
			n++
			if first == "" {
				first = why
			}
		}
	}
	return n, first, nil
}

func (h *hooks) events() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}
