package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/outbox/outboxtest"
)

const (
	D  = outbox.StateDispatching
	OK = outbox.StateDispatched
	R  = outbox.StateRetryable
	F  = outbox.StateFailed
	U  = outbox.StateUnknown
	Z  = outbox.StateZombieRequeue
)

func res(o outbox.Outcome, code string) outbox.Result {
	return outbox.Result{Outcome: o, Code: code, Message: "rail says " + string(o)}
}

// TestOutcomes runs one instruction through each outcome the rail can
// give and checks the archive, the rail's view and the hooks.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		send        func(n int) (outbox.Result, bool) // n: the key's nth send
		inquire     func(n int) (outbox.Result, bool) // n: the key's nth inquiry; false: the rail's truth
		invalid     bool
		maxAttempts int
		want        []outbox.State
		wantCode    string // the last attempt's error code
		wantInquiry outbox.Outcome
		sends       int // Send calls
		delivered   int // OnDelivered messages
		dead        int // OnDead messages
	}{
		{name: "delivered", want: []outbox.State{D, OK}, sends: 1, delivered: 1},
		{
			name: "terminal is dead at once", send: func(int) (outbox.Result, bool) { return res(outbox.Terminal, "AC04"), false },
			want: []outbox.State{D, F}, wantCode: outbox.CodeRailTerminal, sends: 1, dead: 1,
		},
		{name: "invalid payload is never sent", invalid: true, want: []outbox.State{D, F}, wantCode: outbox.CodeInvalidPayload, dead: 1},
		{
			name: "retryable, then delivered",
			send: func(n int) (outbox.Result, bool) {
				if n < 3 {
					return res(outbox.Retryable, "503"), false
				}
				return outbox.Result{Outcome: outbox.Delivered, Reference: "R-3"}, true
			},
			want: []outbox.State{D, R, D, R, D, OK}, sends: 3, delivered: 1,
		},
		{
			name: "retryable until max attempts is dead", maxAttempts: 3,
			send: func(int) (outbox.Result, bool) { return res(outbox.Retryable, "UNMAPPED_CODE"), false },
			want: []outbox.State{D, R, D, R, D, F}, wantCode: outbox.CodeMaxAttempts, sends: 3, dead: 1,
		},
		{
			name: "send answering not received is retried",
			send: func(n int) (outbox.Result, bool) {
				if n == 1 {
					return res(outbox.NotReceived, ""), false
				}
				return outbox.Result{Outcome: outbox.Delivered}, true
			},
			want: []outbox.State{D, R, D, OK}, sends: 2, delivered: 1,
		},
		{
			name: "unknown that arrived: the inquiry finds it, never resent",
			send: func(int) (outbox.Result, bool) { return res(outbox.Unknown, "TIMEOUT"), true },
			want: []outbox.State{D, U, D, OK}, wantInquiry: outbox.Delivered, sends: 1, delivered: 1,
		},
		{
			name: "unknown that did not arrive: not received, sent once more",
			send: func(n int) (outbox.Result, bool) {
				if n == 1 {
					return res(outbox.Unknown, "CONN_RESET"), false
				}
				return outbox.Result{Outcome: outbox.Delivered}, true
			},
			want: []outbox.State{D, U, D, OK}, wantInquiry: outbox.NotReceived, sends: 2, delivered: 1,
		},
		{
			name: "inquiry that cannot tell is asked again",
			send: func(int) (outbox.Result, bool) { return res(outbox.Unknown, "TIMEOUT"), true },
			inquire: func(n int) (outbox.Result, bool) {
				if n == 1 {
					return res(outbox.Unknown, "RAIL_DOWN"), true
				}
				return outbox.Result{}, false
			},
			want: []outbox.State{D, U, D, U, D, OK}, wantInquiry: outbox.Delivered, sends: 1, delivered: 1,
		},
		{
			name:    "inquiry finding a refusal is dead",
			send:    func(int) (outbox.Result, bool) { return res(outbox.Unknown, "TIMEOUT"), true },
			inquire: func(int) (outbox.Result, bool) { return res(outbox.Terminal, "AM04"), true },
			want:    []outbox.State{D, U, D, F}, wantCode: outbox.CodeRailTerminal, wantInquiry: outbox.Terminal, sends: 1, dead: 1,
		},
		{
			name: "an outcome outside the contract counts as unknown",
			send: func(n int) (outbox.Result, bool) {
				if n == 1 {
					return outbox.Result{Outcome: "MAYBE"}, false
				}
				return outbox.Result{Outcome: outbox.Delivered}, true
			},
			want: []outbox.State{D, U, D, OK}, wantInquiry: outbox.NotReceived, sends: 2, delivered: 1,
		},
		{
			name: "a sender that ignores its deadline is cut off as unknown",
			send: func(n int) (outbox.Result, bool) {
				if n == 1 {
					time.Sleep(1500 * time.Millisecond) // past RailTimeout (1 s) and its grace
				}
				return outbox.Result{Outcome: outbox.Delivered}, true
			},
			want: []outbox.State{D, U, D, OK}, wantInquiry: outbox.Delivered, sends: 1, delivered: 1,
		},
		{
			name: "a panicking sender is unknown, not a crash",
			send: func(n int) (outbox.Result, bool) {
				if n == 1 {
					panic("sender bug")
				}
				return outbox.Result{Outcome: outbox.Delivered}, true
			},
			want: []outbox.State{D, U, D, OK}, wantInquiry: outbox.NotReceived, sends: 2, delivered: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := newPool(t)
			f := newFakeRail()
			if tt.send != nil {
				f.send = func(m outbox.Message, n int) (outbox.Result, bool) { return tt.send(n) }
			}
			if tt.name == "a sender that ignores its deadline is cut off as unknown" {
				// It arrived at once; only the answer is late.
				f.send = func(m outbox.Message, n int) (outbox.Result, bool) {
					if n == 1 {
						f.mu.Lock()
						f.received[m.IdempotencyKey]++
						f.mu.Unlock()
						time.Sleep(1500 * time.Millisecond)
						return outbox.Result{Outcome: outbox.Delivered}, false
					}
					return outbox.Result{Outcome: outbox.Delivered}, true
				}
			}
			var inquiries atomic.Int32
			if tt.inquire != nil {
				f.inquire = func(m outbox.Message) (outbox.Result, bool) { return tt.inquire(int(inquiries.Add(1))) }
			}
			if tt.invalid {
				f.validate = func(outbox.Message) error { return errors.New("amount must be positive") }
			}
			h := &hookLog{}
			cfg := fastConfig(pool, f)
			cfg.Hooks = h.hooks()
			cfg.MaxAttempts = tt.maxAttempts
			in := instruction("bank-a", 1)
			enqueue(t, pool, in)
			startRelayer(t, cfg)
			eventually(t, 15*time.Second, "a final state", func() bool {
				s := lastState(t, pool, in.InstructionID)
				return s == OK || s == F
			})
			got := states(t, pool, in.InstructionID)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("attempts %v, want %v", got, tt.want)
			}
			as, _ := outbox.Attempts(context.Background(), pool, in.InstructionID)
			last := as[len(as)-1]
			if last.ErrorCode != tt.wantCode {
				t.Errorf("error code %q, want %q (%s)", last.ErrorCode, tt.wantCode, last.ErrorMessage)
			}
			if last.InquiryOutcome != tt.wantInquiry {
				t.Errorf("inquiry %q, want %q", last.InquiryOutcome, tt.wantInquiry)
			}
			for i, a := range as {
				if a.AttemptNo != i/2+1 || a.SequenceID != 1 || a.OutboxID != as[0].OutboxID {
					t.Errorf("attempt row %d: no %d seq %d outbox %v", i, a.AttemptNo, a.SequenceID, a.OutboxID)
				}
			}
			time.Sleep(100 * time.Millisecond) // nothing more may happen
			if n := f.count(f.sends, in.IdempotencyKey); n != tt.sends {
				t.Errorf("%d sends, want %d", n, tt.sends)
			}
			if n := f.count(f.received, in.IdempotencyKey); tt.delivered == 1 && n != 1 {
				t.Errorf("the rail received it %d times, want once", n)
			}
			delivered, dead := h.snapshot()
			if len(delivered) != tt.delivered || len(dead) != tt.dead {
				t.Fatalf("hooks: %d delivered, %d dead; want %d, %d", len(delivered), len(dead), tt.delivered, tt.dead)
			}
			if tt.dead == 1 && dead[0].ErrorCode != tt.wantCode {
				t.Errorf("dead letter code %q, want %q", dead[0].ErrorCode, tt.wantCode)
			}
			if tt.delivered == 1 && delivered[0].Inquired != (tt.wantInquiry == outbox.Delivered) {
				t.Errorf("delivery inquired %v", delivered[0].Inquired)
			}
			d := depth(t, pool)
			if d.Pending != 0 || d.InFlight != 0 || d.DeadLetters != int64(tt.dead) {
				t.Errorf("depth afterwards %+v", d)
			}
		})
	}
}

