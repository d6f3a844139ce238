package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/outbox"
)

// TestSequenceGapFreeUnderConcurrency: many goroutines enqueue for a few
// participants, a third of their transactions roll back; the committed
// sequences of each participant are exactly 1..n, each goroutine sees its
// own sequences grow, and the allocator's next number is n+1.
func TestSequenceGapFreeUnderConcurrency(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	participants := []string{"bank-a", "bank-b", "bank-c"}
	const workers, perWorker = 12, 40
	var mu sync.Mutex
	committed := map[string][]int64{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			last := map[string]int64{}
			for i := range perWorker {
				p := participants[(w+i)%len(participants)]
				in := instruction(p, w*1000+i)
				rollback := (w*perWorker+i)%4 == 1
				tx, err := pool.Begin(ctx)
				if err != nil {
					errs <- err
					return
				}
				_, seq, created, err := outbox.Enqueue(ctx, tx, in)
				if err != nil || !created {
					_ = tx.Rollback(ctx)
					errs <- fmt.Errorf("enqueue: created %v, %v", created, err)
					return
				}
				if rollback {
					_ = tx.Rollback(ctx)
					continue
				}
				if err := tx.Commit(ctx); err != nil {
					errs <- err
					return
				}
				if seq <= last[p] {
					errs <- fmt.Errorf("worker %d: %s sequence %d after %d", w, p, seq, last[p])
					return
				}
				last[p] = seq
				mu.Lock()
				committed[p] = append(committed[p], seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, p := range participants {
		seqs := committed[p]
		slices.Sort(seqs)
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("%s: committed sequences not 1..%d: position %d holds %d", p, len(seqs), i, s)
			}
		}
		stored := countRows(t, pool, `SELECT count(*) FROM payment_outbox_pending WHERE participant_id = $1`, p)
		next := countRows(t, pool, `SELECT next_sequence_id FROM participant_outbox_sequences WHERE participant_id = $1`, p)
		if stored != len(seqs) || next != len(seqs)+1 {
			t.Fatalf("%s: %d committed, %d pending rows, next sequence %d", p, len(seqs), stored, next)
		}
	}
}

// TestEnqueueIdempotent: the same (instruction, key) again returns the
// first outbox id and sequence and writes nothing, wherever the first one
// is by then; the participant's next instruction gets the next number.
func TestEnqueueIdempotent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		after func(t *testing.T, env *idemEnv) // moves the first instruction on
		want  outbox.State                     // its latest attempt afterwards
	}{
		{name: "still pending"},
		{name: "in flight", after: func(t *testing.T, e *idemEnv) { e.claimOnly(t) }, want: outbox.StateDispatching},
		{name: "delivered", after: func(t *testing.T, e *idemEnv) { e.relay(t, nil) }, want: outbox.StateDispatched},
		{name: "dead", after: func(t *testing.T, e *idemEnv) {
			e.relay(t, func(m outbox.Message, n int) (outbox.Result, bool) {
				return outbox.Result{Outcome: outbox.Terminal, Code: "AC01"}, false
			})
		}, want: outbox.StateFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := &idemEnv{pool: newPool(t), in: instruction("bank-a", 1)}
			id, seq := enqueue(t, e.pool, e.in)
			if tt.after != nil {
				tt.after(t, e)
			}
			if got := lastState(t, e.pool, e.in.InstructionID); got != tt.want {
				t.Fatalf("state %q, want %q", got, tt.want)
			}
			before := depth(t, e.pool)
			var id2 = id
			var seq2 int64
			var created bool
			err := pgx.BeginFunc(context.Background(), e.pool, func(tx pgx.Tx) error {
				var err error
				in := e.in
				in.Payload = []byte(`{"other":"payload"}`) // not compared
				id2, seq2, created, err = outbox.Enqueue(context.Background(), tx, in)
				return err
			})
			if err != nil || created || id2 != id || seq2 != seq {
				t.Fatalf("replay: %v %d created=%v err=%v, want %v %d", id2, seq2, created, err, id, seq)
			}
			if after := depth(t, e.pool); after.Pending != before.Pending || after.InFlight != before.InFlight {
				t.Fatalf("replay wrote: %+v → %+v", before, after)
			}
			if _, next := enqueue(t, e.pool, instruction("bank-a", 2)); next != seq+1 {
				t.Fatalf("next sequence %d, want %d", next, seq+1)
			}
		})
	}
}

type idemEnv struct {
	pool *pgxpool.Pool
	in   outbox.Instruction
}

