package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/process"
	processmig "github.com/paydispatch/paydispatch/process/migrations"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{Migrations: []fs.FS{processmig.FS}})
}

// The test process, "Transfer": Reserve → Debit → Notify. Reserve is
// undone by Release, Debit by Refund; Notify needs no undoing.
const transfer = "Transfer"

var transferOrder = map[string]string{"Reserve": "Debit", "Debit": "Notify", "Notify": ""}

// transferData is a Transfer's data: the amount, and what each step did.
type transferData struct {
	Amount string `json:"amount"`
	// Big and Rate are numbers that must come back exactly.
	Big  json.Number `json:"big,omitempty"`
	Rate json.Number `json:"rate,omitempty"`
	// Each step's idempotency key, and the attempt that completed it.
	Refs     map[string]string `json:"refs,omitempty"`
	Attempts map[string]int    `json:"attempts,omitempty"`
}

// fixture is one test's database, with the Transfer definition whose
// handlers record their effect in the table effect and behave as the
// test scripts them, per business key and step.
type fixture struct {
	pool *pgxpool.Pool
	reg  *process.Registry
	acts *process.Activities

	mu      sync.Mutex
	script  map[string][]error         // key/step → errors of the next calls; nil entries succeed
	delay   map[string][]time.Duration // key/step → how long the next calls take
	gate    map[string]chan struct{}   // key/step → the call waits for it to close
	entered map[string]chan struct{}   // key/step → closed when a call waits at the gate

	// grouped gives Reserve and Debit group handlers (AdvanceGroup);
	// groupCalls counts their calls by step, groupFail scripts a failure
	// of a whole call by step.
	grouped    bool
	groupCalls map[string]int
	groupFail  map[string]error
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOf(t, false)
}

// newGroupFixture is newFixture with group handlers for Reserve and Debit.
func newGroupFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOf(t, true)
}

func newFixtureOf(t *testing.T, grouped bool) *fixture {
	t.Helper()
	f := &fixture{
		pool: pgtest.NewPool(t), script: map[string][]error{}, delay: map[string][]time.Duration{},
		gate: map[string]chan struct{}{}, entered: map[string]chan struct{}{},
		grouped: grouped, groupCalls: map[string]int{}, groupFail: map[string]error{},
	}
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `
		CREATE TABLE effect (business_key text NOT NULL, step text NOT NULL, idempotency_key text NOT NULL, amount numeric NOT NULL);
		CREATE TABLE outcome (business_key text NOT NULL, status text NOT NULL, code text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	reg, err := process.NewRegistry(f.definition())
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	f.acts = process.NewActivities(process.ActivitiesConfig{DB: f.pool, Registry: reg})
	t.Cleanup(func() { checkReplay(t, f.pool) })
	return f
}

func (f *fixture) definition() process.Definition[transferData] {
	busy := []string{"BUSY"}
	var reserveGroup, debitGroup process.GroupHandler[transferData]
	if f.grouped {
		reserveGroup, debitGroup = f.groupHandler("Reserve"), f.groupHandler("Debit")
	}
	return process.Definition[transferData]{
		Type:    transfer,
		Initial: "Reserve",
		Next: func(step string, _ transferData) (string, error) {
			next, ok := transferOrder[step]
			if !ok {
				return "", fmt.Errorf("no step after %q", step)
			}
			return next, nil
		},
		Steps: map[string]process.Step[transferData]{
			"Reserve": {Handler: f.handler("Reserve"), Group: reserveGroup, Compensation: "Release", Retryable: busy, MaxRetries: 3},
			"Debit":   {Handler: f.handler("Debit"), Group: debitGroup, Compensation: "Refund", Retryable: busy, MaxRetries: 3},
			"Notify":  {Handler: f.handler("Notify"), Retryable: busy, MaxRetries: 2, Timeout: 500 * time.Millisecond},
			"Release": {Handler: f.handler("Release"), Retryable: busy, MaxRetries: 2},
			"Refund":  {Handler: f.handler("Refund"), Retryable: busy, MaxRetries: 2},
		},
		OnSucceeded: func(ctx context.Context, tx pgx.Tx, inst process.Instance) error {
			_, err := tx.Exec(ctx, `INSERT INTO outcome VALUES ($1, $2, '')`, inst.BusinessKey, inst.Status)
			return err
		},
		OnFailed: func(ctx context.Context, tx pgx.Tx, inst process.Instance, final process.Status, code string) error {
			_, err := tx.Exec(ctx, `INSERT INTO outcome VALUES ($1, $2, $3)`, inst.BusinessKey, final, code)
			return err
		},
	}
}

// handler does the step's effect first, then what the script says: a
// failure after the effect shows that the effect is rolled back with it.
func (f *fixture) handler(step string) process.Handler[transferData] {
	return func(ctx context.Context, tx pgx.Tx, in process.StepInput, data *transferData) error {
		amount := data.Amount
		if amount == "" {
			amount = "0"
		}
		if _, err := tx.Exec(ctx, `INSERT INTO effect VALUES ($1, $2, $3, $4)`, in.BusinessKey, step, in.IdempotencyKey, amount); err != nil {
			return err
		}
		k := in.BusinessKey + "/" + step
		f.mu.Lock()
		var err error
		if s := f.script[k]; len(s) > 0 {
			err, f.script[k] = s[0], s[1:]
		}
		var d time.Duration
		if s := f.delay[k]; len(s) > 0 {
			d, f.delay[k] = s[0], s[1:]
		}
		gate, entered := f.gate[k], f.entered[k]
		f.mu.Unlock()
		if gate != nil {
			close(entered)
			<-gate
		}
		if d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err != nil {
			return err
		}
		if data.Refs == nil {
			data.Refs, data.Attempts = map[string]string{}, map[string]int{}
		}
		data.Refs[step], data.Attempts[step] = in.IdempotencyKey, in.Attempt
		return nil
	}
}

// groupHandler runs step's handler for each process of the group in the
// group's transaction, and answers the errors as the group's.
func (f *fixture) groupHandler(step string) process.GroupHandler[transferData] {
	h := f.handler(step)
	return func(ctx context.Context, tx pgx.Tx, in []process.StepInput, data []*transferData) ([]error, error) {
		f.mu.Lock()
		f.groupCalls[step]++
		whole := f.groupFail[step]
		delete(f.groupFail, step)
		f.mu.Unlock()
		errs := make([]error, len(in))
		for i := range in {
			errs[i] = h(ctx, tx, in[i], data[i])
		}
		return errs, whole
	}
}

func (f *fixture) calls(step string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.groupCalls[step]
}

// fail scripts the next calls of key's step: each error in turn (nil:
// succeed).
func (f *fixture) fail(key, step string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[key+"/"+step] = append(f.script[key+"/"+step], errs...)
}

func (f *fixture) slow(key, step string, ds ...time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay[key+"/"+step] = append(f.delay[key+"/"+step], ds...)
}

// hold makes key's step wait until release is called; entered is closed
// when a call is waiting.
func (f *fixture) hold(key, step string) (entered <-chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, e := make(chan struct{}), make(chan struct{})
	f.gate[key+"/"+step], f.entered[key+"/"+step] = g, e
	var once sync.Once
	return e, func() { once.Do(func() { close(g) }) }
}

// effects counts the committed effects of key's steps.
func (f *fixture) effects(t *testing.T, key string) map[string]int {
	t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT step, count(*) FROM effect WHERE business_key = $1 GROUP BY step`, key)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// outcomes lists the hook calls for key, "STATUS/code".
