package auth_test

import (
	"context"
	"fmt"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// A token for one tenant's ERP: it may submit and read payments of acme
// only, until it is revoked.
func Example() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	store := auth.NewStore(pool)

	secret, tok, err := store.Create(ctx, auth.NewToken{Name: "acme ERP", TenantID: "acme",
		Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead}})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := store.Authenticate(ctx, secret)
	fmt.Println(p.Name, p.Has(auth.PaymentsWrite), p.Has(auth.Admin), p.Sees("acme"), p.Sees("globex"), err)

	_ = store.Revoke(ctx, tok.ID)
	_, err = store.Authenticate(ctx, secret)
	fmt.Println(err)
	// Output:
	// acme ERP true false true false <nil>
	// auth: token unknown, revoked or expired
}
