package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/routing"
)

// TestEveryListPages walks each list a page at a time: every item once, in
// order, "next" on every page but the last, and a bad limit or cursor is
// a 400 naming it.
func TestEveryListPages(t *testing.T) {
	t.Parallel()
	const n = 7
	pays := &fakePayments{byID: map[string]payment.Request{"p": {PaymentID: "p", TenantID: "acme"}}}
	led := &fakeLedger{accounts: map[string]service.NewAccount{}}
	pacer := &fakePacer{}
	log := &fakeAudit{}
	for i := n; i > 0; i-- { // stored out of order: the pages are not
		pays.rejections = append(pays.rejections, payment.LineError{Line: i * 10, Fields: []field.Error{{Field: "amount", Detail: "x"}}})
		led.rates = append(led.rates, fx.Rate{Base: "EUR", Quote: fmt.Sprintf("X%02d", i), Rate: decimal.NewFromInt(int64(i))})
		pacer.configs = append(pacer.configs, pacing.Limit{Name: fmt.Sprintf("cfg-%d", i), MaxPerWindow: 1, Window: time.Second})
	}
	for i := 1; i <= n; i++ {
		log.entries = append(log.entries, audit.Entry{Seq: int64(i), Action: fmt.Sprint(i), Detail: json.RawMessage(`{}`)})
	}
	rails := newFakeRails()
	for i := n; i > 0; i-- {
		_, _ = rails.SetCutoffRule(context.Background(), nil, fmt.Sprintf("t%02d", i), routing.Hold)
	}
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{"admin": {TokenID: "tok_a", Scopes: []auth.Scope{auth.Admin}}}, Services: httpapi.Services{Payments: pays, FXRates: led, Pacer: pacer, Audit: log, Rails: rails}})

	tests := []struct {
		path, field, key string
		want             string
	}{
		{"/v1/payment-batches/b/rejections", "rejections", "line", "10 20 30 40 50 60 70"},
		{"/admin/fx-rates", "rates", "quote", "X01 X02 X03 X04 X05 X06 X07"},
		{"/admin/rate-limit/config", "configs", "configName", "cfg-1 cfg-2 cfg-3 cfg-4 cfg-5 cfg-6 cfg-7"},
		{"/admin/audit", "entries", "action", "7 6 5 4 3 2 1"},
		{"/admin/cutoff-rules", "rules", "tenantId", "t01 t02 t03 t04 t05 t06 t07"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			for _, limit := range []int{1, 2, 3, 7, 100} {
				var got []string
				cursor, pages := "", 0
				for {
					rec := call(rt, "GET", fmt.Sprintf("%s?limit=%d&cursor=%s", tt.path, limit, cursor), "", "Bearer admin")
					var page map[string]any
					if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || rec.Code != 200 {
						t.Fatalf("limit %d, cursor %q: %d %s", limit, cursor, rec.Code, rec.Body)
					}
					items, _ := page[tt.field].([]any)
					if len(items) > limit {
						t.Fatalf("limit %d: a page of %d", limit, len(items))
					}
					for _, it := range items {
						got = append(got, fmt.Sprint(it.(map[string]any)[tt.key]))
					}
					pages++
					next, more := page["next"].(string)
					if !more {
						break
					}
					if len(items) != limit || pages > n {
						t.Fatalf("limit %d: a short page (%d) with a next, or no end", limit, len(items))
					}
					cursor = next
				}
				if strings.Join(got, " ") != tt.want || pages != (n+limit-1)/limit {
					t.Errorf("limit %d: %d pages of %v, want %d pages of %s", limit, pages, got, (n+limit-1)/limit, tt.want)
				}
			}
			for _, q := range []string{"limit=0", "limit=1001", "limit=two", "cursor=" + strings.Repeat("z", 300)} {
				rec := call(rt, "GET", tt.path+"?"+q, "", "Bearer admin")
				field, _, _ := strings.Cut(q, "=")
				if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"field":"`+field+`"`) {
					t.Errorf("%s: %d %s, want a 400 naming %s", q, rec.Code, rec.Body, field)
				}
			}
		})
	}
}

// TestCursorsAreBound: a cursor pages only the list, tenant and filters
// it came from; anywhere else, or altered, it is a 400 naming cursor and
// saying to use next unchanged.
func TestCursorsAreBound(t *testing.T) {
	t.Parallel()
	// A router of its own for each request: paging sorts the fakes' lists
	// in place. A cursor is bound to a list, not to a router.
	router := func() *httpapi.Router {
		led := &fakeLedger{}
		pacer := &fakePacer{}
		log := &fakeAudit{}
		pays := &fakePayments{byID: map[string]payment.Request{"p": {PaymentID: "p", TenantID: "acme"}}}
		for i := 1; i <= 5; i++ {
			led.rates = append(led.rates, fx.Rate{Base: "EUR", Quote: fmt.Sprintf("X%02d", i), Rate: decimal.NewFromInt(int64(i))})
			pacer.configs = append(pacer.configs, pacing.Limit{Name: fmt.Sprintf("cfg-%d", i), MaxPerWindow: 1, Window: time.Second})
			log.entries = append(log.entries, audit.Entry{Seq: int64(i), Action: fmt.Sprint(i), Detail: json.RawMessage(`{}`)})
			pays.rejections = append(pays.rejections, payment.LineError{Line: i, Fields: []field.Error{{Field: "amount", Detail: "x"}}})
		}
		rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
			"admin": {TokenID: "a", Scopes: []auth.Scope{auth.Admin}},
			"acme":  {TokenID: "b", TenantID: "acme", Scopes: []auth.Scope{auth.Admin}},
			"other": {TokenID: "c", TenantID: "globex", Scopes: []auth.Scope{auth.Admin}},
		}, Services: httpapi.Services{FXRates: led, Pacer: pacer, Audit: log, Payments: pays}})
		return rt
	}
	next := func(path, token string) string {
		rec := call(router(), "GET", path, "", "Bearer "+token)
		var page struct{ Next string }
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || rec.Code != 200 || page.Next == "" {
			t.Fatalf("%s: %d %s, want a page with next", path, rec.Code, rec.Body)
		}
		return page.Next
	}
	audit := next("/admin/audit?limit=2", "admin")
	rates := next("/admin/fx-rates?limit=2", "admin")
	acmeRates := next("/admin/fx-rates?limit=2", "acme")
	filtered := next("/admin/rate-limit/config?limit=2&x=1", "admin")
	rejections := next("/v1/payment-batches/b/rejections?limit=2", "admin")
	tamper := []byte(rates)
	if mid := len(tamper) / 2; tamper[mid] == 'A' {
		tamper[mid] = 'B'
	} else {
		tamper[mid] = 'A'
	}
	tests := []struct {
		name, path, token string
		want              int
	}{
		{"its own list", "/admin/fx-rates?cursor=" + rates, "admin", 200},
		{"its own list, another limit", "/admin/fx-rates?limit=1&cursor=" + rates, "admin", 200},
		{"its own list, the same filter", "/admin/rate-limit/config?x=1&cursor=" + filtered, "admin", 200},
		{"its own tenant", "/admin/fx-rates?cursor=" + acmeRates, "acme", 200},
		{"the audit log's cursor on the FX rates", "/admin/fx-rates?cursor=" + audit, "admin", 400},
		{"the FX rates' cursor on the audit log", "/admin/audit?cursor=" + rates, "admin", 400},
		{"the FX rates' cursor on the configs", "/admin/rate-limit/config?cursor=" + rates, "admin", 400},
		{"another batch's rejections", "/v1/payment-batches/c/rejections?cursor=" + rejections, "admin", 400},
		{"another tenant", "/admin/fx-rates?cursor=" + acmeRates, "other", 400},
		{"no tenant from a tenant's cursor", "/admin/fx-rates?cursor=" + acmeRates, "admin", 400},
		{"a tenant from an admin's cursor", "/admin/fx-rates?cursor=" + rates, "acme", 400},
		{"a filter dropped", "/admin/rate-limit/config?cursor=" + filtered, "admin", 400},
		{"a filter changed", "/admin/rate-limit/config?x=2&cursor=" + filtered, "admin", 400},
		{"a filter added", "/admin/fx-rates?base=EUR&cursor=" + rates, "admin", 400},
		{"tampered", "/admin/fx-rates?cursor=" + string(tamper), "admin", 400},
		{"a raw key", "/admin/fx-rates?cursor=EUR/X02", "admin", 400},
		{"a raw sequence number", "/admin/audit?cursor=3", "admin", 400},
		{"not base64", "/admin/fx-rates?cursor=!!!", "admin", 400},
		{"too long", "/admin/fx-rates?cursor=" + strings.Repeat("A", 257), "admin", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := call(router(), "GET", tt.path, "", "Bearer "+tt.token)
			if rec.Code != tt.want {
				t.Fatalf("%d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			if tt.want != 400 {
				return
			}
			var p httpapi.Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || len(p.Errors) != 1 || p.Errors[0].Field != "cursor" ||
				p.Title != "Invalid query" || !strings.Contains(p.Detail, "previous page's next unchanged, with the same query parameters") {
				t.Fatalf("problem %s", rec.Body)
			}
		})
	}
}
