package audit_test

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// An operator's change and its entry, committed together, and read back.
func Example() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	if _, err := pool.Exec(ctx, `CREATE TABLE settings (name text PRIMARY KEY, value text NOT NULL)`); err != nil {
		fmt.Println(err)
		return
	}
	err = audit.Change(ctx, pool, "cli:anna", "config set", "PAYMENT enabled=false", func(tx pgx.Tx) (any, error) {
		_, err := tx.Exec(ctx, `INSERT INTO settings VALUES ('PAYMENT.enabled', 'false')`)
		return map[string]any{"args": []string{"PAYMENT", "enabled=false"}}, err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	log := audit.New(audit.Config{DB: pool})
	entries, _, err := log.List(ctx, 10, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range entries {
		fmt.Println(e.Actor, "|", e.Action, "|", e.Target, "|", string(e.Detail))
	}
	// Output:
	// cli:anna | config set | PAYMENT enabled=false | {"args": ["PAYMENT", "enabled=false"]}
}
