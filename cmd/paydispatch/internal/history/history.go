package history

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/paydispatch/paydispatch/payment"
)

// Options say how much history to load and how.
type Options struct {
	// Payments is how many payments' worth of history.
	Payments int
	// Tenants is how many tenants the payments are spread over (default
	// 10): tenant tK pays from account ACC-tK, as the benchmarks' do.
	Tenants int
	// Days is how many past days the payments are spread over (default
	// 30), the last one yesterday.
	Days int
	// Now is the end of the history (default time.Now()).
	Now time.Time
	// Parallel is how many tables are copied at once (default 2).
	Parallel int
	// Tables, when set, are the only tables loaded (a test's, that reads
	// a few): the others get nothing, accounts and sequences are set all
	// the same.
	Tables []string
	// Progress, when set, is told of each table as it is loaded.
	Progress func(table string, rows int64, took time.Duration)
	// Retention, by table, is how long the retention cleaner keeps that
	// table's rows (Retained gives serve's): the load leaves out what the
	// cleaner would have deleted by Now, judged as the cleaner judges it
	// (a process by its end, and a failed one kept), so the history is
	// what a database that ran --days under that retention holds. A
	// table not named, or named with 0, gets every row; naming a table
	// the cleaner never touches is an error.
	Retention map[string]time.Duration
}

// Loaded is what Load wrote.
type Loaded struct {
	Payments int
	// Rows is how many rows each table received.
	Rows map[string]int64
	// Took is the load's wall time, Vacuum's included.
	Took, Vacuum time.Duration
}

// Total is the rows written in all.
func (l Loaded) Total() int64 {
	var n int64
	for _, r := range l.Rows {
		n += r
	}
	return n
}

// What happens to a payment, by its number: most are delivered.
const (
	kindDelivered = iota
	kindFailed
	kindCancelled
	kindRejected
)

func kindOf(i int) int {
	switch i % 100 {
	case 97:
		return kindFailed
	case 98:
		return kindCancelled
	case 99:
		return kindRejected
	}
	return kindDelivered
}

// The pacing the history was run at: 100/s in windows of 4 s, from 16:00.
const (
	configName = "payments"
	perSecond  = 100
	window     = 4 * time.Second
	dayStart   = 16 * time.Hour
	itemType   = payment.ItemType
)

// Tenant is tenant i's id, AccountOf its debtor account.
func Tenant(i int) string    { return "t" + strconv.Itoa(i) }
func AccountOf(i int) string { return "ACC-t" + strconv.Itoa(i) }

// plan places payment i in time and says who pays it.
type plan struct {
	o        Options
	start    time.Time // the first day's midnight
	perDay   int
	accounts []string
}

func (p *plan) tenant(i int) int { return i % p.o.Tenants }

// instant is when payment i's day's payments were due; slot when i ran.
func (p *plan) instant(i int) time.Time {
	return p.start.AddDate(0, 0, i/p.perDay).Add(dayStart)
}

func (p *plan) slot(i int) time.Time {
	return p.instant(i).Add(time.Duration(i%p.perDay) * time.Second / perSecond)
}

// amount is payment i's amount in cents: 1.00 to 5,000.00.
func amount(i int) int64 { return 100 + int64(i)*7919%499_900 }

func numeric(cents int64) pgtype.Numeric {
	return pgtype.Numeric{Int: big.NewInt(cents * 100), Exp: -4, Valid: true}
}

// id is a deterministic UUID for payment i of a kind of row: loads are
// repeatable, and no two rows share one.
func id(kind byte, i int) pgtype.UUID {
	var u [16]byte
	copy(u[:], "hist")
	u[4] = kind
	binary.BigEndian.PutUint64(u[8:], uint64(i))
	u[6] = 0x80 | u[6]&0x0f // version 8: custom
	u[8] = 0x80 | u[8]&0x3f // the variant
	return pgtype.UUID{Bytes: u, Valid: true}
}

func uuidString(u pgtype.UUID) string { return uuid.UUID(u.Bytes).String() }

func externalID(i int) string { return fmt.Sprintf("h-%09d", i) }

