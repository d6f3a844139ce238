package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/webhook"
)

// fakeWebhooks keeps endpoints in memory; deliveries are a fixed pair.
type fakeWebhooks struct {
	mu  sync.Mutex
	eps []webhook.Endpoint
}

func (f *fakeWebhooks) CheckURL(raw string) error { return webhook.Policy{}.CheckURL(raw) }

func (f *fakeWebhooks) RegisterTx(_ context.Context, _ pgx.Tx, n webhook.NewEndpoint) (webhook.Endpoint, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ep := webhook.Endpoint{ID: uuid.New(), TenantID: n.TenantID, URL: n.URL, EventTypes: n.EventTypes, Description: n.Description,
		CreatedAt: time.Now().Add(time.Duration(len(f.eps)) * time.Millisecond), UpdatedAt: time.Now()}
	if ep.EventTypes == nil {
		ep.EventTypes = []string{}
	}
	f.eps = append(f.eps, ep)
	return ep, webhook.NewSecret(), nil
}

func (f *fakeWebhooks) Get(_ context.Context, id uuid.UUID) (webhook.Endpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ep := range f.eps {
		if ep.ID == id {
			return ep, nil
		}
	}
	return webhook.Endpoint{}, webhook.ErrNotFound
}

func (f *fakeWebhooks) List(_ context.Context, tenant string, after *webhook.ListAfter, limit int) ([]webhook.Endpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []webhook.Endpoint
	for _, ep := range f.eps {
		if (tenant == "" || ep.TenantID == tenant) && (after == nil || ep.CreatedAt.After(after.CreatedAt)) && len(out) < limit {
			out = append(out, ep)
		}
	}
	return out, nil
}

func (f *fakeWebhooks) DeleteTx(_ context.Context, _ pgx.Tx, id uuid.UUID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.eps)
	f.eps = slices.DeleteFunc(f.eps, func(ep webhook.Endpoint) bool { return ep.ID == id })
	if len(f.eps) == n {
		return webhook.ErrNotFound
	}
	return nil
}

func (f *fakeWebhooks) RotateTx(ctx context.Context, _ pgx.Tx, id uuid.UUID, keep time.Duration) (webhook.Endpoint, string, error) {
	ep, err := f.Get(ctx, id)
	until := time.Now().Add(keep)
	ep.PreviousSecretExpiresAt = &until
	return ep, webhook.NewSecret(), err
}

func (f *fakeWebhooks) Deliveries(_ context.Context, id uuid.UUID, state string, _ int64, limit int) ([]webhook.Delivery, error) {
	ds := []webhook.Delivery{
		{ID: 2, EndpointID: id, Subject: "acme/p-1", EventID: uuid.New(), EventType: "payment.cancelled", State: webhook.StateDead, Attempts: 12,
			LastStatus: 500, LastError: "HTTP 500: down", CreatedAt: time.Now()},
		{ID: 1, EndpointID: id, Subject: "acme/p-1", EventID: uuid.New(), EventType: "payment.scheduled", State: webhook.StateDelivered, Attempts: 1,
			LastStatus: 204, CreatedAt: time.Now()},
	}
	ds = slices.DeleteFunc(ds, func(d webhook.Delivery) bool { return state != "" && d.State != state })
	return ds[:min(limit, len(ds))], nil
}

func (f *fakeWebhooks) RedriveTx(_ context.Context, _ pgx.Tx, _ uuid.UUID, ids []int64) (int64, error) {
	return int64(max(len(ids), 1)), nil
}

