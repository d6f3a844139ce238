package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/idempotency"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// downEngine is a Temporal that starts no workflow.
type downEngine struct{ client.Client }

func (downEngine) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return nil, errors.New("connection refused")
}

// TestDuplicateFile: on PostgreSQL, a bulk file holding the payments of
// one its tenant sent within the window (ids, order and the spelling of
// amounts aside) is refused 409, naming that file and when it came, and
// starts nothing; allowDuplicate=true takes it, and the override is in
// the audit log; another tenant's identical file, a file whose first
// sending failed (503) and a file older than the window are taken; a
// retry under the same Idempotency-Key gets the first answer.
func TestDuplicateFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, c := temporaltest.Start(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	cfg := payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Temporal: c, Now: now,
		DuplicateFileWindow: 7 * 24 * time.Hour}
	svc := payment.NewService(cfg)
	cfg.Temporal = downEngine{c} // a file is stored, its chunks not started
	down := payment.NewService(cfg)
	log := audit.New(audit.Config{DB: pool})
	keys := idempotency.NewStore(pool, idempotency.Config{})
	tokens := fakeTokens{
		"acme":   {TokenID: "ta", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead}},
		"globex": {TokenID: "tg", TenantID: "globex", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead}},
	}
	router := func(p httpapi.Payments) http.Handler {
		return newRouter(t, httpapi.RouterConfig{Auth: tokens, IdempotencyKeys: keys, Services: httpapi.Services{Payments: p, Audit: log}})
	}
	rt, rtDown := router(svc), router(down)

	at := time.Now().UTC().Add(30 * 24 * time.Hour).Truncate(time.Second).Format(time.RFC3339)
	// file is a JSON lines file of the ids, each paying its amount.
	file := func(ids []string, amounts []string) string {
		var b strings.Builder
		for i, id := range ids {
			fmt.Fprintf(&b, `{"paymentId":%q,"debtorAccount":"ACC-1","amount":%q,"currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":%q}`+"\n",
				id, amounts[i], at)
		}
		return b.String()
	}
	post := func(h http.Handler, token, query, body, key string) (int, map[string]any) {
		req := httptest.NewRequest("POST", "/v1/payment-batches"+query, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Authorization", "Bearer "+token)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		out["raw"] = rec.Body.String()
		return rec.Code, out
	}
	stored := func(like string) int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM payment_keys WHERE external_id LIKE $1`, like).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	first := file([]string{"f-1", "f-2"}, []string{"10.00", "20.00"})
	code, out := post(rt, "acme", "", first, "")
	firstBatch, _ := out["batchId"].(string)
	if code != 202 || firstBatch == "" {
		t.Fatalf("the first file: %d %v", code, out)
	}
	firstAt := now().UTC().Format(time.RFC3339)

	// The same payments again: as sent, and exported again (new ids,
	// another order, amounts spelt otherwise).
	again := file([]string{"g-2", "g-1"}, []string{"20", "10.0"})
	for _, body := range []string{first, again} {
		code, out := post(rt, "acme", "", body, "")
		detail, _ := out["detail"].(string)
		if code != 409 || !strings.Contains(detail, firstBatch) || !strings.Contains(detail, firstAt) || out["title"] != "Duplicate file" {
			t.Errorf("the same payments again: %d %v; want 409 naming %s, received at %s", code, out, firstBatch, firstAt)
		}
	}
	if n := stored("g-%"); n != 0 {
		t.Errorf("a refused duplicate took %d payments in", n)
	}

	tests := []struct {
		name, token, query, body, key string
		h                             http.Handler
		want                          int
	}{
		{"another tenant's identical file", "globex", "", first, "", rt, 202},
		{"allowDuplicate not a boolean", "acme", "?allowDuplicate=yes", again, "", rt, 400},
		{"the duplicate, allowed", "acme", "?allowDuplicate=true", again, "", rt, 202},
		{"a new file under a key", "acme", "", file([]string{"k-1"}, []string{"1.00"}), "key-1", rt, 202},
		{"a new file, the engine down", "acme", "", file([]string{"d-1"}, []string{"2.00"}), "", rtDown, 503},
		{"the same file sent again", "acme", "", file([]string{"d-1"}, []string{"2.00"}), "", rt, 202},
	}
	for _, tt := range tests {
		if code, out := post(tt.h, tt.token, tt.query, tt.body, tt.key); code != tt.want {
			t.Errorf("%s: %d %v, want %d", tt.name, code, out, tt.want)
		}
	}
	if n := stored("g-%"); n != 2 {
		t.Errorf("the allowed duplicate took %d payments in, want 2", n)
	}
	entries, _, err := log.List(ctx, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	var overrides []string
	for _, e := range entries {
		var d map[string]any
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		if d["allowDuplicate"] == true {
			overrides = append(overrides, string(e.Detail))
			if e.Actor != "ta" || d["duplicateOf"] != firstBatch || d["payments"] != 2.0 || d["tenantId"] != "acme" {
				t.Errorf("the override's entry: %+v", e)
			}
		}
	}
	if len(overrides) != 1 {
		t.Errorf("audit entries of overrides: %v, want the one", overrides)
	}

	// A retry under the key gets the first answer, not a 409.
	code, out = post(rt, "acme", "", file([]string{"k-1"}, []string{"1.00"}), "key-1")
	if code != 202 || out["payments"] != 1.0 {
		t.Errorf("the retry under its key: %d %v, want the first 202", code, out)
	}
	// A day past the window, the first file is not remembered.
	clock.Add(int64(8 * 24 * time.Hour))
	if code, out := post(rt, "acme", "", first, ""); code != 202 {
		t.Errorf("the first file past the window: %d %v, want 202", code, out)
	}
}