// Load writes the history into pool's database (migrated, every table
// empty of history), then VACUUMs (FREEZE, ANALYZE) what it loaded. The debtor accounts are created
// where missing; they must have no transactions yet.
func Load(ctx context.Context, pool *pgxpool.Pool, o Options) (Loaded, error) {
	if o.Payments < 1 {
		return Loaded{}, errors.New("history: want at least one payment")
	}
	if o.Tenants <= 0 {
		o.Tenants = 10
	}
	if o.Days <= 0 {
		o.Days = 30
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Parallel <= 0 {
		o.Parallel = 2
	}
	began := time.Now()
	p := &plan{o: o, start: o.Now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -o.Days), perDay: (o.Payments + o.Days - 1) / o.Days}
	for t := range o.Tenants {
		p.accounts = append(p.accounts, AccountOf(t))
	}
	debits, err := p.openAccounts(ctx, pool)
	if err != nil {
		return Loaded{}, err
	}
	tables := p.tables(debits)
	if err := p.retain(tables); err != nil {
		return Loaded{}, err
	}
	var mu sync.Mutex
	out := Loaded{Payments: o.Payments, Rows: map[string]int64{}}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Parallel)
	for _, t := range tables {
		if len(o.Tables) > 0 && !slices.Contains(o.Tables, t.name) {
			continue
		}
		g.Go(func() error {
			at := time.Now()
			n, err := copyTable(gctx, pool, t)
			if err != nil {
				return err
			}
			mu.Lock()
			out.Rows[t.name] += n
			mu.Unlock()
			if o.Progress != nil {
				o.Progress(t.name, n, time.Since(at))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return out, err
	}
	if err := p.finish(ctx, pool, debits); err != nil {
		return out, err
	}
	// Old rows as a database that ran for months holds them: frozen,
	// all-visible (index-only scans need it; a first read would otherwise
	// write each page's hint bits during the run measured after), and
	// counted for the planner.
	at := time.Now()
	for table := range out.Rows {
		if _, err := pool.Exec(ctx, "VACUUM (FREEZE, ANALYZE) "+pgx.Identifier{table}.Sanitize()); err != nil {
			return out, fmt.Errorf("history: vacuum %s: %w", table, err)
		}
	}
	if _, err := pool.Exec(ctx, "ANALYZE account; ANALYZE participant_outbox_sequences"); err != nil {
		return out, fmt.Errorf("history: analyze: %w", err)
	}
	out.Vacuum = time.Since(at)
	out.Took = time.Since(began)
	return out, nil
}

// copyTable copies t's rows. Into an empty table, its keys and indexes
// are dropped first and built after, each in one sort, instead of taking
// each row in turn at a random place: the load of a fresh database is
// several times faster. On failure they are built all the same.
func copyTable(ctx context.Context, pool *pgxpool.Pool, t table) (int64, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("history: copy %s: %w", t.name, err)
	}
	defer conn.Release()
	var empty bool
	if err := conn.QueryRow(ctx, "SELECT NOT EXISTS (SELECT 1 FROM "+pgx.Identifier{t.name}.Sanitize()+")").Scan(&empty); err != nil {
		return 0, fmt.Errorf("history: copy %s: %w", t.name, err)
	}
	var rebuild []string
	if empty {
		if rebuild, err = dropIndexes(ctx, conn.Conn(), t.name); err != nil {
			return 0, err
		}
	}
	n, copyErr := conn.CopyFrom(ctx, pgx.Identifier{t.name}, t.columns, t.rows)
	if copyErr != nil {
		copyErr = fmt.Errorf("history: copy %s: %w", t.name, copyErr)
	}
	if _, err := conn.Exec(ctx, "SET maintenance_work_mem = '256MB'"); err != nil {
		return n, errors.Join(copyErr, err)
	}
	for _, sql := range rebuild {
		if _, err := conn.Exec(context.WithoutCancel(ctx), sql); err != nil {
			return n, errors.Join(copyErr, fmt.Errorf("history: rebuild %s: %q: %w", t.name, sql, err))
		}
	}
	return n, copyErr
}

// dropIndexes drops a table's unique and primary keys and its other
// indexes, and returns the statements that build them again.
func dropIndexes(ctx context.Context, conn *pgx.Conn, table string) ([]string, error) {
	rows, err := conn.Query(ctx, `
		SELECT 'ALTER TABLE ' || c.conrelid::regclass || ' DROP CONSTRAINT ' || quote_ident(c.conname),
		       'ALTER TABLE ' || c.conrelid::regclass || ' ADD CONSTRAINT ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid)
		FROM pg_constraint c WHERE c.conrelid = $1::regclass AND c.contype IN ('p', 'u')
		UNION ALL
		SELECT 'DROP INDEX ' || i.indexrelid::regclass, pg_get_indexdef(i.indexrelid)
		FROM pg_index i WHERE i.indrelid = $1::regclass
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`, table)
	if err != nil {
		return nil, fmt.Errorf("history: the indexes of %s: %w", table, err)
	}
	type pair struct{ Drop, Build string }
	pairs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pair])
	if err != nil {
		return nil, fmt.Errorf("history: the indexes of %s: %w", table, err)
	}
	var build []string
	for _, p := range pairs {
		if _, err := conn.Exec(ctx, p.Drop); err != nil {
			return build, fmt.Errorf("history: %q: %w", p.Drop, err)
		}
		build = append(build, p.Build)
	}
	return build, nil
}