// TestRetryBackoffGrows: each retry waits longer than the one before, and
// never less than its backoff less the jitter.
func TestRetryBackoffGrows(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	f := newFakeRail()
	f.send = func(m outbox.Message, n int) (outbox.Result, bool) {
		if n < 6 {
			return res(outbox.Retryable, "503"), false
		}
		return outbox.Result{Outcome: outbox.Delivered}, true
	}
	cfg := fastConfig(pool, f)
	cfg.BackoffBase, cfg.BackoffMax, cfg.BackoffJitter = 40*time.Millisecond, 10*time.Second, 0.25
	cfg.PollInterval = 5 * time.Millisecond
	in := instruction("bank-a", 1)
	enqueue(t, pool, in)
	startRelayer(t, cfg)
	eventually(t, 15*time.Second, "delivery", func() bool { return lastState(t, pool, in.InstructionID) == OK })
	as, _ := outbox.Attempts(context.Background(), pool, in.InstructionID)
	var prev time.Duration
	retries := 0
	for i, a := range as {
		if a.State != R {
			continue
		}
		retries++
		backoff := a.NextAttemptAt.Sub(a.CompletedAt)
		full := cfg.BackoffBase << (a.AttemptNo - 1)
		low := time.Duration(float64(full) * (1 - cfg.BackoffJitter))
		if backoff < low-time.Millisecond || backoff > full {
			t.Errorf("attempt %d: backoff %v, want %v..%v", a.AttemptNo, backoff, low, full)
		}
		if backoff <= prev {
			t.Errorf("attempt %d: backoff %v, not more than %v before", a.AttemptNo, backoff, prev)
		}
		prev = backoff
		if next := as[i+1]; next.ClaimedAt.Before(a.NextAttemptAt) {
			t.Errorf("attempt %d claimed at %v, before its backoff ended at %v", next.AttemptNo, next.ClaimedAt, a.NextAttemptAt)
		}
	}
	if retries != 5 {
		t.Fatalf("%d retries, want 5: %v", retries, states(t, pool, in.InstructionID))
	}
}

