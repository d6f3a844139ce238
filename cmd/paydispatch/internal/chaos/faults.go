package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/railsim"
)

// Fault kinds, in the table's order.
const (
	faultKill          = "SIGKILL of a role process, restarted"
	faultTemporal      = "Temporal server stopped, restarted"
	faultTemporalKill  = "Temporal server SIGKILLed, restarted"
	faultPGFast        = "PostgreSQL fast shutdown, restarted"
	faultPGImmediate   = "PostgreSQL immediate shutdown, restarted"
	faultRailRetryable = "rail answers retryable errors (503)"
	faultRailTimeouts  = "rail accepts, then times out (unknown outcomes)"
	faultKillSwitch    = "kill switch off, then on"
	faultRate          = "dispatch rate cut, then restored"
	faultExecMode      = "exec mode switched, then back"
	faultKafkaIntake   = "Kafka intakes SIGKILLed while records arrive"
)

var faultKinds = []string{faultKill, faultKafkaIntake, faultTemporal, faultTemporalKill, faultPGFast, faultPGImmediate, faultRailRetryable, faultRailTimeouts, faultKillSwitch, faultRate, faultExecMode}

// injected is one fault, as it happened.
type injected struct {
	kind   string
	when   time.Time
	at     time.Duration // after the instant
	took   time.Duration
	detail string
	err    error // the fault could not be injected or undone
	// afterDrain: it began after the last payment had settled, so it
	// tested nothing.
	afterDrain bool
}

// injector attacks the stack on a schedule drawn from the seed.
type injector struct {
	s    *stack
	o    Options
	base railsim.Behaviour
	// stop ends when the suite itself is stopped (Ctrl-C): the fault
	// under way is undone at once and no other is injected.
	stop context.Context

	mu      sync.Mutex
	log     []injected
	instant time.Time
	drained time.Time // when the last payment settled
}

// pause waits d, or less if the suite is stopped; it reports whether d
// passed.
func (in *injector) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-in.stop.Done():
		return false
	case <-t.C:
		return true
	}
}

func (in *injector) record(f injected) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.log = append(in.log, f)
	in.s.log.Info("fault", "kind", f.kind, "at", f.at.Round(time.Millisecond), "took", f.took.Round(time.Millisecond), "detail", f.detail, "err", f.err)
}

func (in *injector) faults() []injected {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := append([]injected(nil), in.log...)
	for i := range out {
		out[i].afterDrain = !in.drained.IsZero() && in.instant.Add(out[i].at).After(in.drained)
	}
	return out
}

// run injects faults: the random kills on one line, the other faults one
// after the other, in an order and with pauses drawn from the seed. The
// end of ctx says the drain is over; run still injects every planned
// fault and at least MinKills kills (those that land after the drain are
// counted as such by the checks), undoes them all and returns.
func (in *injector) run(ctx context.Context, instant time.Time) {
	in.mu.Lock()
	in.instant = instant
	in.mu.Unlock()
	go func() {
		<-ctx.Done()
		in.mu.Lock()
		in.drained = time.Now()
		in.mu.Unlock()
	}()
	eventsDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		in.killIntakes(instant)
	}()
	go func() {
		defer wg.Done()
		defer close(eventsDone)
		in.events(instant, rand.New(rand.NewPCG(in.o.Seed, 2)))
	}()
	go func() {
		defer wg.Done()
		in.kills(ctx, instant, eventsDone, rand.New(rand.NewPCG(in.o.Seed, 1)))
	}()
	wg.Wait()
}

// kills sends SIGKILL to a random role process every KillEvery on
// average (uniform from half to one and a half times it), and starts it
// again after up to 3 s; it stops once the other faults are done,
// MinKills were sent and the drain is over or has run past killWindow:
// a stack killed every few seconds for ever may never settle (a Kafka
// group that loses a member each time it has nearly rebalanced), and
// what is checked then is that it recovers once the faults stop.
func (in *injector) kills(ctx context.Context, instant time.Time, eventsDone <-chan struct{}, r *rand.Rand) {
	until := instant.Add(killWindow(in.o))
	for n := 0; ; n++ {
		if in.stop.Err() != nil || (isClosed(eventsDone) && n >= in.o.MinKills && (ctx.Err() != nil || time.Now().After(until))) {
			return
		}
		if !in.pause(in.o.KillEvery/2 + time.Duration(r.Int64N(int64(in.o.KillEvery)))) {
			return
		}
		targets := in.s.targets()
		p := targets[r.IntN(len(targets))]
		down := time.Duration(500+r.IntN(2500)) * time.Millisecond
		start := time.Now()
		in.s.halt(p, syscall.SIGKILL, 5*time.Second)
		time.Sleep(down)
		err := in.s.start(p)
		in.record(injected{kind: faultKill, when: start, at: start.Sub(instant), took: time.Since(start), detail: p.name, err: err})
	}
}