// ledger is one account's debits in the history.
type ledger struct {
	count int64
	total int64 // cents
	// opening is the account's opening balance in cents after the load.
	opening *big.Int
}

// openAccounts creates the debtor accounts that are missing, checks none
// has a transaction, and sums each one's debits.
func (p *plan) openAccounts(ctx context.Context, pool *pgxpool.Pool) ([]ledger, error) {
	debits := make([]ledger, p.o.Tenants)
	for i := range p.o.Payments {
		if kindOf(i) == kindDelivered {
			d := &debits[p.tenant(i)]
			d.count++
			d.total += amount(i)
		}
	}
	for t, acct := range p.accounts {
		if _, err := pool.Exec(ctx, `INSERT INTO account (account_id, external_id, tenant_id, currency, opening_balance, balance, limit_based)
			VALUES ($1, $1, $2, 'EUR', 1000000000, 1000000000, false) ON CONFLICT DO NOTHING`, acct, Tenant(t)); err != nil {
			return nil, fmt.Errorf("history: open %s: %w", acct, err)
		}
		var seq int64
		var opening pgtype.Numeric
		if err := pool.QueryRow(ctx, `SELECT txn_seq, opening_balance FROM account WHERE account_id = $1`, acct).Scan(&seq, &opening); err != nil {
			return nil, fmt.Errorf("history: read %s: %w", acct, err)
		}
		if seq != 0 {
			return nil, fmt.Errorf("history: account %s has %d transactions already: history goes first", acct, seq)
		}
		// In cents: numeric(24,4) has 4 decimals.
		cents := new(big.Int).Set(opening.Int)
		for e := opening.Exp; e < -2; e++ {
			cents.Quo(cents, big.NewInt(10))
		}
		for e := opening.Exp; e > -2; e-- {
			cents.Mul(cents, big.NewInt(10))
		}
		debits[t].opening = cents.Add(cents, big.NewInt(debits[t].total))
	}
	return debits, nil
}

