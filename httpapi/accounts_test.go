package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/ledger/service"
)

// fakeLedger keeps accounts and rates in memory, validating as the real
// service does. Account "broken" and base CHF fail as a database would.
type fakeLedger struct {
	accounts map[string]service.NewAccount
	rates    []fx.Rate
}

func (f *fakeLedger) CreateAccount(_ context.Context, n service.NewAccount) (service.AccountView, bool, error) {
	if err := service.Validate(n); err != nil {
		return service.AccountView{}, false, err
	}
	if n.AccountID == "broken" {
		return service.AccountView{}, false, errors.New("connection refused")
	}
	if have, ok := f.accounts[n.AccountID]; ok {
		if !have.Spec.Equal(n.Spec) || len(have.Limits) != len(n.Limits) {
			return service.AccountView{}, false, ledger.Refuse(ledger.CodeAccountConflict, "different", nil)
		}
		return f.view(n), false, nil
	}
	f.accounts[n.AccountID] = n
	return f.view(n), true, nil
}

func (f *fakeLedger) view(n service.NewAccount) service.AccountView {
	v := service.AccountView{Account: account.Account{Spec: n.Spec, Balance: n.OpeningBalance}}
	for _, l := range n.Limits {
		s, e := l.Period.Window(time.Now())
		v.Limits = append(v.Limits, limit.Usage{Period: l.Period, Limit: l.Amount, WindowStart: s, WindowEnd: e,
			WindowLimit: l.Amount, Available: l.Amount})
	}
	return v
}

func (f *fakeLedger) Account(_ context.Context, tenant, id string) (service.AccountView, error) {
	if id == "broken" {
		return service.AccountView{}, errors.New("connection refused")
	}
	n, ok := f.accounts[id]
	if !ok || tenant != "" && n.TenantID != tenant {
		return service.AccountView{}, ledger.Refuse(ledger.CodeAccountNotFound, "no account "+id, nil)
	}
	return f.view(n), nil
}

func (f *fakeLedger) SetRateTx(_ context.Context, _ pgx.Tx, r fx.Rate) (fx.Rate, error) {
	base, quote, rate, setBy := r.Base, r.Quote, r.Rate, r.SetBy
	if err := fx.ValidateRate(base, quote, rate); err != nil {
		return fx.Rate{}, err
	}
	if base == "CHF" {
		return fx.Rate{}, errors.New("connection refused")
	}
	r = fx.Rate{Base: base, Quote: quote, Rate: rate, Dealable: r.Dealable, SetBy: setBy, UpdatedAt: time.Now()}
	f.rates = append(f.rates, r)
	return r, nil
}

func (f *fakeLedger) Rates(context.Context) ([]fx.Rate, error) { return f.rates, nil }