func TestBackoffFormula(t *testing.T) {
	t.Parallel()
	c := outbox.Config{BackoffBase: time.Second, BackoffMax: time.Minute, BackoffJitter: 0.2}
	tests := []struct {
		attempt  int
		u        float64
		low, top time.Duration
	}{
		{1, 0, time.Second, time.Second},
		{1, 0.999, 800 * time.Millisecond, time.Second},
		{2, 0.5, 1800 * time.Millisecond, 1800 * time.Millisecond},
		{4, 0, 8 * time.Second, 8 * time.Second},
		{7, 0, time.Minute, time.Minute}, // 64 s capped
		{40, 0.999, 48 * time.Second, time.Minute},
	}
	for _, tt := range tests {
		if d := c.Backoff(tt.attempt, tt.u); d < tt.low || d > tt.top {
			t.Errorf("backoff(%d, %v) = %v, want %v..%v", tt.attempt, tt.u, d, tt.low, tt.top)
		}
	}
	// Worst jitter now against none before: still growing below the cap.
	for n := 1; n < 6; n++ {
		if c.Backoff(n+1, 0.999) <= c.Backoff(n, 0) {
			t.Errorf("backoff %d with full jitter %v not above backoff %d %v", n+1, c.Backoff(n+1, 0.999), n, c.Backoff(n, 0))
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	base := func() outbox.Config {
		return outbox.Config{Pool: nil, Sender: newFakeRail()}
	}
	tests := []struct {
		name   string
		change func(*outbox.Config)
	}{
		{"no pool", func(c *outbox.Config) {}},
		{"nothing wakes it", func(c *outbox.Config) { c.DisableNotify, c.DisablePoll = true, true }},
		{"rail timeout over half the reaper's", func(c *outbox.Config) { c.RailTimeout, c.ReaperTimeout = time.Minute, time.Minute }},
		{"jitter of one half", func(c *outbox.Config) { c.BackoffJitter = 0.5 }},
		{"negative batch", func(c *outbox.Config) { c.ClaimBatchSize = -1 }},
		{"debounce too long", func(c *outbox.Config) { c.Debounce = 2 * time.Second }},
		{"rail limit zero", func(c *outbox.Config) { c.RailConcurrency = map[string]int{"X": -1} }},
	}
	for _, tt := range tests {
		c := base()
		tt.change(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	c := outbox.Config{}
	if d := c.SendDeadline(); d != 80*time.Second {
		t.Errorf("default send deadline %v, want 80s (reaper 120 − rail 10 − a quarter of 120)", d)
	}
}

// TestWakeUps: notifications alone (poll off) and the poll alone
// (notifications off) each drive delivery.
func TestWakeUps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                     string
		disableNotify, disablePo bool
		within                   time.Duration
	}{
		{name: "notify only", disablePo: true, within: 2 * time.Second},
		{name: "poll only", disableNotify: true, within: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := newPool(t)
			f := newFakeRail()
			reg := prometheus.NewRegistry()
			cfg := fastConfig(pool, f)
			cfg.DisableNotify, cfg.DisablePoll = tt.disableNotify, tt.disablePo
			cfg.PollInterval = 250 * time.Millisecond
			cfg.Metrics = outbox.NewMetrics(reg)
			startRelayer(t, cfg)
			if !tt.disableNotify {
				waitListener(t, pool)
			}
			time.Sleep(300 * time.Millisecond) // the start-up pass is over
			for i := range 20 {
				enqueue(t, pool, instruction("bank-a", i))
			}
			eventually(t, tt.within, "20 deliveries", func() bool { return f.totalReceived() == 20 })
			m := metricsOf(t, reg)
			if tt.disableNotify {
				if m["paydispatch_outbox_notifications_total"] != 0 || listeners(t, pool) != 0 {
					t.Errorf("notifications with notify off: %v", m)
				}
			} else if m["paydispatch_outbox_notify_wakeups_total"] == 0 {
				t.Errorf("no notify wake-ups: %v", m)
			}
		})
	}
}

// TestNotifyOnlyManyProducers: producers committing at once mostly skip
// their notification (one notifier commits at a time); with the poll off
// the relayer's passes after each notification still find every row,
// the last ones too.
func TestNotifyOnlyManyProducers(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	f := newFakeRail()
	reg := prometheus.NewRegistry()
	cfg := fastConfig(pool, f)
	cfg.DisablePoll = true
	cfg.Metrics = outbox.NewMetrics(reg)
	startRelayer(t, cfg)
	waitListener(t, pool)
	for round := range 3 {
		var wg sync.WaitGroup
		for p := range 8 {
			wg.Go(func() {
				for i := range 25 {
					enqueue(t, pool, instruction(fmt.Sprintf("bank-%d", p), round*1000+i))
				}
			})
		}
		wg.Wait()
		want := (round + 1) * 200
		eventually(t, 10*time.Second, fmt.Sprintf("%d deliveries", want), func() bool { return f.totalReceived() == want })
	}
	m := metricsOf(t, reg)
	t.Logf("600 single-row commits, %v notifications", m["paydispatch_outbox_notifications_total"])
}

// TestNotifyOnlyKeepsBackoffs: with the poll off, a retry still goes out
// when its backoff ends (the relayer's timer on the next due time).
func TestNotifyOnlyKeepsBackoffs(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	f := newFakeRail()
	f.send = func(m outbox.Message, n int) (outbox.Result, bool) {
		if n == 1 {
			return res(outbox.Retryable, "503"), false
		}
		return outbox.Result{Outcome: outbox.Delivered}, true
	}
	cfg := fastConfig(pool, f)
	cfg.DisablePoll = true
	cfg.BackoffBase, cfg.BackoffMax = 300*time.Millisecond, time.Second
	startRelayer(t, cfg)
	waitListener(t, pool)
	in := instruction("bank-a", 1)
	enqueue(t, pool, in)
	eventually(t, 3*time.Second, "delivery after a backoff", func() bool { return lastState(t, pool, in.InstructionID) == OK })
}

// TestListenerReconnects: the listener's connection is killed; the
// relayer reconnects and notifications drive delivery again (poll off).
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	f := newFakeRail()
	cfg := fastConfig(pool, f)
	cfg.DisablePoll = true
	startRelayer(t, cfg)
	old := waitListener(t, pool)
	if _, err := pool.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, old); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "a new listener", func() bool {
		pid := listenerPID(t, pool)
		return pid != 0 && pid != old
	})
	time.Sleep(100 * time.Millisecond)
	enqueue(t, pool, instruction("bank-a", 1))
	eventually(t, 2*time.Second, "delivery", func() bool { return f.totalReceived() == 1 })
}