// finish raises each account's opening balance by its history's debits
// (its balance stays), counts its transactions, moves each tenant's rail
// sequence past the history's and the identities' sequences past what
// the COPY gave out.
func (p *plan) finish(ctx context.Context, pool *pgxpool.Pool, debits []ledger) error {
	for t, acct := range p.accounts {
		d := debits[t]
		if _, err := pool.Exec(ctx, `UPDATE account SET opening_balance = opening_balance + $2, txn_seq = $3 WHERE account_id = $1`,
			acct, numeric(d.total), d.count); err != nil {
			return fmt.Errorf("history: account %s: %w", acct, err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO participant_outbox_sequences (participant_id, next_sequence_id) VALUES ($1, $2)
			ON CONFLICT (participant_id) DO UPDATE SET next_sequence_id = greatest(participant_outbox_sequences.next_sequence_id, excluded.next_sequence_id)`,
			Tenant(t), d.count+1); err != nil {
			return fmt.Errorf("history: rail sequence of %s: %w", Tenant(t), err)
		}
	}
	return nil
}

// table is one COPY: its columns, a source of its rows, and how the
// retention cleaner judges them.
type table struct {
	name    string
	columns []string
	rows    *source
	cleaned cleanedBy
}

// cleanedBy is how the retention cleaner picks a table's rows: by a
// row's own time (column col), or by payment i's (at: a process by its
// end, an instruction by its enqueue); never those kept says it keeps.
// A table whose cleanedBy is not on is never cleaned.
type cleanedBy struct {
	on   bool
	col  int
	at   func(i int) time.Time
	kept func(i int) bool
}

func byColumn(col int) cleanedBy { return cleanedBy{on: true, col: col} }

// byProcess is a process table's: a process goes with its end (its final
// log entry) unless it failed, which an operator may still retry.
func (p *plan) byProcess() cleanedBy {
	return cleanedBy{on: true, at: func(i int) time.Time { return p.slot(i).Add(220 * time.Millisecond) },
		kept: func(i int) bool { return kindOf(i) == kindFailed }}
}

// byInstruction is the outbox's: a done instruction goes with its
// enqueue, its key's created_at.
func (p *plan) byInstruction() cleanedBy {
	return cleanedBy{on: true, at: func(i int) time.Time { return p.slot(i).Add(150 * time.Millisecond) }}
}

// latest is the latest time any row of payment i carries: its rows are
// all older than a cutoff after it.
func (p *plan) latest(i int) time.Time { return p.slot(i).Add(time.Second) }

// retain sets each table's source to leave out what Options.Retention's
// cleaner would have deleted by Now.
func (p *plan) retain(tables []table) error {
	names := map[string]bool{}
	for _, t := range tables {
		names[t.name] = true
		d := p.o.Retention[t.name]
		if d <= 0 {
			continue
		}
		c := t.cleaned
		if !c.on {
			return fmt.Errorf("history: %s has no retention: the cleaner never deletes its rows", t.name)
		}
		cutoff := p.o.Now.Add(-d)
		kept := func(i int) bool { return c.kept != nil && c.kept(i) }
		// A payment whose every row is older than the cutoff is skipped
		// without making its rows; the others are judged row by row.
		t.rows.skip = func(i int) bool { return p.latest(i).Before(cutoff) && !kept(i) }
		if c.at != nil {
			t.rows.keep = func(i int, _ []any) bool { return kept(i) || !c.at(i).Before(cutoff) }
		} else {
			t.rows.keep = func(i int, row []any) bool { return kept(i) || !row[c.col].(time.Time).Before(cutoff) }
		}
	}
	for name := range p.o.Retention {
		if !names[name] {
			return fmt.Errorf("history: no table %s", name)
		}
	}
	return nil
}

// source makes the rows of each payment i with f, which appends them.
// skip, when set, leaves a payment out whole without calling f (skipped
// is told of it: the outbox still counts its sequence number); keep,
// when set, leaves out each row it refuses.
type source struct {
	n    int
	i    int
	f    func(i int, rows [][]any) [][]any
	skip func(i int) bool
	keep func(i int, row []any) bool
	// skipped, when set, is told of a payment skip left out.
	skipped func(i int)
	buf     [][]any
	at      int
}

func (s *source) Next() bool {
	for s.at+1 >= len(s.buf) {
		if s.i >= s.n {
			return false
		}
		i := s.i
		s.i++
		if s.skip != nil && s.skip(i) {
			if s.skipped != nil {
				s.skipped(i)
			}
			s.buf, s.at = s.buf[:0], -1
			continue
		}
		s.buf, s.at = s.f(i, s.buf[:0]), -1
		if s.keep != nil {
			s.buf = slices.DeleteFunc(s.buf, func(row []any) bool { return !s.keep(i, row) })
		}
		if len(s.buf) > 0 {
			break
		}
	}
	s.at++
	return true
}

func (s *source) Values() ([]any, error) { return s.buf[s.at], nil }
func (s *source) Err() error             { return nil }

func (p *plan) each(f func(i int, rows [][]any) [][]any) *source {
	return &source{n: p.o.Payments, f: f, at: -1}
}

// names are the strings a payment's rows share.
type names struct {
	tenant, account, external, paymentID, initWF, batch, execWF string
}

func (p *plan) names(i int) names {
	t := p.tenant(i)
	day, k := i/p.perDay, i%p.perDay
	n := names{tenant: Tenant(t), account: p.accounts[t], external: externalID(i)}
	n.paymentID = payment.Key(n.tenant, n.external)
	n.initWF = fmt.Sprintf("init-hist-%d-%d", day, k/1000)
	n.batch = fmt.Sprintf("BATCH-hist-%d-%d", day, k/100)
	n.execWF = "exec-batch-payment-" + n.batch
	return n
}

func (p *plan) tables(debits []ledger) []table {
	ms := time.Millisecond
	return []table{
		{"payments", []string{"payment_id", "tenant_id", "debtor_account", "amount", "currency", "creditor_name", "creditor_iban",
			"remittance_info", "requested_execution_time", "scheduled_execution_time", "status", "status_reason", "execution_ref",
			"created_at", "updated_at", "accepted_at", "external_id", "context", "rail", "execution_date", "priority"},
			p.each(func(i int, rows [][]any) [][]any {
				n, kind := p.names(i), kindOf(i)
				instant, slot := p.instant(i), p.slot(i)
				created := instant.Add(-time.Hour)
				var scheduled, accepted, execRef, reason, ctxJSON any
				status, updated := "DELIVERED", slot.Add(400*ms)
				switch kind {
				case kindDelivered, kindFailed:
					scheduled, accepted = slot, slot.Add(5*ms)
					execRef = n.execWF + "/" + uuidString(id('r', i))
					ctxJSON = `{"amount": "` + decimal(amount(i)) + `", "enrichment": {"AccountKey": "` + n.account +
						`", "CreditorIBAN": "DE89370400440532013000", "AccountCurrency": "EUR", "CreditorCountry": "DE"}, "rulesPassed": ["MAX_AMOUNT", "BLOCKED_COUNTRY"], "pacingConfig": "` +
						configName + `", "executionDate": "` + slot.Format(time.DateOnly) + `"}`
					if kind == kindFailed {
						status, reason, updated = "FAILED", "INSUFFICIENT_FUNDS: the account cannot cover the payment", slot.Add(50*ms)
					}
				case kindCancelled:
					status, reason, updated = "CANCELLED", "cancelled by the tenant", instant.Add(-30*time.Minute)
				case kindRejected:
					status, reason, updated = "REJECTED", "MAX_AMOUNT: amount above the tenant's maximum", created
				}
				return append(rows, []any{n.paymentID, n.tenant, n.account, numeric(amount(i)), "EUR", "Jane Doe", "DE89370400440532013000",
					"invoice " + n.external, instant, scheduled, status, reason, execRef, created, updated, accepted, n.external, ctxJSON,
					"DEFAULT", slot, "NORMAL"})
			}), cleanedBy{}},
		{"payment_keys", []string{"external_id", "tenant_id", "payment_id", "init_workflow_id"},
			p.each(func(i int, rows [][]any) [][]any {
				n := p.names(i)
				return append(rows, []any{n.external, n.tenant, n.paymentID, n.initWF})
			}), cleanedBy{}},
		{"exec_queue", []string{"item_type", "item_id", "tenant_id", "queue_status", "scheduled_exec_time", "init_workflow_id",
			"dispatch_batch_id", "exec_workflow_id", "claimed_at", "dispatched_at", "completed_at", "created_at", "updated_at", "paced"},
			p.each(func(i int, rows [][]any) [][]any {
				kind := kindOf(i)
				if kind == kindRejected {
					return rows
				}
				n, slot, instant := p.names(i), p.slot(i), p.instant(i)
				if kind == kindCancelled {
					// Taken off the queue by the cancel (CompleteParked).
					at := instant.Add(-30 * time.Minute)
					return append(rows, []any{itemType, n.paymentID, n.tenant, "COMPLETED", slot, n.initWF, nil, nil, nil, nil, at,
						instant.Add(-time.Hour), at, true})
				}
				return append(rows, []any{itemType, n.paymentID, n.tenant, "COMPLETED", slot, n.initWF, n.batch, n.execWF,
					slot.Add(-7 * time.Second), slot.Add(-7*time.Second + 20*ms), slot.Add(500 * ms), instant.Add(-time.Hour), slot.Add(500 * ms), true})
			}), byColumn(10)},
		{"dispatch_audit_log", []string{"batch_id", "item_type", "item_id", "action", "status_before", "status_after", "detail", "created_at"},
			p.each(func(i int, rows [][]any) [][]any {
				kind, k := kindOf(i), i%p.perDay
				n, slot, instant := p.names(i), p.slot(i), p.instant(i)
				if k%1000 == 0 {
					rows = append(rows, []any{n.initWF, itemType, nil, "ENQUEUED", nil, "READY", "items=1000", instant.Add(-time.Hour)})
				}
				if k%100 == 0 {
					rows = append(rows, []any{n.batch, itemType, nil, "CLAIMED", "READY", "CLAIMED", "items=100", slot.Add(-7 * time.Second)},
						[]any{n.batch, itemType, nil, "BATCH_COMPLETE", nil, nil,
							"claimed=100 started=1 already_started=0 start_failed=0 dead_lettered=0 stale_released=0 stale_dispatched=0 completed=0 exec_failed=0",
							slot.Add(-7*time.Second + 40*ms)})
				}
				switch kind {
				case kindRejected:
					return rows
				case kindCancelled:
					return append(rows, []any{nil, itemType, n.paymentID, "COMPLETED", "PARKED", "COMPLETED", nil, instant.Add(-30 * time.Minute)})
				}
				return append(rows, []any{n.batch, itemType, n.paymentID, "DISPATCHED", "CLAIMED", "DISPATCHED", n.execWF, slot.Add(-7*time.Second + 20*ms)},
					[]any{n.batch, itemType, n.paymentID, "COMPLETED", "DISPATCHED", "COMPLETED", nil, slot.Add(500 * ms)})
			}), byColumn(7)},
		{"pacing_slot", []string{"event_id", "config_name", "window_start", "slot_index", "scheduled_time", "requested_time", "created_at"},
			p.each(func(i int, rows [][]any) [][]any {
				if k := kindOf(i); k == kindRejected || k == kindCancelled { // a cancel gives its slot back
					return rows
				}
				slot, instant := p.slot(i), p.instant(i)
				ws := slot.Truncate(window)
				return append(rows, []any{p.names(i).paymentID, configName, ws, int32(slot.Sub(ws) * perSecond / time.Second), slot, instant, instant.Add(-time.Hour)})
			}), byColumn(2)},
		{"pacing_window", []string{"config_name", "window_start", "slot_count", "status", "updated_at"},
			p.each(func(i int, rows [][]any) [][]any { return p.windowRow(i, rows, false) }), byColumn(1)},
		{"pacing_execution", []string{"config_name", "window_start", "executed"},
			p.each(func(i int, rows [][]any) [][]any { return p.windowRow(i, rows, true) }), byColumn(1)},
		{"process_instance", []string{"process_id", "process_type", "business_key", "status", "current_step", "data", "version",
			"failed_step", "error_code", "error_message", "workflow_id", "created_at", "updated_at"},
			p.each(func(i int, rows [][]any) [][]any {
				kind := kindOf(i)
				if kind != kindDelivered && kind != kindFailed {
					return rows
				}
				n, slot := p.names(i), p.slot(i)
				if kind == kindFailed {
					return append(rows, []any{id('p', i), "SubmitPayment", n.paymentID, "FAILED", "CreateTransaction", p.startData(i, n),
						int64(2), "CreateTransaction", "INSUFFICIENT_FUNDS", "the account cannot cover the payment", n.execWF, slot, slot.Add(50 * ms)})
				}
				return append(rows, []any{id('p', i), "SubmitPayment", n.paymentID, "SUCCEEDED", "CreatePayment", p.doneData(i, n),
					int64(3), "", "", "", n.execWF, slot, slot.Add(150 * ms)})
			}), p.byProcess()},
		{"process_attention", []string{"process_id", "status", "updated_at"},
			p.each(func(i int, rows [][]any) [][]any {
				if kindOf(i) != kindFailed {
					return rows
				}
				return append(rows, []any{id('p', i), "FAILED", p.slot(i).Add(50 * ms)})
			}), p.byProcess()},
		{"process_log", []string{"process_id", "at", "event", "step", "attempt", "error_code", "detail"},
			p.each(func(i int, rows [][]any) [][]any {
				kind := kindOf(i)
				if kind != kindDelivered && kind != kindFailed {
					return rows
				}
				n, slot, pid := p.names(i), p.slot(i), id('p', i)
				rows = append(rows, []any{pid, slot, "ProcessStarted", "CreateTransaction", int32(0), "",
					`{"data": ` + p.requestData(i, n) + `, "workflowId": "` + n.execWF + `"}`},
					[]any{pid, slot.Add(7 * ms), "StepStarted", "CreateTransaction", int32(1), "", "{}"})
				if kind == kindFailed {
					return append(rows, []any{pid, slot.Add(50 * ms), "StepFailed", "CreateTransaction", int32(1), "INSUFFICIENT_FUNDS",
						`{"error": "the account cannot cover the payment"}`},
						[]any{pid, slot.Add(50 * ms), "ProcessFailed", "CreateTransaction", int32(0), "INSUFFICIENT_FUNDS", "{}"})
				}
				return append(rows,
					[]any{pid, slot.Add(50 * ms), "StepCompleted", "CreateTransaction", int32(1), "", `{"next": "CreatePayment", "result": ` + p.debitResult(i) + `}`},
					[]any{pid, slot.Add(170 * ms), "StepStarted", "CreatePayment", int32(1), "", "{}"},
					[]any{pid, slot.Add(220 * ms), "StepCompleted", "CreatePayment", int32(1), "", `{"next": "", "result": ` + p.bookResult(i) + `}`},
					[]any{pid, slot.Add(220 * ms), "ProcessCompleted", "CreatePayment", int32(0), "", "{}"})
			}), p.byProcess()},
		{"process_inbox", []string{"key", "process_id", "step", "result", "applied_at"},
			p.each(func(i int, rows [][]any) [][]any {
				if kindOf(i) != kindDelivered {
					return rows
				}
				pid, slot := id('p', i), p.slot(i)
				s := uuidString(pid)
				return append(rows, []any{s + ":CreateTransaction", pid, "CreateTransaction", p.debitResult(i), slot.Add(5 * ms)},
					[]any{s + ":CreatePayment", pid, "CreatePayment", p.bookResult(i), slot.Add(150 * ms)})
			}), p.byProcess()},
		{"account_transaction", []string{"transaction_id", "account_id", "seq", "type", "amount", "fee", "balance_after", "reference",
			"description", "value_date", "created_at"},
			p.ledger(debits), cleanedBy{}},
		{"payment_booking", []string{"payment_id", "process_id", "debit_account_id", "debit_transaction_id", "debit_currency", "debit_amount",
			"credit_currency", "credit_amount", "fee_currency", "fee_amount", "value_date", "beneficiary_name", "beneficiary_iban", "outbox_id", "created_at"},
			p.each(func(i int, rows [][]any) [][]any {
				if kindOf(i) != kindDelivered {
					return rows
				}
				n, slot := p.names(i), p.slot(i)
				a := numeric(amount(i))
				return append(rows, []any{n.paymentID, id('p', i), n.account, id('d', i), "EUR", a, "EUR", a, "EUR", numeric(0), slot,
					"Jane Doe", "DE89370400440532013000", id('o', i), slot.Add(150 * ms)})
			}), cleanedBy{}},
		{"payment_outbox_keys", []string{"instruction_id", "idempotency_key", "outbox_id", "participant_id", "sequence_id", "rail_type", "created_at"},
			p.outbox(func(i int, n names, seq int64, rows [][]any) [][]any {
				return append(rows, []any{n.paymentID, n.paymentID, id('o', i), n.tenant, seq, "DEFAULT", p.slot(i).Add(150 * ms)})
			}), p.byInstruction()},
		{"payment_outbox_attempts", []string{"attempt_id", "outbox_id", "instruction_id", "participant_id", "sequence_id", "idempotency_key",
			"rail_type", "payload", "attempt_no", "state", "claimed_at", "completed_at", "rail_reference", "latency_ms", "relayer_id", "created_at"},
			p.outbox(func(i int, n names, seq int64, rows [][]any) [][]any {
				slot := p.slot(i)
				payload := `{"amount": "` + decimal(amount(i)) + `", "debtor": {"name": "` + n.tenant + `", "account": "` + n.account +
					`"}, "creditor": {"iban": "DE89370400440532013000", "name": "Jane Doe"}, "currency": "EUR", "tenantId": "` + n.tenant +
					`", "paymentId": "` + n.paymentID + `", "valueDate": "` + slot.Format(time.DateOnly) + `", "endToEndId": "` + n.external + `"}`
				claimed := slot.Add(210 * ms)
				return append(rows,
					[]any{id('a', i), id('o', i), n.paymentID, n.tenant, seq, n.paymentID, "DEFAULT", payload, int32(1), "DISPATCHING",
						claimed, nil, nil, nil, "history", claimed},
					[]any{id('b', i), id('o', i), n.paymentID, n.tenant, seq, n.paymentID, "DEFAULT", payload, int32(1), "DISPATCHED",
						claimed, claimed.Add(40 * ms), fmt.Sprintf("SIM%012d", i), int32(40), "history", claimed.Add(40 * ms)})
			}), p.byInstruction()},
		{"payment_notifications", []string{"payment_id", "party", "status", "created_at"},
			p.each(func(i int, rows [][]any) [][]any {
				if kindOf(i) != kindDelivered {
					return rows
				}
				n, at := p.names(i), p.slot(i).Add(260*ms)
				return append(rows, []any{n.paymentID, "DEBTOR", "PROCESSING", at}, []any{n.paymentID, "CREDITOR", "PROCESSING", at})
			}), byColumn(3)},
	}
}