// TestWebhookRoutes: a tenant's token registers, sees, rotates, redrives
// and deletes its own endpoints and no other tenant's; an invalid
// registration is refused with every bad field named.
func TestWebhookRoutes(t *testing.T) {
	t.Parallel()
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
		"admin":  {TokenID: "a", Scopes: []auth.Scope{auth.Admin}},
		"acme":   {TokenID: "b", TenantID: "acme", Scopes: []auth.Scope{auth.WebhooksWrite}},
		"globex": {TokenID: "c", TenantID: "globex", Scopes: []auth.Scope{auth.WebhooksWrite}},
		"reader": {TokenID: "d", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsRead}},
	}, Services: httpapi.Services{Webhooks: &fakeWebhooks{}, EventTypes: payment.EventTypes(), Audit: &fakeAudit{}}})
	call := func(token, method, path, body string) (int, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}

	code, made := call("acme", "POST", "/admin/webhooks", `{"url":"https://hooks.acme.example/pd","eventTypes":["payment.cancelled","payment.delivered"]}`)
	if code != http.StatusCreated || made["tenantId"] != "acme" || !strings.HasPrefix(made["secret"].(string), "whsec_") {
		t.Fatalf("register: %d %v", code, made)
	}
	id := made["id"].(string)
	if code, got := call("acme", "GET", "/admin/webhooks/"+id, ""); code != http.StatusOK || got["secret"] != nil {
		t.Errorf("get: %d %v (the secret is shown once)", code, got)
	}
	for _, tt := range []struct {
		token, method, path, body string
		want                      int
	}{
		{"globex", "GET", "/admin/webhooks/" + id, "", http.StatusNotFound},
		{"globex", "DELETE", "/admin/webhooks/" + id, "", http.StatusNotFound},
		{"globex", "POST", "/admin/webhooks/" + id + "/rotate-secret", `{}`, http.StatusNotFound},
		{"globex", "GET", "/admin/webhooks/" + id + "/deliveries", "", http.StatusNotFound},
		{"globex", "POST", "/admin/webhooks", `{"tenantId":"acme","url":"https://x.example"}`, http.StatusForbidden},
		{"admin", "POST", "/admin/webhooks", `{"tenantId":"<img src=x>","url":"https://x.example"}`, http.StatusUnprocessableEntity},
		{"reader", "GET", "/admin/webhooks", "", http.StatusForbidden},
		{"acme", "GET", "/admin/webhooks/not-a-uuid", "", http.StatusNotFound},
		{"acme", "GET", "/admin/webhooks/" + id + "/deliveries?state=LOST", "", http.StatusBadRequest},
		{"acme", "POST", "/admin/webhooks/" + id + "/rotate-secret", `{"keepPreviousSeconds":-1}`, http.StatusUnprocessableEntity},
		{"acme", "POST", "/admin/webhooks/" + id + "/rotate-secret", `{"keepPreviousSeconds":3600}`, http.StatusOK},
		{"acme", "GET", "/admin/webhooks/" + id + "/deliveries?state=DEAD", "", http.StatusOK},
		{"acme", "POST", "/admin/webhooks/" + id + "/redrive", `{}`, http.StatusOK},
		{"admin", "POST", "/admin/webhooks", `{"url":"https://x.example"}`, http.StatusUnprocessableEntity},
	} {
		if code, body := call(tt.token, tt.method, tt.path, tt.body); code != tt.want {
			t.Errorf("%s %s %s: %d %v, want %d", tt.token, tt.method, tt.path, code, body, tt.want)
		}
	}
	code, bad := call("acme", "POST", "/admin/webhooks", `{"url":"http://127.0.0.1/x","eventTypes":["payment.lost"]}`)
	fields := map[string]bool{}
	for _, e := range bad["errors"].([]any) {
		fields[e.(map[string]any)["field"].(string)] = true
	}
	if code != http.StatusUnprocessableEntity || !fields["url"] || !fields["eventTypes[0]"] {
		t.Errorf("bad registration: %d %v, want 422 naming url and eventTypes[0]", code, bad)
	}
	if code, list := call("globex", "GET", "/admin/webhooks", ""); code != http.StatusOK || len(list["webhooks"].([]any)) != 0 {
		t.Errorf("globex's list: %d %v, want none", code, list)
	}
	if code, list := call("admin", "GET", "/admin/webhooks?tenantId=acme", ""); code != http.StatusOK || len(list["webhooks"].([]any)) != 1 {
		t.Errorf("admin's list of acme: %d %v, want one", code, list)
	}
	if code, _ := call("acme", "DELETE", "/admin/webhooks/"+id, ""); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
	if code, _ := call("acme", "GET", "/admin/webhooks/"+id, ""); code != http.StatusNotFound {
		t.Errorf("get after delete: %d", code)
	}
}

// TestWebhookURLSpellingsRefused: a registration whose URL spells a
// non-public address as a resolver would read it, or names a port out of
// range, is a 422 problem+json naming the url field, never a 5xx.
func TestWebhookURLSpellingsRefused(t *testing.T) {
	t.Parallel()
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{"acme": {TokenID: "b", TenantID: "acme", Scopes: []auth.Scope{auth.WebhooksWrite}}}, Services: httpapi.Services{Webhooks: &fakeWebhooks{}, EventTypes: payment.EventTypes(), Audit: &fakeAudit{}}})
	for _, url := range []string{
		"https://0177.0.0.1/", "https://2130706433/", "https://0x7f000001/", "https://127.1/",
		"https://[64:ff9b::7f00:1]/", "https://[2002:7f00:1::]/", "https://[::ffff:7f00:1]/", "https://localhost/",
		"https://example.com:99999/", "https://example.com:0/", "https://example.com:abc/", "https://1.2.3.4.5/",
	} {
		body, _ := json.Marshal(map[string]string{"url": url})
		req := httptest.NewRequest("POST", "/admin/webhooks", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer acme")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		var p struct {
			Status int
			Errors []struct{ Field, Detail string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != http.StatusUnprocessableEntity ||
			rec.Header().Get("Content-Type") != "application/problem+json" || len(p.Errors) != 1 || p.Errors[0].Field != "url" {
			t.Errorf("register %s: %d %q %s, want 422 problem+json naming url", url, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
}