// killWindow is how long after the instant the random kills may go on
// while the drain is not over: twice the drain's planned length (its
// payments at its rate), and half a minute more.
func killWindow(o Options) time.Duration {
	planned := time.Duration(0)
	if o.Rate > 0 {
		planned = time.Duration(o.Payments) * time.Second / time.Duration(o.Rate)
	}
	return 2*planned + 30*time.Second
}

// killIntakes SIGKILLs both kafka-intake processes while the demo's
// Kafka share arrives (it is produced over the first 2.5 s of the
// disruption), one after the other, each down a second: whatever they
// had stored and not committed is read again by serve's intake or their
// successors.
func (in *injector) killIntakes(instant time.Time) {
	for i, name := range []string{"kafka-intake-1", "kafka-intake-2"} {
		if !in.pause(time.Duration(400+600*i) * time.Millisecond) {
			return
		}
		p := in.s.procs[name]
		start := time.Now()
		in.s.halt(p, syscall.SIGKILL, 5*time.Second)
		time.Sleep(time.Second)
		err := in.s.start(p)
		in.record(injected{kind: faultKafkaIntake, when: start, at: start.Sub(instant), took: time.Since(start), detail: name, err: err})
	}
}

// events injects each other fault once, in a random order, the first a
// few seconds into the drain, then with pauses of 1–5 s.
func (in *injector) events(instant time.Time, r *rand.Rand) {
	// Not cancelled: every fault is injected and undone.
	ctx := context.Background()
	steps := []struct {
		kind string
		do   func(ctx context.Context) (string, error)
	}{
		{faultTemporal, in.stopTemporal},
		{faultTemporalKill, in.killTemporal},
		{faultPGFast, func(ctx context.Context) (string, error) {
			return "down 2 s", in.s.restartPostgres(ctx, syscall.SIGINT, 2*time.Second)
		}},
		{faultPGImmediate, func(ctx context.Context) (string, error) {
			return "down 2 s", in.s.restartPostgres(ctx, syscall.SIGQUIT, 2*time.Second)
		}},
		{faultRailRetryable, func(ctx context.Context) (string, error) {
			b := in.base
			b.RetryableFraction = 1
			return in.railStretch(ctx, b, "every send answered 503 RAIL_BUSY")
		}},
		{faultRailTimeouts, func(ctx context.Context) (string, error) {
			b := in.base
			b.TimeoutFraction, b.TimeoutMode, b.TimeoutDelay = 0.5, railsim.TimeoutMixed, railsim.Duration(2*railTimeout)
			return in.railStretch(ctx, b, "half the sends accepted, then answered late or cut off")
		}},
		{faultKillSwitch, in.killSwitch},
		{faultRate, in.cutRate},
		{faultExecMode, in.switchMode},
	}
	r.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
	if !in.pause(time.Until(instant.Add(3 * time.Second))) {
		return
	}
	for i, st := range steps {
		if i > 0 {
			if !in.pause(time.Duration(1000+r.IntN(4000)) * time.Millisecond) {
				return
			}
		}
		start := time.Now()
		detail, err := st.do(ctx)
		in.record(injected{kind: st.kind, when: start, at: start.Sub(instant), took: time.Since(start), detail: detail, err: err})
	}
}

// stopTemporal stops the Temporal server (SIGTERM) for TemporalOutage.
func (in *injector) stopTemporal(ctx context.Context) (string, error) {
	p := in.s.procs["temporal"]
	in.s.halt(p, syscall.SIGTERM, 30*time.Second)
	in.pause(in.o.TemporalOutage)
	if err := in.s.start(p); err != nil {
		return "", err
	}
	return "down " + in.o.TemporalOutage.String(), waitTCP(ctx, in.s.temporalAddr, 2*time.Minute)
}

