package outboxtest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/outbox"
)

// The scenario's shape: 6 × 800 + 4 × 1,300 = 10,000 instructions.
var (
	strict     = []string{"s1", "s2", "s3", "s4", "s5", "s6"}
	throughput = []string{"t1", "t2", "t3", "t4"}
)

const (
	relayers    = 3
	perStrict   = 800
	perThrough  = 1300
	total       = 6*perStrict + 4*perThrough
	thirdWithin = 60 * time.Second
)

// KillScenario kills one of several relayer processes while it holds
// claims, and checks that nothing was lost or sent twice (see the package
// doc). Every field but DrainTimeout is required.
type KillScenario struct {
	// Pool is the migrated database the relayers share.
	Pool *pgxpool.Pool
	// StartRelayer starts relayer i (0, 1, 2) on Pool's database and the
	// test's rail; the process must be stopped when the test ends.
	StartRelayer func(t *testing.T, i int) Relayer
	// Instruction is a participant's n-th instruction (n from 1) as the
	// test's rail takes it: payload and rail type. Its idempotency key
	// must be unique.
	Instruction func(participant string, n int) outbox.Instruction
	// Ledger reads the rail's record of what it accepted.
	Ledger func(t *testing.T) Ledger
	// DrainTimeout bounds the wait, once the relayer is killed, for every
	// instruction to be delivered (default 3 minutes).
	DrainTimeout time.Duration
}

// Relayer is one relayer process of the scenario.
type Relayer interface {
	// Name names it in the test's log.
	Name() string
	// ClaimedBy is a LIKE pattern matching the relayer_id of its claims
	// (payment_outbox_inflight), and no other relayer's.
	ClaimedBy() string
	// Kill sends SIGKILL and returns once the process is gone.
	Kill()
	// Log is what the process wrote, shown when the test fails.
	Log() string
}

// Ledger is the rail's record of what it accepted, in the terms of
// railsim.LedgerView, which a test of the simulator converts field by
// field. A send the rail answered retryable is not in it.
type Ledger struct {
	// Received counts accepted sends, resends of an accepted key included.
	Received int64
	// Unique counts the distinct idempotency keys accepted.
	Unique int64
	// Duplicates counts the acceptances of a key already accepted.
	Duplicates   int64
	Participants map[string]LedgerParticipant
}

// LedgerParticipant is one participant's part of a Ledger.
type LedgerParticipant struct {
	Unique, Duplicates int64
	// Highest is the highest sequence accepted.
	Highest int64
	// Gaps counts the sequences from 1 to Highest never accepted.
	Gaps int64
	// Reordered counts the first arrivals of a key whose sequence is lower
	// than one already accepted.
	Reordered int64
	// SequenceReused counts the new keys that came with a sequence an
	// earlier key had taken.
	SequenceReused int64
}

// Run runs the scenario and returns the index of the relayer it killed;
// the others still run.
func (s KillScenario) Run(t *testing.T) (victim int) {
	t.Helper()
	ctx := context.Background()
	for _, p := range strict {
		if err := outbox.SetOrdering(ctx, s.Pool, p, outbox.Strict); err != nil {
			t.Fatal(err)
		}
	}
	rs := make([]Relayer, relayers)
	// Registered before the relayers start, so it runs after they stop and
	// shows their last words.
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range rs {
				if r != nil {
					t.Logf("%s log:\n%s", r.Name(), r.Log())
				}
			}
		}
	})
	for i := range rs {
		rs[i] = s.StartRelayer(t, i)
	}

	// Enqueued while the relayers run, participants interleaved.
	var ins []outbox.Instruction
	for n := 1; n <= perThrough; n++ {
		for _, p := range throughput {
			ins = append(ins, s.Instruction(p, n))
		}
		if n <= perStrict {
			for _, p := range strict {
				ins = append(ins, s.Instruction(p, n))
			}
		}
	}
	if len(ins) != total {
		t.Fatalf("%d instructions, want %d", len(ins), total)
	}
	start := time.Now()
	Enqueue(t, s.Pool, ins)

	var l Ledger
	eventually(t, thirdWithin, "a third delivered", func() bool { l = s.Ledger(t); return l.Unique >= total/3 })
	victim, chosenWith := s.busiest(t, rs)
	rs[victim].Kill()
	killed := time.Now()
	// What it died holding, counted once it is dead: a claim it settled
	// between the choice and the signal is not the reaper's to take back.
	held := s.claims(t, rs[victim])
	t.Logf("killed %s after %v holding %d claims (%d when chosen; %d delivered)",
		rs[victim].Name(), killed.Sub(start).Round(time.Millisecond), len(held), chosenWith, l.Unique)
	if len(held) == 0 {
		t.Fatalf("%s settled its %d claims before SIGKILL landed: nothing for the reaper", rs[victim].Name(), chosenWith)
	}

	eventually(t, cmp.Or(s.DrainTimeout, 3*time.Minute), "every instruction delivered", func() bool {
		if l = s.Ledger(t); l.Unique < total {
			return false
		}
		d := depth(t, s.Pool)
		return d.Pending == 0 && d.InFlight == 0
	})
	t.Logf("all %d delivered %v after the start, %v after the kill",
		total, time.Since(start).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	for _, p := range ledgerProblems(l) {
		t.Error(p)
	}
	s.checkArchive(t, rs[victim], held)
	return victim
}

