package service_test

import (
	"fmt"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/ledger/service"
)

// What POST /v1/accounts and GET /v1/accounts/{id} do.
func Example() {
	pool, drop, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	s := service.New(pool)
	n := service.NewAccount{
		Spec:   account.Spec{AccountID: "CORP-1", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("250000.00"), LimitBased: true},
		Limits: []limit.Limit{{Period: limit.Day, Amount: dec("100000")}},
	}
	_, created, err := s.CreateAccount(ctx, n)
	fmt.Println(created, err)
	_, created, err = s.CreateAccount(ctx, n) // the same request again
	fmt.Println(created, err)
	v, _ := s.Account(ctx, "acme", "CORP-1")
	fmt.Println(v.Balance, v.LimitBased, v.Limits[0].Period, v.Limits[0].Available, len(v.RecentTransactions))
	// Output:
	// true <nil>
	// false <nil>
	// 250000 true DAY 100000 0
}
