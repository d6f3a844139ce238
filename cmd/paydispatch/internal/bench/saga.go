package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
)

// SagaOptions configure the saga benchmark.
type SagaOptions struct {
	Env

	N           int // payments of each run
	Accounts    int // accounts of the spread run
	Concurrency int // payments executed at once (and baseline clients)
	Quick       bool
	Ephemeral   bool
}

// SagaSettings binds the benchmark's flags.
func SagaSettings(o *SagaOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("n", 10_000, 100, 1_000_000, "payments of each run", &o.N),
		config.Int("accounts", 1000, 2, 1_000_000, "accounts the spread run's payments are drawn from", &o.Accounts),
		config.Int("concurrency", 32, 1, 1024, "payments executed at once, and the baseline's clients", &o.Concurrency),
		config.Bool("quick", "a short run: 2,000 payments each", &o.Quick),
		config.Bool("ephemeral", "run the private PostgreSQL without fsync (not the product's setting)", &o.Ephemeral),
	}
}

// RunSaga measures SubmitPayment on the ledger and the process store,
// without Temporal: each payment runs the process as the exec workflow's
// local activities do (process.RunDirect), after Phase A scheduled it
// (not timed). Two runs: (a) payments spread over many accounts and (b)
// all from one account, each beside a baseline from the same run: one
// plain debit UPDATE and one INSERT per payment, in one transaction, at
// the same concurrency over the same accounts. It ends with the ledger
// check (payment.Verify) and fails on any violation.
func RunSaga(ctx context.Context, o SagaOptions) error {
	if o.Quick {
		o.N = min(o.N, 2000)
	}
	runStart, _ := readCPU()
	pool, where, cleanup, err := benchDatabase(ctx, dbOptions{URL: o.DatabaseURL, BinDir: o.PGBinDir, Ephemeral: o.Ephemeral,
		Logger: o.Logger, MaxConns: int32(o.Concurrency + 4)})
	if err != nil {
		return err
	}
	defer cleanup()
	if _, err := app.Migrate(ctx, pool, nil); err != nil {
		return err
	}
	reg, err := process.NewRegistry(payment.SubmitPayment(payment.SubmitConfig{}))
	if err != nil {
		return err
	}
	b := &sagaBench{o: o, pool: pool, acts: process.NewActivities(process.ActivitiesConfig{DB: pool, Registry: reg})}
	b.header(ctx, where)

	b.printf("\nsetup (not timed): %s accounts, one more for the single-account run, %s payments scheduled by Phase A ...\n",
		thousands(o.Accounts), thousands(2*o.N))
	if err := b.setup(ctx); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	b.printf("SubmitPayment on an EUR account with a fee, a payment in EUR: CreateTransaction → CreatePayment\n")
	b.printf("(the booking, ACCEPTED and the rail instruction in the outbox), each step logged; %d at once.\n", o.Concurrency)

	runs := []struct {
		name, prefix string
		account      func(i int) string
		target       float64
	}{
		{fmt.Sprintf("(a) over %s accounts", thousands(o.Accounts)), "a", func(i int) string { return spreadAccount(i % o.Accounts) }, 2000},
		{"(b) all from one account", "b", func(int) string { return hotAccount }, 500},
	}
	for _, r := range runs {
		phase, _ := readCPU()
		base, err := b.baseline(ctx, r.account)
		if err != nil {
			return fmt.Errorf("baseline %s: %w", r.name, err)
		}
		baseSteal := b.stolen(phase)
		phase, _ = readCPU()
		cpu0 := processCPU()
		rate, err := b.saga(ctx, r.prefix)
		if err != nil {
			return fmt.Errorf("saga %s: %w", r.name, err)
		}
		busy := busySince(phase)
		b.printf("\n%s:\n", r.name)
		b.printf("  baseline, plain debit UPDATE + INSERT:  %8.0f payments/s%s\n", base, baseSteal)
		b.printf("  SubmitPayment:                          %8.0f payments/s (%.2f × baseline)%s\n", rate, quotient(rate, base), b.stolen(phase))
		o.Figures.add(Figure{What: "SubmitPayment, " + r.name, Value: rate, Unit: "payments/s",
			Baseline: "plain debit UPDATE + INSERT", BaseVal: base, BaseUnit: "payments/s"})
		b.printf("  CPU per payment: %.2f ms on the machine (PostgreSQL included), %.2f ms in this process\n",
			msPer(busy, o.N), msPer(processCPU()-cpu0, o.N))
		b.printf("  target ≥ %s/s: %s\n", thousands(int(r.target)), verdict(rate >= r.target))
	}

	var accepted, debits int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payments WHERE status = 'ACCEPTED'),
		(SELECT count(*) FROM account_transaction WHERE type = 'DEBIT')`).Scan(&accepted, &debits); err != nil {
		return err
	}
	vs, err := payment.Verify(ctx, pool)
	if err != nil {
		return fmt.Errorf("ledger check: %w", err)
	}
	b.printf("\ncheck: %s payments ACCEPTED, %s debits, ledger check (paydispatch verify): %d violations: %s\n",
		thousands(accepted), thousands(debits), len(vs), verdict(len(vs) == 0 && accepted == 2*o.N && debits == 2*o.N))
	for _, v := range vs {
		b.printf("  %s\n", v)
	}
	b.printf("CPU stolen by the hypervisor over the whole run:%s\n", b.stolen(runStart))
	if len(vs) > 0 || accepted != 2*o.N || debits != 2*o.N {
		return fmt.Errorf("the ledger check failed: %d violations, %d of %d payments ACCEPTED, %d debits", len(vs), accepted, 2*o.N, debits)
	}
	return nil
}

const hotAccount = "ACC-HOT"

func spreadAccount(i int) string { return fmt.Sprintf("ACC-%06d", i) }

func accountTenant(id string) string {
	if id == hotAccount {
		return "t0"
	}
	return "t" + id[len(id)-1:]
}

type sagaBench struct {
	o        SagaOptions
	pool     *pgxpool.Pool
	acts     *process.Activities
	contexts map[string]payment.Context
}

func (b *sagaBench) printf(format string, args ...any) { fmt.Fprintf(b.o.Out, format, args...) }

func (b *sagaBench) header(ctx context.Context, where string) {
	var version, syncCommit, fsync string
	_ = b.pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('synchronous_commit'),
		current_setting('fsync')`).Scan(&version, &syncCommit, &fsync)
	b.printf("paydispatch bench saga: %d CPUs, %s, PostgreSQL %s (%s; fsync=%s, synchronous_commit=%s); no Temporal\n",
		runtime.NumCPU(), memTotal(), version, where, fsync, syncCommit)
}