// claimOnly claims the instruction and never settles it: a relayer that
// died right after its claim.
func (e *idemEnv) claimOnly(t *testing.T) {
	t.Helper()
	if _, err := outbox.ClaimOnly(context.Background(), e.pool, "dead-relayer", 10); err != nil {
		t.Fatal(err)
	}
}

func (e *idemEnv) relay(t *testing.T, send func(outbox.Message, int) (outbox.Result, bool)) {
	t.Helper()
	f := newFakeRail()
	f.send = send
	stop := startRelayer(t, fastConfig(e.pool, f))
	eventually(t, 10*time.Second, "an outcome", func() bool {
		s := lastState(t, e.pool, e.in.InstructionID)
		return s == outbox.StateDispatched || s == outbox.StateFailed
	})
	stop()
}

// TestEnqueueConcurrentDuplicate: two transactions enqueue the same key at
// once. The second waits for the first and then returns its outbox id and
// sequence; when it had taken a number of another participant, it gives
// it back (no gap).
func TestEnqueueConcurrentDuplicate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, secondParticipant string
	}{
		{"same participant", "bank-a"},
		{"another participant", "bank-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := newPool(t)
			ctx := context.Background()
			in := instruction("bank-a", 1)
			tx1, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			id1, seq1, created1, err := outbox.Enqueue(ctx, tx1, in)
			if err != nil || !created1 {
				t.Fatalf("first: %v %v", created1, err)
			}
			type result struct {
				id      string
				seq     int64
				created bool
				err     error
			}
			second := make(chan result, 1)
			go func() {
				dup := in
				dup.ParticipantID = tt.secondParticipant
				var r result
				r.err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					id, seq, created, err := outbox.Enqueue(ctx, tx, dup)
					r.id, r.seq, r.created = id.String(), seq, created
					return err
				})
				second <- r
			}()
			select {
			case r := <-second:
				t.Fatalf("second enqueue did not wait for the first: %+v", r)
			case <-time.After(200 * time.Millisecond):
			}
			if err := tx1.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-second
			if r.err != nil || r.created || r.id != id1.String() || r.seq != seq1 {
				t.Fatalf("second: %+v, want %v %d", r, id1, seq1)
			}
			if _, seq := enqueue(t, pool, instruction(tt.secondParticipant, 2)); tt.secondParticipant == "bank-b" && seq != 1 {
				t.Fatalf("bank-b's first sequence %d, want 1 (the duplicate's number was given back)", seq)
			}
		})
	}
}

func TestEnqueueRolledBackLeavesNothing(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, seq, _, err := outbox.Enqueue(ctx, tx, instruction("bank-a", 1)); err != nil || seq != 1 {
		t.Fatalf("enqueue: %d %v", seq, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := outbox.Lookup(ctx, pool, "bank-a-ins-00001", "key-bank-a-ins-00001"); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("lookup after rollback: %v", err)
	}
	if _, seq := enqueue(t, pool, instruction("bank-a", 1)); seq != 1 {
		t.Fatalf("after a rollback the sequence is %d, want 1", seq)
	}
}

func TestEnqueueRefusesInvalid(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	tests := []struct {
		name   string
		change func(*outbox.Instruction)
	}{
		{"no instruction id", func(in *outbox.Instruction) { in.InstructionID = "" }},
		{"no participant", func(in *outbox.Instruction) { in.ParticipantID = "" }},
		{"default participant", func(in *outbox.Instruction) { in.ParticipantID = outbox.DefaultParticipant }},
		{"no key", func(in *outbox.Instruction) { in.IdempotencyKey = "" }},
		{"no rail", func(in *outbox.Instruction) { in.RailType = "" }},
		{"payload not JSON", func(in *outbox.Instruction) { in.Payload = []byte("{") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := instruction("bank-a", 1)
			tt.change(&in)
			err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
				_, _, _, err := outbox.Enqueue(context.Background(), tx, in)
				return err
			})
			if !errors.Is(err, outbox.ErrInvalidInstruction) {
				t.Fatalf("err %v, want ErrInvalidInstruction", err)
			}
		})
	}
}

