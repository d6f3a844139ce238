package payment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/webhook"
)

// TestStatusChangesPublishEvents: every status a payment moves to —
// stored by Phase A, rejected, begun, cancelled waiting or scheduled —
// publishes one event to its tenant's endpoints, in the order of the
// moves, each valid against the published JSON Schema and chained by
// previousStatus; another tenant's endpoint gets none, and an endpoint
// that takes one type gets only that type.
func TestStatusChangesPublishEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-E", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000")})
	hooks := webhook.NewStore(webhook.StoreConfig{DB: s.pool, Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}})
	all, _, err := hooks.Register(ctx, webhook.NewEndpoint{TenantID: "acme", URL: "http://127.0.0.1:9/all"})
	if err != nil {
		t.Fatal(err)
	}
	cancels, _, err := hooks.Register(ctx, webhook.NewEndpoint{TenantID: "acme", URL: "http://127.0.0.1:9/c",
		EventTypes: []string{payment.EventType(payment.StatusCancelled)}})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := hooks.Register(ctx, webhook.NewEndpoint{TenantID: "globex", URL: "http://127.0.0.1:9/g"})
	if err != nil {
		t.Fatal(err)
	}

	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(s.pool), Queue: queue.New(s.pool)})
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	req := func(id, amount string) payment.Request {
		r := validRequest(at)
		r.PaymentID, r.DebtorAccount, r.Amount = id, "ACC-E", amount
		return r
	}
	if _, err := svc.Store().Receive(ctx, []payment.Request{req("e-waiting", "5")}, func(int) string { return "init-e-waiting" }, false); err != nil {
		t.Fatal(err)
	}
	pcs := s.schedule(t, req("e-executed", "12.3"), req("e-cancelled", "7"))
	if _, err := s.execute(ctx, "e-executed", pcs["e-executed"]); err != nil {
		t.Fatal(err)
	}
	bad := req("e-rejected", "1")
	bad.DebtorAccount = "NOPE"
	if _, err := s.init.InitChunk(ctx, []payment.Request{bad}, "init-e-rejected"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"e-waiting", "e-cancelled"} {
		if _, _, err := svc.Cancel(ctx, "acme", id, nil); err != nil {
			t.Fatal(err)
		}
	}

	schema := compileEventSchema(t)
	type event struct {
		Type string `json:"type"`
		Data struct {
			PaymentID      string `json:"paymentId"`
			Status         string `json:"status"`
			PreviousStatus string `json:"previousStatus"`
			Amount         string `json:"amount"`
		} `json:"data"`
	}
	events := func(endpoint fmt.Stringer) map[string][]event {
		rows, err := s.pool.Query(ctx, `SELECT payload FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY delivery_id`, endpoint.String())
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][]event{}
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytesReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(doc); err != nil {
				t.Errorf("event %s: %v", raw, err)
			}
			var e event
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			out[e.Data.PaymentID] = append(out[e.Data.PaymentID], e)
		}
		return out
	}
	got := events(all.ID)
	want := map[string][]string{
		"e-waiting":   {"CANCELLED"},
		"e-executed":  {"SCHEDULED", "ACCEPTED"},
		"e-cancelled": {"SCHEDULED", "CANCELLED"},
		"e-rejected":  {"REJECTED"},
	}
	for id, statuses := range want {
		var seen []string
		prev := "RECEIVED"
		for _, e := range got[id] {
			seen = append(seen, e.Data.Status)
			if e.Data.PreviousStatus != prev || e.Type != payment.EventType(payment.Status(e.Data.Status)) {
				t.Errorf("%s: event %+v after %s", id, e, prev)
			}
			prev = e.Data.Status
		}
		if !slices.Equal(seen, statuses) {
			t.Errorf("%s: events %v, want %v", id, seen, statuses)
		}
	}
	if a := got["e-executed"][0].Data.Amount; a != "12.30" {
		t.Errorf("amount %q, want 12.30", a)
	}
	if a := got["e-cancelled"][0].Data.Amount; a != "7.00" {
		t.Errorf("amount %q, want 7.00", a)
	}
	onlyCancels := events(cancels.ID)
	if len(onlyCancels) != 2 || len(onlyCancels["e-waiting"]) != 1 || len(onlyCancels["e-cancelled"]) != 1 {
		t.Errorf("the cancellations endpoint got %+v, want the two cancellations alone", onlyCancels)
	}
	if n := len(events(other.ID)); n != 0 {
		t.Errorf("another tenant's endpoint got events of %d payments", n)
	}
}

func compileEventSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../docs/schemas/payment-event.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("payment-event.v1.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("payment-event.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