// TestThroughputRunsInParallel: a throughput participant's instructions go
// out side by side, within the global and per-rail limits.
func TestThroughputRunsInParallel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		railLimit, wantAt int // wantAt: the most sends at once must be this (0: more than 1)
	}{
		{name: "global limit", railLimit: 0},
		{name: "rail limit", railLimit: 2, wantAt: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := newPool(t)
			f := newFakeRail()
			f.latency = 20 * time.Millisecond
			cfg := fastConfig(pool, f)
			cfg.Concurrency = 8
			if tt.railLimit > 0 {
				cfg.RailConcurrency = map[string]int{rail: tt.railLimit}
			}
			var ins []outbox.Instruction
			for i := range 60 {
				ins = append(ins, instruction("bank-a", i))
			}
			outboxtest.Enqueue(t, pool, ins)
			startRelayer(t, cfg)
			eventually(t, 10*time.Second, "60 deliveries", func() bool { return depth(t, pool).Pending == 0 && depth(t, pool).InFlight == 0 })
			f.mu.Lock()
			defer f.mu.Unlock()
			for k, n := range f.received {
				if n != 1 || f.sends[k] != 1 {
					t.Fatalf("%s received %d times, sent %d", k, n, f.sends[k])
				}
			}
			if len(f.received) != 60 {
				t.Fatalf("%d received", len(f.received))
			}
			if tt.wantAt == 0 && (f.maxInFl < 2 || f.maxInFl > 8) || tt.wantAt > 0 && f.maxInFl != tt.wantAt {
				t.Fatalf("at most %d sends at once", f.maxInFl)
			}
		})
	}
}