// windowRow is, at the first payment of each pacing window, the
// window's count of slots (or, executed, of executions).
func (p *plan) windowRow(i int, rows [][]any, executed bool) [][]any {
	slot := p.slot(i)
	ws := slot.Truncate(window)
	if i%p.perDay != 0 && p.slot(i-1).Truncate(window).Equal(ws) {
		return rows
	}
	var count int32
	for j := i; j < p.o.Payments && j/p.perDay == i/p.perDay && p.slot(j).Truncate(window).Equal(ws); j++ {
		switch kindOf(j) {
		case kindDelivered, kindFailed:
			count++
		}
	}
	if count == 0 {
		return rows
	}
	if executed {
		return append(rows, []any{configName, ws, count})
	}
	return append(rows, []any{configName, ws, count, "CLOSED", p.instant(i).Add(-time.Hour)})
}

// ledger is the debits, each account's chained from its opening balance.
func (p *plan) ledger(debits []ledger) *source {
	seq := make([]int64, len(debits))
	balance := make([]*big.Int, len(debits))
	for t, d := range debits {
		balance[t] = new(big.Int).Set(d.opening)
	}
	return p.each(func(i int, rows [][]any) [][]any {
		if kindOf(i) != kindDelivered {
			return rows
		}
		t, slot := p.tenant(i), p.slot(i)
		seq[t]++
		balance[t].Sub(balance[t], big.NewInt(amount(i)))
		n := p.names(i)
		return append(rows, []any{id('d', i), n.account, seq[t], "DEBIT", numeric(amount(i)), numeric(0),
			pgtype.Numeric{Int: new(big.Int).Mul(balance[t], big.NewInt(100)), Exp: -4, Valid: true},
			uuidString(id('p', i)) + ":CreateTransaction", "payment " + n.paymentID, slot, slot.Add(5 * time.Millisecond)})
	})
}

