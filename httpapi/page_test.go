package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
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
		pays.rejections = append(pays.rejections, payment.LineError{Line: i * 10, Fields: []payment.FieldError{{Field: "amount", Detail: "x"}}})
		led.rates = append(led.rates, fx.Rate{Base: "EUR", Quote: fmt.Sprintf("X%02d", i), Rate: decimal.NewFromInt(int64(i))})
		pacer.configs = append(pacer.configs, pacing.Config{Name: fmt.Sprintf("cfg-%d", i), MaxPerWindow: 1, Window: time.Second})
	}
	for i := 1; i <= n; i++ {
		log.entries = append(log.entries, audit.Entry{Seq: int64(i), Action: fmt.Sprint(i), Detail: json.RawMessage(`{}`)})
	}
	rt := httpapi.NewRouter(nil)
	rt.HandlePayments(pays)
	rt.HandleFXRates(led)
	rt.HandlePacing(pacer)
	rt.HandleAudit(log)
	rt.RequireAuth(fakeTokens{"admin": {TokenID: "tok_a", Scopes: []auth.Scope{auth.Admin}}})

	tests := []struct {
		path, field, key string
		want             string
	}{
		{"/v1/payment-batches/b/rejections", "rejections", "line", "10 20 30 40 50 60 70"},
		{"/admin/fx-rates", "rates", "quote", "X01 X02 X03 X04 X05 X06 X07"},
		{"/admin/rate-limit/config", "configs", "configName", "cfg-1 cfg-2 cfg-3 cfg-4 cfg-5 cfg-6 cfg-7"},
		{"/admin/audit", "entries", "action", "7 6 5 4 3 2 1"},
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