func (b *sagaBench) stolen(start cpuTimes) string {
	s, ok := stolenSince(start)
	if !ok {
		return ""
	}
	return fmt.Sprintf("  [steal %.1f %%]", 100*s)
}

// setup opens the accounts, the baseline's tables, and schedules the
// payments of both runs through Phase A.
func (b *sagaBench) setup(ctx context.Context) error {
	balance := decimal.NewFromInt(1_000_000_000)
	fee := decimal.RequireFromString("0.10")
	ids := []string{hotAccount}
	for i := range b.o.Accounts {
		ids = append(ids, spreadAccount(i))
	}
	for _, id := range ids {
		if _, _, err := account.Create(ctx, b.pool, account.Spec{AccountID: id, TenantID: accountTenant(id), Currency: "EUR",
			OpeningBalance: balance, Fee: fee}); err != nil {
			return err
		}
	}
	if _, err := b.pool.Exec(ctx, `
		CREATE TABLE bench_balance (account_id text PRIMARY KEY, balance numeric(24,4) NOT NULL);
		CREATE TABLE bench_debit (id bigserial PRIMARY KEY, account_id text NOT NULL, amount numeric(24,4) NOT NULL,
		                          balance_after numeric(24,4) NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
		INSERT INTO bench_balance SELECT account_id, balance FROM account`); err != nil {
		return fmt.Errorf("baseline tables: %w", err)
	}
	init := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(b.pool), Queue: queue.New(b.pool)})
	at := time.Now().Add(time.Hour)
	for _, run := range []struct {
		prefix  string
		account func(int) string
	}{{"a", func(i int) string { return spreadAccount(i % b.o.Accounts) }}, {"b", func(int) string { return hotAccount }}} {
		for lo := 0; lo < b.o.N; lo += 1000 {
			var chunk []payment.Request
			for i := lo; i < min(lo+1000, b.o.N); i++ {
				acct := run.account(i)
				chunk = append(chunk, payment.Request{
					PaymentID: sagaPaymentID(run.prefix, i), TenantID: accountTenant(acct), DebtorAccount: acct,
					Amount: "1.00", Currency: "EUR", Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"},
					RequestedExecutionTime: at,
				})
			}
			res, err := init.InitChunk(ctx, chunk, "bench-saga-"+run.prefix)
			if err != nil {
				return err
			}
			if res.Scheduled != len(chunk) {
				return fmt.Errorf("phase A scheduled %d of %d payments", res.Scheduled, len(chunk))
			}
		}
	}
	// The execution reads each payment's context from its row; read them
	// all now, so the timed runs touch only the saga.
	rows, err := b.pool.Query(ctx, `SELECT payment_id, external_id FROM payments WHERE context IS NOT NULL`)
	if err != nil {
		return err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Key, ID string }])
	if err != nil {
		return err
	}
	store := payment.NewStore(b.pool)
	b.contexts = map[string]payment.Context{}
	for _, k := range keys {
		if b.contexts[k.ID], err = store.Context(ctx, k.Key); err != nil {
			return err
		}
	}
	return nil
}

func sagaPaymentID(prefix string, i int) string { return fmt.Sprintf("saga-%s-%07d", prefix, i) }

// baseline is the least a debit can cost: the balance updated and a row
// recorded, in one transaction, nothing checked or logged.
func (b *sagaBench) baseline(ctx context.Context, accountOf func(int) string) (float64, error) {
	one := decimal.RequireFromString("1.10")
	return concurrently(ctx, b.o.Concurrency, b.o.N, func(ctx context.Context, i int) error {
		return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			acct := accountOf(i)
			var after decimal.Decimal
			if err := tx.QueryRow(ctx, `UPDATE bench_balance SET balance = balance - $2 WHERE account_id = $1 RETURNING balance`,
				acct, one).Scan(&after); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO bench_debit (account_id, amount, balance_after) VALUES ($1, $2, $3)`, acct, one, after)
			return err
		})
	})
}

// saga executes the run's payments as the exec workflow does.
func (b *sagaBench) saga(ctx context.Context, prefix string) (float64, error) {
	now := time.Now()
	return concurrently(ctx, b.o.Concurrency, b.o.N, func(ctx context.Context, i int) error {
		id := sagaPaymentID(prefix, i)
		pc, ok := b.contexts[id]
		if !ok {
			return fmt.Errorf("payment %s has no context", id)
		}
		key := payment.Key(pc.Request.TenantID, id)
		out, err := process.RunDirect(ctx, b.acts, process.Options{
			Type: payment.SubmitPaymentType, BusinessKey: key, Data: payment.SubmitData(key, pc, now),
		})
		if err != nil {
			return err
		}
		if out.Status != process.StatusSucceeded {
			return fmt.Errorf("payment %s: process %s at %s (%s)", id, out.Status, out.Step, out.ErrorCode)
		}
		return nil
	})
}