// outbox is the rows of each delivered payment's rail instruction, with
// its tenant's rail sequence.
func (p *plan) outbox(f func(i int, n names, seq int64, rows [][]any) [][]any) *source {
	seq := make([]int64, p.o.Tenants)
	s := p.each(func(i int, rows [][]any) [][]any {
		if kindOf(i) != kindDelivered {
			return rows
		}
		seq[p.tenant(i)]++
		return f(i, p.names(i), seq[p.tenant(i)], rows)
	})
	// An instruction the retention left out still took its number.
	s.skipped = func(i int) {
		if kindOf(i) == kindDelivered {
			seq[p.tenant(i)]++
		}
	}
	return s
}

func (p *plan) requestData(i int, n names) string {
	slot := p.slot(i)
	return `{"rail": "DEFAULT", "amount": "` + decimal(amount(i)) + `", "currency": "EUR", "tenantId": "` + n.tenant +
		`", "accountId": "` + n.account + `", "paymentId": "` + n.paymentID + `", "externalId": "` + n.external +
		`", "creditorBic": "", "creditorIban": "DE89370400440532013000", "creditorName": "Jane Doe", "debtorAccount": "` + n.account +
		`", "executionDate": "` + slot.Format(time.DateOnly) + `", "executionTime": "` + slot.Format(time.RFC3339Nano) + `", "remittanceInfo": ""}`
}