// TestOrderingSettings: the default is throughput; a participant's own
// setting wins; the default can be changed; instructions carry the mode
// they were enqueued under.
func TestOrderingSettings(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	mode := func(p string) outbox.Ordering {
		m, err := outbox.OrderingOf(ctx, pool, p)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := mode("bank-a"); m != outbox.Throughput {
		t.Fatalf("default %s", m)
	}
	if err := outbox.SetOrdering(ctx, pool, "bank-a", outbox.Strict); err != nil {
		t.Fatal(err)
	}
	if err := outbox.SetOrdering(ctx, pool, "bank-b", "SIDEWAYS"); err == nil {
		t.Fatal("a bad mode was accepted")
	}
	enqueue(t, pool, instruction("bank-a", 1))
	enqueue(t, pool, instruction("bank-b", 1))
	if err := outbox.SetOrdering(ctx, pool, outbox.DefaultParticipant, outbox.Strict); err != nil {
		t.Fatal(err)
	}
	if m := mode("bank-b"); m != outbox.Strict {
		t.Fatalf("bank-b under a strict default: %s", m)
	}
	if err := outbox.ResetOrdering(ctx, pool, "bank-a"); err != nil {
		t.Fatal(err)
	}
	if err := outbox.ResetOrdering(ctx, pool, "bank-a"); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("second reset: %v", err)
	}
	strict := countRows(t, pool, `SELECT count(*) FROM payment_outbox_pending WHERE strict`)
	if strict != 1 {
		t.Fatalf("%d strict rows, want 1 (bank-a's, enqueued while strict)", strict)
	}
}

// TestEnqueueBatch: a batch numbers its new instructions in order per
// participant, after whatever the participant had; keys already
// registered, or repeated in the batch, come back as they are.
func TestEnqueueBatch(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	enqueue(t, pool, instruction("bank-a", 1)) // bank-a: 1
	enqueue(t, pool, instruction("bank-a", 2)) // bank-a: 2
	batch := []outbox.Instruction{
		instruction("bank-b", 1),
		instruction("bank-a", 2), // registered before
		instruction("bank-a", 3),
		instruction("bank-b", 2),
		instruction("bank-a", 3), // repeated in the batch
		instruction("bank-c", 1),
		instruction("bank-a", 4),
	}
	var got []outbox.Enqueued
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		got, err = outbox.EnqueueBatch(ctx, tx, batch)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		seq     int64
		created bool
	}{{1, true}, {2, false}, {3, true}, {2, true}, {3, false}, {1, true}, {4, true}}
	for i, w := range want {
		if got[i].SequenceID != w.seq || got[i].Created != w.created {
			t.Errorf("instruction %d (%s): sequence %d created %v, want %d %v", i, batch[i].InstructionID, got[i].SequenceID, got[i].Created, w.seq, w.created)
		}
	}
	if got[4].OutboxID != got[2].OutboxID {
		t.Errorf("a key repeated in the batch got another outbox id")
	}
	if _, seq := enqueue(t, pool, instruction("bank-a", 5)); seq != 5 {
		t.Errorf("bank-a's next sequence %d, want 5", seq)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM payment_outbox_pending`); n != 8 {
		t.Errorf("%d pending rows, want 8", n)
	}
	// The same batch again writes nothing.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		again, err := outbox.EnqueueBatch(ctx, tx, batch)
		for i := range again {
			if again[i].Created || again[i].SequenceID != got[i].SequenceID || again[i].OutboxID != got[i].OutboxID {
				t.Errorf("replay %d: %+v, first %+v", i, again[i], got[i])
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEnqueueBatchGapFreeUnderConcurrency: batches and single enqueues
// side by side, some rolled back: each participant's committed sequences
// are 1..n.
func TestEnqueueBatchGapFreeUnderConcurrency(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 15 {
				var ins []outbox.Instruction
				for j := range 1 + (w%2)*20 { // even workers: single, odd: batches of 21
					ins = append(ins, instruction(fmt.Sprintf("bank-%d", (i+j)%3), w*100000+i*100+j))
				}
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ins) == 1 {
					_, _, _, err = outbox.Enqueue(ctx, tx, ins[0])
				} else {
					_, err = outbox.EnqueueBatch(ctx, tx, ins)
				}
				if err != nil {
					_ = tx.Rollback(ctx)
					t.Error(err)
					return
				}
				if (w+i)%4 == 0 {
					err = tx.Rollback(ctx)
				} else {
					err = tx.Commit(ctx)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for p := range 3 {
		pid := fmt.Sprintf("bank-%d", p)
		n := countRows(t, pool, `SELECT count(*) FROM payment_outbox_pending WHERE participant_id = $1`, pid)
		max := countRows(t, pool, `SELECT coalesce(max(sequence_id), 0) FROM payment_outbox_pending WHERE participant_id = $1`, pid)
		next := countRows(t, pool, `SELECT next_sequence_id FROM participant_outbox_sequences WHERE participant_id = $1`, pid)
		if n == 0 || n != max || next != n+1 {
			t.Errorf("%s: %d rows, highest sequence %d, next %d", pid, n, max, next)
		}
	}
}
