package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/screening"
)

// Screening is where and how Phase A asks the screening service
// (package screening); URL empty: no screening.
type Screening struct {
	URL         string
	Timeout     time.Duration
	Batch       int
	MaxInFlight int
}

// On reports whether screening is configured.
func (s Screening) On() bool { return s.URL != "" }

// ScreeningSettings binds s's settings.
func ScreeningSettings(s *Screening) []*Setting {
	return []*Setting{
		{Flag: "screening-url", Env: "PAYDISPATCH_SCREENING_URL",
			Usage: "the screening service's endpoint, e.g. http://127.0.0.1:9092/v1/screen: Phase A POSTs batches of payments to it and holds the hits; empty: no screening",
			Parse: func(v string) error {
				if v != "" && !validBaseURL(v) {
					return fmt.Errorf("want http(s)://host[:port]/path, e.g. http://127.0.0.1:9092/v1/screen")
				}
				s.URL = v
				return nil
			}},
		DurationVar("screening-timeout", "PAYDISPATCH_SCREENING_TIMEOUT", screening.DefaultTimeout.String(), 10*time.Millisecond, time.Minute,
			"timeout of one screening call; its payments then have no answer and go by their tenant's rule (screeningOnError)", &s.Timeout),
		IntVar("screening-batch", "PAYDISPATCH_SCREENING_BATCH", strconv.Itoa(screening.DefaultBatchSize), 1, screening.MaxBatchSize,
			"payments per screening call at most", &s.Batch),
		IntVar("screening-max-in-flight", "PAYDISPATCH_SCREENING_MAX_IN_FLIGHT", strconv.Itoa(screening.DefaultMaxInFlight), 1, 256,
			"screening calls in flight at most, per init worker", &s.MaxInFlight),
	}
}

// ScreenSim is the screening simulator's address and behaviour.
type ScreenSim struct {
	Addr string
	screening.SimOptions
}

// ScreenSimSettings binds s's settings: flags alone, a simulator is run
// by hand or by a benchmark.
func ScreenSimSettings(s *ScreenSim) []*Setting {
	fraction := func(name, usage string, dst *float64) *Setting {
		return &Setting{Flag: name, Default: "0", Usage: usage, Parse: func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
				return fmt.Errorf("want a fraction from 0 to 1, e.g. 0.05")
			}
			*dst = f
			return nil
		}}
	}
	return []*Setting{
		{Flag: "http-addr", Default: "127.0.0.1:9092", Usage: "listen address of the screening simulator (host:port; port 0: any free port)",
			Parse: func(v string) error {
				if !validAddr(v) {
					return fmt.Errorf("want host:port, e.g. 127.0.0.1:9092")
				}
				s.Addr = v
				return nil
			}},
		{Flag: "hit-names", Usage: "creditor names that are always a HIT (list SIM-NAMES), comma-separated; case and spacing aside",
			Parse: func(v string) error {
				s.Names = nil
				for _, n := range strings.Split(v, ",") {
					if n = strings.TrimSpace(n); n != "" {
						s.Names = append(s.Names, n)
					}
				}
				return nil
			}},
		fraction("hit-fraction", "share of the other payments answered HIT (list SIM-FRACTION), chosen by a hash of --seed and the payment", &s.HitFraction),
		fraction("error-fraction", "share of the other payments answered ERROR, chosen the same way", &s.ErrorFraction),
		{Flag: "seed", Default: "0", Usage: "seed of the hash that chooses the seeded hits and errors",
			Parse: func(v string) error {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return fmt.Errorf("want a whole number from 0 to %d", uint64(math.MaxUint64))
				}
				s.Seed = n
				return nil
			}},
		{Flag: "delay", Default: "0s", Usage: "how long each call waits before its answer, e.g. 50ms",
			Parse: func(v string) error {
				d, err := durationIn(v, 0, time.Minute)
				s.Delay = d
				return err
			}},
	}
}
