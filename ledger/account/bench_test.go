package account_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/internal/ledgertest"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/postgres/pgserver"
)

// benchParallelism × GOMAXPROCS goroutines debit at once (32 on 2 cores):
// a payroll file's payments in flight.
const benchParallelism = 16

// BenchmarkDebit measures debits per second, each in its own committed
// transaction as a process step runs it, on one account and spread over
// 1,000 accounts, beside a baseline in the same run: a plain UPDATE of the
// balance and INSERT of the transaction, with no guard, no reference
// check, no sequence check. It runs on a private PostgreSQL with fsync
// and synchronous_commit on (the product's setting), or on
// TEST_DATABASE_URL when that is set:
//
//	go test -run '^$' -bench Debit -benchtime 5s ./ledger/account/
func BenchmarkDebit(b *testing.B) {
	pool := benchPool(b)
	for _, shape := range []struct {
		name     string
		accounts int
	}{{"one-account", 1}, {"1000-accounts", 1000}} {
		for _, v := range []struct {
			name  string
			debit func(ctx context.Context, tx pgx.Tx, id string) error
		}{
			{"baseline", baselineDebit},
			{"ledger", ledgerDebit},
			// Not the product's setting: shows what the commit's WAL flush
			// costs when one account's debits queue behind each other.
			{"ledger-async-commit", func(ctx context.Context, tx pgx.Tx, id string) error {
				if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
					return err
				}
				return ledgerDebit(ctx, tx, id)
			}},
		} {
			b.Run(shape.name+"/"+v.name, func(b *testing.B) {
				prefix := fmt.Sprintf("bench-%s-%s-%d-", shape.name, v.name, b.N)
				if _, err := pool.Exec(context.Background(), `INSERT INTO account (account_id, external_id, tenant_id, currency, opening_balance, balance, limit_based)
					SELECT $1 || g, $1 || g, 't', 'EUR', 1000000000, 1000000000, false FROM generate_series(0, $2 - 1) g`, prefix, shape.accounts); err != nil {
					b.Fatal(err)
				}
				var next atomic.Int64
				b.SetParallelism(benchParallelism)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					for pb.Next() {
						id := prefix + fmt.Sprint(next.Add(1)%int64(shape.accounts))
						if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return v.debit(ctx, tx, id) }); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "debits/s")
			})
		}
	}
}

func ledgerDebit(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := account.Debit(ctx, tx, account.Entry{AccountID: id, Amount: dec("1.00"), Currency: "EUR", Reference: uuid.NewString()})
	return err
}

// baselineDebit is the least a debit can be: one UPDATE, one INSERT.
func baselineDebit(ctx context.Context, tx pgx.Tx, id string) error {
	var seq int64
	var bal string
	if err := tx.QueryRow(ctx, `UPDATE account SET balance = balance - 1, txn_seq = txn_seq + 1 WHERE account_id = $1
		RETURNING txn_seq, balance::text`, id).Scan(&seq, &bal); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO account_transaction (transaction_id, account_id, seq, type, amount, balance_after, reference, value_date)
		VALUES ($1, $2, $3, 'DEBIT', 1, $4::numeric, $5, current_date)`, uuid.New(), id, seq, bal, uuid.NewString())
	return err
}

// benchPool returns a pool on a migrated database with durable settings.
func benchPool(b *testing.B) *pgxpool.Pool {
	b.Helper()
	if os.Getenv("TEST_DATABASE_URL") != "" {
		return pgtest.NewPool(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "ledger-bench-")
	if err != nil {
		b.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755) // the server user must enter it
	srv, err := pgserver.Start(ctx, pgserver.Options{Dir: filepath.Join(dir, "pg"), Database: "bench",
		Settings: map[string]string{"shared_buffers": "256MB"}})
	if err != nil {
		_ = os.RemoveAll(dir)
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Stop(ctx)
		_ = os.RemoveAll(dir)
	})
	pool, err := postgres.NewPool(ctx, srv.ConnString("bench"), 2*benchParallelism*2+4)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := postgres.Migrate(ctx, pool, ledgertest.Schema(), nil); err != nil {
		b.Fatal(err)
	}
	var fsync, sync string
	if err := pool.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit')`).Scan(&fsync, &sync); err != nil {
		b.Fatal(err)
	}
	b.Logf("private PostgreSQL: fsync=%s synchronous_commit=%s", fsync, sync)
	return pool
}
