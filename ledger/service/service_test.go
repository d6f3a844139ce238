package service_test

import (
	"context"
	"errors"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/ledger/service"
)

var ctx = context.Background()

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestCreateAccount(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	s := service.New(pool)
	n := service.NewAccount{
		Spec:   account.Spec{AccountID: "S-1", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("500.00"), Fee: dec("1")},
		Limits: []limit.Limit{{Period: limit.Day, Amount: dec("300")}, {Period: limit.Minute, Amount: dec("100")}},
	}
	reordered := n
	reordered.Limits = []limit.Limit{{Period: limit.Minute, Amount: dec("100.00")}, {Period: limit.Day, Amount: dec("300")}}
	otherLimits := n
	otherLimits.Limits = []limit.Limit{{Period: limit.Day, Amount: dec("301")}}
	bad := n
	bad.Limits = []limit.Limit{{Period: "YEAR", Amount: dec("1")}}
	otherCurrency := n
	otherCurrency.Currency = "USD"
	// The id is acme's: globex may open an account of its own under it.
	theirs := n
	theirs.TenantID, theirs.Currency, theirs.OpeningBalance = "globex", "USD", dec("7")
	tests := []struct {
		name        string
		in          service.NewAccount
		wantCreated bool
		wantCode    ledger.Code
	}{
		{"create", n, true, ""},
		{"the same, limits in another order", reordered, false, ""},
		{"other limits", otherLimits, false, ledger.CodeAccountConflict},
		{"another currency", otherCurrency, false, ledger.CodeAccountConflict},
		{"bad limits", bad, false, ledger.CodeInvalidArgument},
		{"the same id in another tenant", theirs, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, created, err := s.CreateAccount(ctx, tt.in)
			if ledger.CodeOf(err) != tt.wantCode || created != tt.wantCreated {
				t.Fatalf("created %v, err %v; want %v %q", created, err, tt.wantCreated, tt.wantCode)
			}
			if err == nil && (len(v.Limits) != 2 || v.Limits[0].Period != limit.Minute || !v.Balance.Equal(tt.in.OpeningBalance) ||
				v.AccountID != account.Key(tt.in.TenantID, "S-1") || v.External() != "S-1" || v.TenantID != tt.in.TenantID) {
				t.Fatalf("view %+v", v)
			}
		})
	}
	// The view shows the debits and the limits' use.
	if _, err := account.Debit(ctx, pool, account.Entry{AccountID: account.Key("acme", "S-1"), Amount: dec("50"), Currency: "EUR", ChargeFee: true, Reference: "p1:CreateTransaction"}); err != nil {
		t.Fatal(err)
	}
	v, err := s.Account(ctx, "acme", "S-1")
	if err != nil || !v.Balance.Equal(dec("449")) || len(v.RecentTransactions) != 1 || !v.Limits[1].Available.Equal(dec("300")) {
		t.Fatalf("view %+v %v", v, err)
	}
	if v, err := s.Account(ctx, "globex", "S-1"); err != nil || !v.Balance.Equal(dec("7")) || len(v.RecentTransactions) != 0 {
		t.Fatalf("globex's S-1: %+v %v", v, err)
	}
	if _, err := s.Account(ctx, "", "S-1"); !errors.Is(err, ledger.ErrAccountAmbiguous) {
		t.Fatalf("an id two tenants use, no tenant named: %v", err)
	}
	for _, tenant := range []string{"acme", "", "initech"} {
		if _, err := s.Account(ctx, tenant, "nope"); !errors.Is(err, ledger.ErrAccountNotFound) {
			t.Fatalf("unknown for %q: %v", tenant, err)
		}
	}
	if _, err := s.SetRate(ctx, fx.Rate{Base: "EUR", Quote: "USD", Rate: dec("1.08"), Dealable: true, SetBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	if rates, err := s.Rates(ctx); err != nil || len(rates) != 1 {
		t.Fatalf("rates %v %v", rates, err)
	}
}