func TestAccountEndpoints(t *testing.T) {
	t.Parallel()
	f := &fakeLedger{accounts: map[string]service.NewAccount{}}
	rt := newRouter(t, httpapi.RouterConfig{Services: httpapi.Services{Accounts: f, FXRates: f, Audit: &fakeAudit{}}})
	body := `{"accountId":"ACC-1","tenantId":"acme","currency":"EUR","balance":"1000.00","limitBased":false,"fee":"0.50",
		"limits":[{"period":"DAY","amount":"5000"},{"period":"MONTH","amount":"20000.00"}]}`
	tests := []struct {
		name, method, path, body string
		header                   string // X-Operator
		wantStatus               int
		wantFields               []string // the fields a 422 names, in order
		wantBody                 string   // a substring of a 2xx body
	}{
		{"create", "POST", "/v1/accounts", body, "", 201, nil, `"balance":"1000.00"`},
		{"the same body again", "POST", "/v1/accounts", body, "", 200, nil, `"fee":"0.50"`},
		{"another body, same id", "POST", "/v1/accounts", strings.Replace(body, `"1000.00"`, `"999.00"`, 1), "", 409, nil, ""},
		{"JPY without decimals", "POST", "/v1/accounts", `{"accountId":"JP-1","tenantId":"t","currency":"JPY","balance":"1000"}`, "", 201, nil, `"balance":"1000"`},
		{"every field wrong", "POST", "/v1/accounts",
			`{"accountId":"bad id","tenantId":"","currency":"EURO","balance":"-1","fee":"x",
			  "limits":[{"period":"YEAR","amount":"1"},{"period":"DAY","amount":"1"},{"period":"DAY","amount":"abc"}]}`, "",
			422, []string{"fee", "limits[2].amount", "accountId", "tenantId", "currency", "balance", "limits[0].period", "limits[2].period"}, ""},
		{"numbers instead of strings", "POST", "/v1/accounts",
			`{"accountId":"N-1","tenantId":"t","currency":"EUR","balance":100.10,"fee":0.5,"limits":[{"period":"DAY","amount":1e3}]}`, "",
			422, []string{"balance", "fee", "limits[0].amount"}, ""},
		{"too many decimals", "POST", "/v1/accounts",
			`{"accountId":"D-1","tenantId":"t","currency":"BHD","balance":"1.2345","limits":[{"period":"DAY","amount":"0.0001"}]}`, "",
			422, []string{"balance", "limits[0].amount"}, ""},
		{"absurd exponents", "POST", "/v1/accounts",
			`{"accountId":"E-1","tenantId":"t","currency":"EUR","balance":"1e-999999999","limits":[{"period":"DAY","amount":"1e999999999"}]}`, "",
			422, []string{"balance", "limits[0].amount"}, ""},
		{"missing balance", "POST", "/v1/accounts", `{"accountId":"M-1","tenantId":"t","currency":"EUR"}`, "", 422, []string{"balance"}, ""},
		{"zero limit, negative fee", "POST", "/v1/accounts",
			`{"accountId":"Z-1","tenantId":"t","currency":"EUR","balance":"0","fee":"-1","limits":[{"period":"WEEK","amount":"0"}]}`, "",
			422, []string{"fee", "limits[0].amount"}, ""},
		{"malformed JSON", "POST", "/v1/accounts", `{"accountId":`, "", 400, nil, ""},
		{"unknown field", "POST", "/v1/accounts", `{"accountNumber":"x"}`, "", 400, nil, ""},
		{"a string for a flag", "POST", "/v1/accounts", `{"accountId":"F","tenantId":"t","currency":"EUR","balance":"1","limitBased":"yes"}`, "", 400, []string{"limitBased"}, ""},
		{"an array for the body", "POST", "/v1/accounts", `[]`, "", 400, []string{""}, ""},
		{"a key twice", "POST", "/v1/accounts", `{"accountId":"D-1","accountId":"D-2","tenantId":"t","currency":"EUR","balance":"1"}`, "", 400, []string{"accountId"}, ""},
		{"a key twice, nested", "POST", "/v1/accounts", `{"accountId":"D-3","tenantId":"t","currency":"EUR","balance":"1","limits":[{"period":"DAY","period":"WEEK","amount":"1"}]}`, "", 400, []string{"limits[0].period"}, ""},
		{"deep nesting", "POST", "/v1/accounts", `{"limits":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, "", 400, nil, ""},
		{"not UTF-8", "POST", "/v1/accounts", "{\"accountId\":\"\xff\xfe\",\"tenantId\":\"t\",\"currency\":\"EUR\",\"balance\":\"1\"}", "", 400, nil, ""},
		{"an object for the limits", "POST", "/v1/accounts", `{"accountId":"F","tenantId":"t","currency":"EUR","balance":"1","limits":{}}`, "", 400, []string{"limits"}, ""},
		{"database down", "POST", "/v1/accounts", `{"accountId":"broken","tenantId":"t","currency":"EUR","balance":"1"}`, "", 503, nil, ""},
		{"get", "GET", "/v1/accounts/ACC-1", "", "", 200, nil, `"period":"DAY","amount":"5000.00"`},
		{"get unknown", "GET", "/v1/accounts/nope", "", "", 404, nil, ""},
		{"get, database down", "GET", "/v1/accounts/broken", "", "", 503, nil, ""},
		{"set a rate", "POST", "/admin/fx-rates", `{"base":"EUR","quote":"USD","rate":"1.0850"}`, "ops-anna", 200, nil, `"setBy":"ops-anna"`},
		{"set a rate, no operator", "POST", "/admin/fx-rates", `{"base":"USD","quote":"JPY","rate":"150.5"}`, "", 200, nil, `"setBy":"admin-api"`},
		{"an operator name too long", "POST", "/admin/fx-rates", `{"base":"EUR","quote":"USD","rate":"1.0850"}`, strings.Repeat("x", 129), 400, []string{"X-Operator"}, ""},
		{"an operator name with a control character", "POST", "/admin/fx-rates", `{"base":"EUR","quote":"USD","rate":"1.0850"}`, "ops\tanna", 400, []string{"X-Operator"}, ""},
		{"get an absurd id", "GET", "/v1/accounts/" + strings.Repeat("A", 5000), "", "", 404, nil, ""},
		{"a rate as a number", "POST", "/admin/fx-rates", `{"base":"EUR","quote":"GBP","rate":0.85}`, "", 422, []string{"rate"}, ""},
		{"a bad rate", "POST", "/admin/fx-rates", `{"base":"eur","quote":"eur","rate":"-1"}`, "", 422, []string{"rate", "base", "quote"}, ""},
		{"an absurd rate", "POST", "/admin/fx-rates", `{"base":"EUR","quote":"USD","rate":"1e-999999999"}`, "", 422, []string{"rate"}, ""},
		{"a pair with itself", "POST", "/admin/fx-rates", `{"base":"EUR","quote":"EUR","rate":"1"}`, "", 422, []string{"quote"}, ""},
		{"set a rate, database down", "POST", "/admin/fx-rates", `{"base":"CHF","quote":"EUR","rate":"1"}`, "", 503, nil, ""},
		{"list rates", "GET", "/admin/fx-rates", "", "", 200, nil, `"rate":"1.085"`},
		{"wrong method", "DELETE", "/admin/fx-rates", "", "", 405, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			if tt.header != "" {
				req.Header.Set(httpapi.OperatorHeader, tt.header)
			}
			rec := httptest.NewRecorder()
			rt.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if rec.Code >= 400 {
				var p httpapi.Problem
				if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
					t.Fatalf("content type %q", ct)
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(p.Type, "https://paydispatch.dev/problems/") {
					t.Fatalf("problem type %q: want a stable paydispatch type URI", p.Type)
				}
				if strings.Contains(rec.Body.String(), "httpapi.") {
					t.Fatalf("the problem names a Go type: %s", rec.Body)
				}
				var got []string
				for _, e := range p.Errors {
					got = append(got, e.Field)
				}
				if tt.wantFields != nil && strings.Join(got, ",") != strings.Join(tt.wantFields, ",") {
					t.Fatalf("fields %v, want %v: %s", got, tt.wantFields, rec.Body)
				}
				return
			}
			if !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Fatalf("body lacks %s: %s", tt.wantBody, rec.Body)
			}
		})
	}
}
