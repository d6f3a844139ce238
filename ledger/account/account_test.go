package account_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
)

var ctx = context.Background()

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func mustCreate(t testing.TB, pool *pgxpool.Pool, s account.Spec) account.Account {
	t.Helper()
	a, created, err := account.Create(ctx, pool, s)
	if err != nil || !created {
		t.Fatalf("create %s: %v %v", s.AccountID, created, err)
	}
	return a
}

func eur(id, balance string) account.Spec {
	return account.Spec{AccountID: id, TenantID: "acme", Currency: "EUR", OpeningBalance: dec(balance)}
}

func TestCreate(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	base := eur("ACC-1", "100.00")
	base.Fee = dec("0.50")
	a := mustCreate(t, pool, base)
	if !a.Balance.Equal(dec("100")) || a.TxnSeq != 0 {
		t.Fatalf("created: %+v", a)
	}
	same := base
	same.OpeningBalance = dec("100") // 100 == 100.00
	other := func(f func(*account.Spec)) account.Spec { s := base; f(&s); return s }
	tests := []struct {
		name        string
		spec        account.Spec
		wantCreated bool
		wantCode    ledger.Code
		wantFields  []string
	}{
		{"same spec again", same, false, "", nil},
		{"another tenant", other(func(s *account.Spec) { s.TenantID = "other" }), false, ledger.CodeAccountConflict, nil},
		{"another currency", other(func(s *account.Spec) { s.Currency = "USD" }), false, ledger.CodeAccountConflict, nil},
		{"another balance", other(func(s *account.Spec) { s.OpeningBalance = dec("101") }), false, ledger.CodeAccountConflict, nil},
		{"limit based", other(func(s *account.Spec) { s.LimitBased = true }), false, ledger.CodeAccountConflict, nil},
		{"another fee", other(func(s *account.Spec) { s.Fee = dec("0") }), false, ledger.CodeAccountConflict, nil},
		{"new account", eur("ACC-2", "0"), true, "", nil},
		{"bad fields", account.Spec{AccountID: "a b", TenantID: "", Currency: "eur", OpeningBalance: dec("-1"), Fee: dec("-0.01")},
			false, ledger.CodeInvalidArgument, []string{"accountId", "tenantId", "currency", "balance", "fee"}},
		{"JPY with decimals", account.Spec{AccountID: "J", TenantID: "t", Currency: "JPY", OpeningBalance: dec("10.5")},
			false, ledger.CodeInvalidArgument, []string{"balance"}},
		{"BHD with three decimals", account.Spec{AccountID: "B", TenantID: "t", Currency: "BHD", OpeningBalance: dec("10.125")}, true, "", nil},
		{"BHD with four decimals", account.Spec{AccountID: "B4", TenantID: "t", Currency: "BHD", OpeningBalance: dec("10.1255")},
			false, ledger.CodeInvalidArgument, []string{"balance"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, created, err := account.Create(ctx, pool, tt.spec)
			if ledger.CodeOf(err) != tt.wantCode || created != tt.wantCreated {
				t.Fatalf("created %v, err %v; want %v, code %q", created, err, tt.wantCreated, tt.wantCode)
			}
			if tt.wantFields != nil {
				var bad *field.Invalid
				errors.As(err, &bad)
				var got []string
				for _, f := range bad.Fields {
					got = append(got, f.Field)
				}
				if fmt.Sprint(got) != fmt.Sprint(tt.wantFields) {
					t.Fatalf("fields %v, want %v", got, tt.wantFields)
				}
			}
		})
	}
	if _, err := account.Get(ctx, pool, "nope"); !errors.Is(err, ledger.ErrAccountNotFound) {
		t.Fatalf("get unknown: %v", err)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	mustCreate(t, pool, eur("L-1", "1"))
	lb := account.Spec{AccountID: "L-2", TenantID: "globex", Currency: "JPY", OpeningBalance: dec("0"), LimitBased: true, Fee: dec("100")}
	mustCreate(t, pool, lb)
	l1, l2 := account.Ref{TenantID: "acme", ExternalID: "L-1"}, account.Ref{TenantID: "globex", ExternalID: "L-2"}
	l3, l2acme := account.Ref{TenantID: "acme", ExternalID: "L-3"}, account.Ref{TenantID: "acme", ExternalID: "L-2"}
	got, err := account.Lookup(ctx, pool, []account.Ref{l1, l2, l3, l1, l2acme})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[l1].Currency != "EUR" || got[l1].LimitBased || got[l1].AccountID != "L-1" ||
		got[l2].TenantID != "globex" || !got[l2].LimitBased || !got[l2].Fee.Equal(dec("100")) {
		t.Fatalf("lookup: %+v", got)
	}
	if _, ok := got[l3]; ok {
		t.Fatal("an unknown account was found")
	}
	if _, ok := got[l2acme]; ok {
		t.Fatal("globex's account was found for acme")
	}
}