// killTemporal kills the Temporal server (SIGKILL: no graceful shutdown,
// its store as the crash left it) and starts it again after 5 s.
func (in *injector) killTemporal(ctx context.Context) (string, error) {
	p := in.s.procs["temporal"]
	in.s.halt(p, syscall.SIGKILL, 5*time.Second)
	in.pause(5 * time.Second)
	if err := in.s.start(p); err != nil {
		return "", err
	}
	return "down 5s", waitTCP(ctx, in.s.temporalAddr, 2*time.Minute)
}

// railStretch has the rail behave as b for Stretch, then as before.
func (in *injector) railStretch(ctx context.Context, b railsim.Behaviour, what string) (string, error) {
	if err := in.s.rail.SetBehaviour(b); err != nil {
		return "", err
	}
	in.pause(in.o.Stretch)
	return what + " for " + in.o.Stretch.String(), in.s.rail.SetBehaviour(in.base)
}

// killSwitch disables payments' dispatch for Stretch, as an operator
// would with 'paydispatch config set'.
func (in *injector) killSwitch(ctx context.Context) (string, error) {
	q := queue.New(in.s.pool)
	if _, err := q.UpdateConfig(ctx, payment.ItemType, map[string]string{"enabled": "false"}); err != nil {
		return "", fmt.Errorf("kill switch off: %w", err)
	}
	in.pause(in.o.Stretch)
	_, err := retry(ctx, func(ctx context.Context) (queue.Settings, error) {
		return q.UpdateConfig(ctx, payment.ItemType, map[string]string{"enabled": "true"})
	})
	return "dispatch off for " + in.o.Stretch.String(), err
}

// cutRate lowers the in-flight cap and the batch size for Stretch, then
// sets them back.
func (in *injector) cutRate(ctx context.Context) (string, error) {
	q := queue.New(in.s.pool)
	was, err := q.GetConfig(ctx, payment.ItemType)
	if err != nil {
		return "", err
	}
	const inFlight, batch = 5, 10
	if _, err := q.UpdateConfig(ctx, payment.ItemType, map[string]string{"max_in_flight": strconv.Itoa(inFlight), "batch_size": strconv.Itoa(batch)}); err != nil {
		return "", fmt.Errorf("cut the rate: %w", err)
	}
	in.pause(in.o.Stretch)
	_, err = retry(ctx, func(ctx context.Context) (queue.Settings, error) {
		return q.UpdateConfig(ctx, payment.ItemType, map[string]string{"max_in_flight": strconv.Itoa(was.MaxInFlight), "batch_size": strconv.Itoa(was.BatchSize)})
	})
	return fmt.Sprintf("max_in_flight %d → %d, batch_size %d → %d for %s, then back", was.MaxInFlight, inFlight, was.BatchSize, batch, in.o.Stretch), err
}

// switchMode switches payments' exec_mode (BATCH ↔ PER_ITEM) for Stretch,
// then back, as an operator would: claims made in one mode are executed,
// reconciled and recovered in the other.
func (in *injector) switchMode(ctx context.Context) (string, error) {
	q := queue.New(in.s.pool)
	was, err := q.GetConfig(ctx, payment.ItemType)
	if err != nil {
		return "", err
	}
	other := queue.ExecBatch
	if was.Batched() {
		other = queue.ExecPerItem
	}
	if _, err := q.UpdateConfig(ctx, payment.ItemType, map[string]string{"exec_mode": string(other)}); err != nil {
		return "", fmt.Errorf("switch the exec mode: %w", err)
	}
	in.pause(in.o.Stretch)
	_, err = retry(ctx, func(ctx context.Context) (queue.Settings, error) {
		return q.UpdateConfig(ctx, payment.ItemType, map[string]string{"exec_mode": string(was.ExecMode)})
	})
	return fmt.Sprintf("%s → %s for %s, then back", was.ExecMode, other, in.o.Stretch), err
}

// retry calls f until it succeeds, for up to a minute: an operator's
// change that undoes a fault must land.
func retry[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		v, err := f(ctx)
		if err == nil || time.Now().After(deadline) {
			return v, err
		}
		time.Sleep(time.Second)
	}
}