// TestSendDeadline: a claim that waited too long for a rail slot is put
// back unsent (NOT_SENT), not sent late, and goes out later.
func TestSendDeadline(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	f := newFakeRail()
	f.latency = 400 * time.Millisecond
	cfg := fastConfig(pool, f)
	cfg.ReaperTimeout, cfg.RailTimeout = 2*time.Second, 500*time.Millisecond // deadline 1 s
	cfg.RailConcurrency = map[string]int{rail: 1}
	var ins []outbox.Instruction
	for i := range 5 {
		ins = append(ins, instruction("bank-a", i))
	}
	outboxtest.Enqueue(t, pool, ins)
	startRelayer(t, cfg)
	eventually(t, 15*time.Second, "5 deliveries", func() bool { return f.totalReceived() == 5 && depth(t, pool).InFlight == 0 })
	notSent := countRows(t, pool, `SELECT count(*) FROM payment_outbox_attempts WHERE error_code = 'NOT_SENT'`)
	if notSent == 0 {
		t.Fatal("no claim was put back unsent")
	}
	for _, in := range ins {
		if n := f.count(f.sends, in.IdempotencyKey); n != 1 {
			t.Fatalf("%s sent %d times", in.InstructionID, n)
		}
	}
}

// TestOperatorRequeuesDeadLetter: a dead letter goes back on an
// operator's word and is delivered; it is no dead letter any more.
func TestOperatorRequeuesDeadLetter(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	f := newFakeRail()
	f.send = func(m outbox.Message, n int) (outbox.Result, bool) {
		if n == 1 {
			return res(outbox.Terminal, "AC06"), false
		}
		return outbox.Result{Outcome: outbox.Delivered}, true
	}
	startRelayer(t, fastConfig(pool, f))
	in := instruction("bank-a", 1)
	id, seq := enqueue(t, pool, in)
	eventually(t, 5*time.Second, "a dead letter", func() bool { return depth(t, pool).DeadLetters == 1 })
	dls, err := outbox.DeadLetters(ctx, pool, 10)
	if err != nil || len(dls) != 1 || dls[0].Message.OutboxID != id || dls[0].RailCode != "AC06" {
		t.Fatalf("dead letters %+v %v", dls, err)
	}
	requeue := func(reason string) outbox.Requeued {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		rq, err := outbox.RequeueDeadLetters(ctx, tx, outbox.Hooks{}, []outbox.Requeue{{OutboxID: id, At: time.Now()}}, reason)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return rq
	}
	if rq := requeue("beneficiary account reopened"); len(rq.Messages) != 1 || rq.Messages[0].SequenceID != seq {
		t.Fatalf("requeue: %+v", rq)
	}
	if rq := requeue("again"); len(rq.Messages) != 0 {
		t.Fatalf("a second requeue moved %+v: it is no longer dead", rq.Messages)
	}
	eventually(t, 5*time.Second, "delivery", func() bool { return lastState(t, pool, in.InstructionID) == OK })
	if got := states(t, pool, in.InstructionID); !slices.Equal(got, []outbox.State{D, F, R, D, OK}) {
		t.Fatalf("attempts %v", got)
	}
	if d := depth(t, pool); d.DeadLetters != 0 {
		t.Fatalf("depth %+v", d)
	}
}

// TestAttemptsAreAppendOnly: the archive refuses rewrites and deletes.
func TestAttemptsAreAppendOnly(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	enqueue(t, pool, instruction("bank-a", 1))
	if _, err := outbox.ClaimOnly(context.Background(), pool, "r1", 10); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`UPDATE payment_outbox_attempts SET state = 'DISPATCHED'`,
		`DELETE FROM payment_outbox_attempts`,
		`TRUNCATE payment_outbox_attempts`,
	} {
		if _, err := pool.Exec(context.Background(), sql); err == nil {
			t.Errorf("%s: accepted", sql)
		}
	}
	if n := countRows(t, pool, `SELECT count(*) FROM payment_outbox_attempts`); n != 1 {
		t.Fatalf("%d attempt rows", n)
	}
}
