// Package ledgertest gives the ledger's tests the part of the database
// they need, and no other package's.
package ledgertest

import (
	"io/fs"

	accountmig "github.com/paydispatch/paydispatch/ledger/account/migrations"
	fxmig "github.com/paydispatch/paydispatch/ledger/fx/migrations"
	limitmig "github.com/paydispatch/paydispatch/ledger/limit/migrations"
	"github.com/paydispatch/paydispatch/postgres"
)

// Schema is the ledger's tables and functions: the accounts', the limits'
// and the FX rates', for internal/testkit/pgtest.Main.
func Schema() postgres.Schema {
	return postgres.Schema{
		Migrations: []fs.FS{accountmig.FS, limitmig.FS, fxmig.FS},
		Scripts:    []postgres.Script{{Name: "ledger/account/migrations/functions.sql", SQL: accountmig.Functions}},
	}
}