// busiest waits until a relayer holds claims and returns the one holding
// the most, and how many.
func (s KillScenario) busiest(t *testing.T, rs []Relayer) (int, int) {
	t.Helper()
	best, most := 0, 0
	eventually(t, 30*time.Second, "a relayer holding claims", func() bool {
		for i, r := range rs {
			if n := count(t, s.Pool, `SELECT count(*) FROM payment_outbox_inflight WHERE relayer_id LIKE $1`, r.ClaimedBy()); n > most {
				best, most = i, n
			}
		}
		return most > 0
	})
	return best, most
}

// claims are the outbox ids r holds in flight.
func (s KillScenario) claims(t *testing.T, r Relayer) []string {
	t.Helper()
	rows, err := s.Pool.Query(context.Background(),
		`SELECT outbox_id::text FROM payment_outbox_inflight WHERE relayer_id LIKE $1`, r.ClaimedBy())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// ledgerProblems: every instruction reached the rail exactly once, each
// strict participant's in sequence; what else it finds is a problem.
func ledgerProblems(l Ledger) []string {
	var out []string
	if l.Unique != total || l.Received != total || l.Duplicates != 0 {
		out = append(out, fmt.Sprintf("rail: %d keys accepted, %d sends accepted, %d duplicates; want %d, %d, 0",
			l.Unique, l.Received, l.Duplicates, total, total))
	}
	for _, p := range slices.Sorted(maps.Keys(l.Participants)) {
		if v := l.Participants[p]; v.Duplicates != 0 || v.Gaps != 0 || v.SequenceReused != 0 {
			out = append(out, fmt.Sprintf("%s: %+v, want no duplicate, gap or reused sequence", p, v))
		}
	}
	for _, p := range strict {
		if v := l.Participants[p]; v.Unique != perStrict || v.Highest != perStrict || v.Reordered != 0 {
			out = append(out, fmt.Sprintf("strict %s: %+v, want 1..%d once each, in sequence", p, v, perStrict))
		}
	}
	for _, p := range throughput {
		if v := l.Participants[p]; v.Unique != perThrough {
			out = append(out, fmt.Sprintf("throughput %s: %+v, want %d once each", p, v, perThrough))
		}
	}
	return out
}

// checkArchive: one DISPATCHED attempt per instruction, no dead letter,
// and every claim the victim died holding taken back by the reaper.
func (s KillScenario) checkArchive(t *testing.T, victim Relayer, held []string) {
	t.Helper()
	c := func(sql string, args ...any) int { return count(t, s.Pool, sql, args...) }
	if n := c(`SELECT count(*) FROM payment_outbox_attempts WHERE state = 'DISPATCHED'`); n != total {
		t.Fatalf("%d DISPATCHED attempts, want %d", n, total)
	}
	if n := c(`SELECT count(DISTINCT outbox_id) FROM payment_outbox_attempts WHERE state = 'DISPATCHED'`); n != total {
		t.Fatalf("%d outbox ids DISPATCHED, want %d", n, total)
	}
	if n := c(`SELECT count(*) FROM payment_outbox_dead_letters`); n != 0 {
		t.Fatalf("%d dead letters", n)
	}
	if d := depth(t, s.Pool); d.DeadLetters != 0 {
		t.Fatalf("dead letters: %+v", d)
	}
	// A claim it died holding is the reaper's, unless the victim's last
	// transaction, already sent when SIGKILL landed, settled it: the
	// server finishes a COMMIT it has received after its client is gone,
	// so what the test read as held right after the death may still be
	// settled by its owner.
	reaped := c(`SELECT count(DISTINCT outbox_id) FROM payment_outbox_attempts
		WHERE state = 'ZOMBIE_REQUEUE' AND outbox_id::text = ANY($1)`, held)
	settled := c(`SELECT count(DISTINCT a.outbox_id) FROM payment_outbox_attempts a
		WHERE a.outbox_id::text = ANY($1) AND a.relayer_id LIKE $2 AND a.state NOT IN ('DISPATCHING', 'ZOMBIE_REQUEUE')
		  AND NOT EXISTS (SELECT 1 FROM payment_outbox_attempts z WHERE z.outbox_id = a.outbox_id AND z.state = 'ZOMBIE_REQUEUE')`,
		held, victim.ClaimedBy())
	if reaped+settled != len(held) || reaped == 0 {
		t.Fatalf("%s died with %d claims: the reaper requeued %d, its own last commit settled %d", victim.Name(), len(held), reaped, settled)
	}
	if settled > 0 {
		t.Logf("%s's last commit, under way at its death, settled %d of the %d claims it held", victim.Name(), settled, len(held))
	}
	t.Logf("zombies requeued %d, found delivered by inquiry %d, unknown outcomes %d",
		c(`SELECT count(*) FROM payment_outbox_attempts WHERE state = 'ZOMBIE_REQUEUE'`),
		c(`SELECT count(*) FROM payment_outbox_attempts WHERE state = 'DISPATCHED' AND inquiry_outcome = 'DELIVERED'`),
		c(`SELECT count(*) FROM payment_outbox_attempts WHERE state = 'UNKNOWN'`))
}

// Enqueue commits instructions in batches of up to 1,000.
func Enqueue(t testing.TB, pool *pgxpool.Pool, ins []outbox.Instruction) {
	t.Helper()
	for len(ins) > 0 {
		n := min(len(ins), 1000)
		err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
			_, err := outbox.EnqueueBatch(context.Background(), tx, ins[:n])
			return err
		})
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		ins = ins[n:]
	}
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func depth(t *testing.T, pool *pgxpool.Pool) outbox.Depth {
	t.Helper()
	d, err := outbox.ReadDepth(context.Background(), pool, time.Minute)
	if err != nil {
		t.Fatalf("outbox depth: %v", err)
	}
	return d
}
