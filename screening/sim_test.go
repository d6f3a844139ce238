package screening_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/screening"
)

// TestSimulatorSeededHits: named creditors always hit; the seeded
// fractions hit and err in about their share, the same payments for the
// same seed and others for another.
func TestSimulatorSeededHits(t *testing.T) {
	t.Parallel()
	opts := screening.SimOptions{Names: []string{"Ivan Listed"}, HitFraction: 0.1, ErrorFraction: 0.05, Seed: 7}
	sim, err := screening.NewSimulator(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Ivan Listed", "  ivan   listed ", "IVAN LISTED"} {
		if r := sim.Verdict(screening.Subject{TenantID: "acme", PaymentID: "p", CreditorName: name}); r.Verdict != screening.Hit || r.List != screening.SimNameList {
			t.Fatalf("%q: %+v, want a hit on %s", name, r, screening.SimNameList)
		}
	}
	opts.Seed = 8
	other, err := screening.NewSimulator(opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	var hits, errs, hitsOther, overlap int
	for i := range n {
		s := screening.Subject{TenantID: "acme", PaymentID: fmt.Sprint("p-", i), CreditorName: "Jane Doe"}
		r := sim.Verdict(s)
		switch r.Verdict {
		case screening.Hit:
			hits++
			if r.List != screening.SimFractionList {
				t.Fatalf("a seeded hit on %q", r.List)
			}
		case screening.Error:
			errs++
		}
		if again := sim.Verdict(s); again != r {
			t.Fatalf("%s: %+v, then %+v", s.PaymentID, r, again)
		}
		if o := other.Verdict(s); o.Verdict == screening.Hit {
			hitsOther++
			if r.Verdict == screening.Hit {
				overlap++
			}
		}
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"hits", float64(hits) / n, 0.1}, {"errors", float64(errs) / n, 0.05}, {"hits with seed 8", float64(hitsOther) / n, 0.1}} {
		if math.Abs(c.got-c.want) > 0.01 {
			t.Errorf("%s: %.3f of the payments, want %.2f", c.name, c.got, c.want)
		}
	}
	// Independent seeds overlap in about 0.1 × 0.1 of the payments.
	if float64(overlap)/n > 0.02 {
		t.Errorf("seeds 7 and 8 hit %d of the same payments: the seed does not choose them", overlap)
	}
}

// TestSimulatorDelay: each call waits its delay before answering.
func TestSimulatorDelay(t *testing.T) {
	t.Parallel()
	for _, delay := range []time.Duration{0, 80 * time.Millisecond} {
		sim, err := screening.NewSimulator(screening.SimOptions{Delay: delay})
		if err != nil {
			t.Fatal(err)
		}
		url, stop, err := sim.Start("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c, err := screening.NewClient(screening.ClientConfig{URL: url, BatchSize: 2, MaxInFlight: 1})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := c.Screen(context.Background(), subjects(4))
		took := time.Since(start)
		stop()
		if err != nil || len(res) != 4 || res[0].Verdict != screening.Clear {
			t.Fatalf("%+v, %v", res, err)
		}
		// Two calls, one after the other.
		if took < 2*delay || (delay > 0 && took > 2*delay+time.Second) {
			t.Fatalf("delay %s: two calls took %s", delay, took)
		}
		if st := sim.Stats(); st.Calls != 2 || st.Payments != 4 {
			t.Fatalf("stats %+v, want 2 calls of 4 payments", st)
		}
	}
}

func TestSimulatorRefuses(t *testing.T) {
	t.Parallel()
	for _, o := range []screening.SimOptions{
		{HitFraction: -0.1}, {HitFraction: 1.1}, {ErrorFraction: math.NaN()}, {HitFraction: 0.6, ErrorFraction: 0.6}, {Delay: -time.Second},
	} {
		if _, err := screening.NewSimulator(o); err == nil {
			t.Errorf("NewSimulator(%+v) took it", o)
		}
	}
}
