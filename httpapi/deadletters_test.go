package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/field"
)

// fakeDeadLetters holds letters in memory: a requeue by id moves those
// named if all are dead; one named "outbox:…" of a config "nope" has no
// config.
type fakeDeadLetters struct {
	mu      sync.Mutex
	letters []deadletter.Letter
}

func newFakeDeadLetters() *fakeDeadLetters {
	at := time.Date(2026, 11, 26, 15, 55, 0, 0, time.UTC)
	return &fakeDeadLetters{letters: []deadletter.Letter{
		{ID: "dispatch:PAYMENT:p-1", Source: "dispatch", ItemType: "PAYMENT", ItemID: "p-1", TenantID: "acme", DiedAt: at, Reason: "retries used up", Attempts: 3},
		{ID: "outbox:01a21a7c-09a0-72d0-b79d-746177ef9356", Source: "outbox", ItemType: "SEPA_JSON", ItemID: "p-2", TenantID: "acme", DiedAt: at.Add(time.Second), Reason: "RAIL_TERMINAL AC04: closed", Attempts: 1},
	}}
}

func (f *fakeDeadLetters) List(_ context.Context, fl deadletter.Filter, after *deadletter.Position, limit int) (deadletter.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []deadletter.Letter
	for _, l := range f.letters {
		if (fl.Source == "" || fl.Source == l.Source) && (fl.TenantID == "" || fl.TenantID == l.TenantID) &&
			(after == nil || l.DiedAt.After(after.DiedAt)) {
			out = append(out, l)
		}
	}
	if len(out) > limit {
		next := deadletter.Position{DiedAt: out[limit-1].DiedAt, Source: out[limit-1].Source, ID: out[limit-1].ID}
		return deadletter.Page{Letters: out[:limit], Next: &next}, nil
	}
	return deadletter.Page{Letters: out}, nil
}

func (f *fakeDeadLetters) Requeue(ctx context.Context, r deadletter.Request) (deadletter.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(r.IDs) == 0 && r.Filter == nil {
		return deadletter.Result{}, &field.Invalid{Fields: []field.Error{{Field: "ids", Detail: "name the dead letters"}}, Kind: deadletter.ErrInvalid}
	}
	if r.Config == "nope" {
		return deadletter.Result{}, &deadletter.NoConfigError{Detail: "no rate-limit config nope"}
	}
	why := map[string]string{}
	for _, id := range r.IDs {
		found := false
		for _, l := range f.letters {
			found = found || l.ID == id
		}
		if !found {
			why[id] = "no longer a dead letter"
		}
	}
	if len(why) > 0 {
		return deadletter.Result{}, &deadletter.NotDeadError{Why: why}
	}
	n := len(r.IDs)
	if r.Filter != nil {
		n = len(f.letters)
	}
	kept := f.letters[:0]
	for _, l := range f.letters {
		if r.Filter == nil && !contains(r.IDs, l.ID) {
			kept = append(kept, l)
		}
	}
	now := time.Now().UTC()
	res := deadletter.Result{Requeued: n, Configs: []string{"redrive"}, FirstSlot: now, LastSlot: now.Add(time.Second)}
	if r.Record != nil {
		if err := r.Record(ctx, nil, res); err != nil {
			return deadletter.Result{}, err
		}
	}
	f.letters = kept
	return res, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestDeadLetterRoutes: the list pages; a requeue moves what it names
// and its count goes in the audit log; one naming a letter no longer
// dead is 409 and names it; the caller's mistakes are 4xx, never 5xx.
func TestDeadLetterRoutes(t *testing.T) {
	t.Parallel()
	dl := newFakeDeadLetters()
	aud := &fakeAudit{}
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{"admin": {TokenID: "a", Name: "ops", Scopes: []auth.Scope{auth.Admin}},
		"reader": {TokenID: "r", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsRead}}}, Services: httpapi.Services{Audit: aud, DeadLetters: dl}})
	do := func(method, path, body, token string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, req)
		var out map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &out)
		return w.Code, out
	}
	code, page := do("GET", "/admin/dead-letters?limit=1", "", "admin")
	if code != http.StatusOK || len(page["deadLetters"].([]any)) != 1 || page["next"] == nil {
		t.Fatalf("first page: %d %v", code, page)
	}
	code, page = do("GET", "/admin/dead-letters?limit=1&cursor="+page["next"].(string), "", "admin")
	if code != http.StatusOK || len(page["deadLetters"].([]any)) != 1 || page["next"] != nil {
		t.Fatalf("second page: %d %v", code, page)
	}
	for _, tt := range []struct {
		name, method, path, body, token string
		want                            int
	}{
		{"a tenant's token", "GET", "/admin/dead-letters", "", "reader", http.StatusForbidden},
		{"bad source", "GET", "/admin/dead-letters?source=inbox", "", "admin", http.StatusUnprocessableEntity},
		{"bad time", "GET", "/admin/dead-letters?diedFrom=yesterday", "", "admin", http.StatusUnprocessableEntity},
		{"bad cursor", "GET", "/admin/dead-letters?cursor=xyz", "", "admin", http.StatusBadRequest},
		{"nothing named", "POST", "/admin/dead-letters/requeue", `{}`, "admin", http.StatusUnprocessableEntity},
		{"no such config", "POST", "/admin/dead-letters/requeue", `{"ids":["dispatch:PAYMENT:p-1"],"rateLimitConfig":"nope"}`, "admin", http.StatusUnprocessableEntity},
		{"malformed", "POST", "/admin/dead-letters/requeue", `{"ids":`, "admin", http.StatusBadRequest},
		{"requeued", "POST", "/admin/dead-letters/requeue", `{"ids":["dispatch:PAYMENT:p-1"],"reason":"engine back"}`, "admin", http.StatusOK},
		{"no longer dead", "POST", "/admin/dead-letters/requeue", `{"ids":["dispatch:PAYMENT:p-1"]}`, "admin", http.StatusConflict},
	} {
		code, body := do(tt.method, tt.path, tt.body, tt.token)
		if code != tt.want {
			t.Errorf("%s: %d %v, want %d", tt.name, code, body, tt.want)
		}
		if tt.want == http.StatusConflict && !strings.Contains(body["detail"].(string), "dispatch:PAYMENT:p-1") {
			t.Errorf("%s: the 409 does not name the letter: %v", tt.name, body)
		}
	}
	// One audit entry, for the requeue that moved something: who and how many.
	if len(aud.entries) != 1 {
		t.Fatalf("audit entries %+v, want the one requeue", aud.entries)
	}
	e := aud.entries[0]
	var detail map[string]any
	_ = json.Unmarshal(e.Detail, &detail)
	if !strings.Contains(e.Actor, "ops") || detail["requeued"] != float64(1) || detail["reason"] != "engine back" {
		t.Fatalf("audit entry %+v %v", e, detail)
	}
}