func (p *plan) startData(i int, n names) string {
	d := p.requestData(i, n)
	return d[:len(d)-1] + `, "executionBegun": true}`
}

func (p *plan) doneData(i int, n names) string {
	d := p.requestData(i, n)
	return d[:len(d)-1] + `, "outboxId": "` + uuidString(id('o', i)) + `", "valueDate": "` + p.slot(i).Format(time.DateOnly) +
		`", "debitAmount": "` + decimal(amount(i)) + `", "railSequence": 0, "executionBegun": true, "accountCurrency": "EUR", "debitTransactionId": "` +
		uuidString(id('d', i)) + `"}`
}

func (p *plan) debitResult(i int) string {
	return `{"debitAmount": "` + decimal(amount(i)) + `", "executionBegun": true, "accountCurrency": "EUR", "debitTransactionId": "` +
		uuidString(id('d', i)) + `"}`
}

func (p *plan) bookResult(i int) string {
	return `{"outboxId": "` + uuidString(id('o', i)) + `", "valueDate": "` + p.slot(i).Format(time.DateOnly) + `", "railSequence": 0}`
}

// decimal writes cents as a decimal amount.
func decimal(cents int64) string {
	return strconv.FormatInt(cents/100, 10) + "." + fmt.Sprintf("%02d", cents%100)
}