func (f *fixture) outcomes(t *testing.T, key string) []string {
	t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT status || '/' || code FROM outcome WHERE business_key = $1`, key)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// events lists a process's log as "Event step" (with ":code" when set).
func (f *fixture) events(t *testing.T, key string) []string {
	t.Helper()
	entries, err := process.Log(context.Background(), f.pool, process.ID(transfer, key))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = string(e.Event) + " " + e.Step
		if e.ErrorCode != "" {
			out[i] += ":" + e.ErrorCode
		}
	}
	return out
}

func (f *fixture) get(t *testing.T, key string) process.Instance {
	t.Helper()
	inst, err := process.Get(context.Background(), f.pool, process.ID(transfer, key))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// dataOf decodes a process's data, or a step's result, as a Transfer's.
func dataOf(t *testing.T, raw json.RawMessage) transferData {
	t.Helper()
	var d transferData
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("data %s: %v", raw, err)
	}
	return d
}

// checkReplay: for every process in the database, its log alone gives the
// status, step and resume status the instance has.
func checkReplay(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	ms, err := process.Verify(context.Background(), pool)
	if err != nil {
		t.Errorf("verify: %v", err)
	}
	for _, m := range ms {
		t.Errorf("%s", m)
	}
}

// waitForLockWaiter returns once a session of the test's database waits
// for a lock: the operator action sent to done is queued behind the step
// in flight. It fails the test if the action finishes first.
func (f *fixture) waitForLockWaiter(t *testing.T, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the action did not wait for the step in flight: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no session waits for the row lock")
		}
	}
}

func busy() error { return process.Failf("BUSY", "the ledger is busy") }

var errConnRefused = errors.New("dial tcp 10.0.0.1:5432: connect: connection refused")

var (
	temporalOnce   sync.Once
	temporalClient client.Client
	temporalErr    error
)

// sharedTemporal is one in-process Temporal server for the package's
// integration tests and example, each on its own task queue. It is never
// stopped: it lives in the test process and ends with it.
func sharedTemporal() (client.Client, error) {
	temporalOnce.Do(func() {
		_, temporalClient, _, temporalErr = temporaltest.Open()
	})
	return temporalClient, temporalErr
}
