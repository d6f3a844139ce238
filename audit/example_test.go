package audit_test

import (
	"context"
	"fmt"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/internal/pgtest"
)

// An operator's change recorded, and read back.
func Example() {
	ctx := context.Background()
	log := audit.Log{DB: pgtest.ExamplePool()}
	if err := log.Record(ctx, "cli:anna", "config set", "PAYMENT enabled=false", map[string]any{"args": []string{"PAYMENT", "enabled=false"}}); err != nil {
		fmt.Println(err)
		return
	}
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
