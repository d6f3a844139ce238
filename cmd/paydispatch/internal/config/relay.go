package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/railsim"
)

// Rail is where instructions are delivered.
type Rail struct {
	// URL is the process's rail URL: the endpoint of every rail
	// configured without one; empty: serve runs the rail simulator
	// in-process (relay refuses to run without one).
	URL string
	// Timeout is the hard timeout of one rail call (send or inquiry).
	Timeout time.Duration
	// ChargeBearer and DebtorAgentBIC are what pacs.008 rails render:
	// ChrgBr, and the DbtrAgt of an instruction naming no debtor BIC.
	ChargeBearer   string
	DebtorAgentBIC string
}

// RailSettings binds r's settings.
func RailSettings(r *Rail) []*Setting {
	return []*Setting{
		{Flag: "rail-url", Env: "PAYDISPATCH_RAIL_URL",
			Usage: "base URL of the rail's HTTP API (JSON and pacs.008 under it), e.g. http://127.0.0.1:9090; empty: serve runs the rail simulator in-process on loopback",
			Parse: func(v string) error {
				if v != "" && !validBaseURL(v) {
					return fmt.Errorf("want http(s)://host[:port][/prefix], e.g. http://127.0.0.1:9090")
				}
				r.URL = v
				return nil
			}},
		{Flag: "rail-timeout", Env: "PAYDISPATCH_RAIL_TIMEOUT", Default: "10s",
			Usage: "hard timeout of one rail call; a call without an answer by then has an unknown outcome, settled by inquiry",
			Parse: func(v string) error {
				d, err := durationIn(v, 10*time.Millisecond, 10*time.Minute)
				r.Timeout = d
				return err
			}},
		{Flag: "pacs008-debtor-agent-bic", Env: "PAYDISPATCH_PACS008_DEBTOR_AGENT_BIC",
			Usage: "this institution's BIC, the debtor agent (DbtrAgt) of pacs.008 instructions that name no debtor BIC, as payments' do not; empty: PACS008 rails refuse those",
			Parse: func(v string) error {
				if v != "" {
					if err := bankid.CheckBIC(v); err != nil {
						return fmt.Errorf("want a BIC (8 or 11 characters, e.g. NWBKGB2L): %v", err)
					}
				}
				r.DebtorAgentBIC = v
				return nil
			}},
		{Flag: "pacs008-charge-bearer", Env: "PAYDISPATCH_PACS008_CHARGE_BEARER", Default: "SLEV",
			Usage: "ChrgBr of pacs.008 instructions: SLEV (the scheme's service level), SHAR, DEBT or CRED",
			Parse: func(v string) error {
				switch v {
				case "SLEV", "SHAR", "DEBT", "CRED":
					r.ChargeBearer = v
					return nil
				}
				return fmt.Errorf("want SLEV, SHAR, DEBT or CRED")
			}},
	}
}

// validBaseURL is what package rail accepts as a base URL: http or https,
// a host, no query or fragment.
func validBaseURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
}

// Relay tunes the outbox relayer (package outbox documents each knob).
type Relay struct {
	Notify        bool
	PollInterval  time.Duration // 0: no fallback poll
	Debounce      time.Duration
	Concurrency   int
	MaxAttempts   int
	BackoffBase   time.Duration
	BackoffMax    time.Duration
	ReaperTimeout time.Duration
}

// RelaySettings binds r's settings.
func RelaySettings(r *Relay) []*Setting {
	return []*Setting{
		{Flag: "relay-notify", Env: "PAYDISPATCH_RELAY_NOTIFY", Default: "true",
			Usage: "wake the relayer by LISTEN/NOTIFY when instructions are enqueued",
			Parse: func(v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return fmt.Errorf("want true or false")
				}
				r.Notify = b
				return nil
			}},
		{Flag: "relay-poll-interval", Env: "PAYDISPATCH_RELAY_POLL_INTERVAL", Default: "500ms",
			Usage: "fallback poll of the outbox; 0 turns it off (NOTIFY alone)",
			Parse: func(v string) error {
				if v == "0" {
					r.PollInterval = 0
					return nil
				}
				d, err := durationIn(v, time.Millisecond, 10*time.Minute)
				if err != nil {
					return fmt.Errorf("want 0 (off) or a duration from 1ms to 10m, e.g. 500ms")
				}
				r.PollInterval = d
				return nil
			}},
		DurationVar("relay-debounce", "PAYDISPATCH_RELAY_DEBOUNCE", "25ms", time.Millisecond, time.Second,
			"notifications within this window after the first fold into one claim pass", &r.Debounce),
		IntVar("relay-concurrency", "PAYDISPATCH_RELAY_CONCURRENCY", "64", 1, 4096, "rail calls at once, per relayer", &r.Concurrency),
		IntVar("relay-max-attempts", "PAYDISPATCH_RELAY_MAX_ATTEMPTS", "8", 1, 1000,
			"attempts before a still-retryable instruction is dead-lettered (unknown outcomes never are)", &r.MaxAttempts),
		DurationVar("relay-backoff-base", "PAYDISPATCH_RELAY_BACKOFF_BASE", "1s", time.Millisecond, time.Hour,
			"backoff after the first failed attempt; it doubles with each attempt", &r.BackoffBase),
		DurationVar("relay-backoff-max", "PAYDISPATCH_RELAY_BACKOFF_MAX", "5m", time.Millisecond, 24*time.Hour,
			"longest backoff between attempts", &r.BackoffMax),
		DurationVar("relay-reaper-timeout", "PAYDISPATCH_RELAY_REAPER_TIMEOUT", "120s", time.Second, 24*time.Hour,
			"a claim with no outcome for this long (its relayer died) is requeued for inquiry; at least twice --rail-timeout", &r.ReaperTimeout),
	}
}

// Check reports relayer settings that are fine one by one but not
// together, in one line naming the settings and the fix.
func (r Relay) Check(rail Rail) error {
	switch {
	case !r.Notify && r.PollInterval == 0:
		return fmt.Errorf("--relay-notify=false (PAYDISPATCH_RELAY_NOTIFY) with --relay-poll-interval 0 (PAYDISPATCH_RELAY_POLL_INTERVAL) leaves nothing to wake the relayer: turn one of them on")
	case r.BackoffBase > r.BackoffMax:
		return fmt.Errorf("--relay-backoff-base %v is longer than --relay-backoff-max %v: lower the base or raise the max", r.BackoffBase, r.BackoffMax)
	case rail.Timeout > r.ReaperTimeout/2:
		// A send must be over well before the reaper may hand its message
		// to another relayer (package outbox, "No late send").
		return fmt.Errorf("--rail-timeout %v (PAYDISPATCH_RAIL_TIMEOUT) is more than half of --relay-reaper-timeout %v (PAYDISPATCH_RELAY_REAPER_TIMEOUT): lower the first or raise the second", rail.Timeout, r.ReaperTimeout)
	}
	return nil
}

// Metrics is where a process without an API serves /metrics.
type Metrics struct {
	Addr string // empty: off
}

// MetricsSettings binds m's settings.
func MetricsSettings(m *Metrics) []*Setting {
	return []*Setting{
		{Flag: "metrics-addr", Env: "PAYDISPATCH_METRICS_ADDR", Default: "127.0.0.1:9091",
			Usage: "serve /metrics (Prometheus) and /healthz on this host:port (port 0: any free port); empty: off",
			Parse: func(v string) error {
				if v != "" && !validAddr(v) {
					return fmt.Errorf("want host:port, e.g. 127.0.0.1:9091, or empty for off")
				}
				m.Addr = v
				return nil
			}},
	}
}

// RailSim is the rail simulator's address, behaviour and rails' cut-offs
// (package railsim documents them).
type RailSim struct {
	Addr              string
	Latency, Jitter   time.Duration
	RetryableFraction float64
	TerminalFraction  float64
	TimeoutFraction   float64
	Seed              uint64
	Cutoffs           map[string]railsim.Cutoff
}

// Options are the simulator's options from s.
func (s RailSim) Options() railsim.Options {
	return railsim.Options{Behaviour: railsim.Behaviour{
		Latency:           railsim.Duration(s.Latency),
		Jitter:            railsim.Duration(s.Jitter),
		RetryableFraction: s.RetryableFraction,
		TerminalFraction:  s.TerminalFraction,
		TimeoutFraction:   s.TimeoutFraction,
		Seed:              s.Seed,
	}, Cutoffs: s.Cutoffs}
}

// RailSimSettings binds s's settings.
func RailSimSettings(s *RailSim) []*Setting {
	duration := func(name, env, usage string, dst *time.Duration) *Setting {
		return &Setting{Flag: name, Env: env, Default: "0s", Usage: usage, Parse: func(v string) error {
			d, err := durationIn(v, 0, 10*time.Minute)
			*dst = d
			return err
		}}
	}
	fraction := func(name, env, usage string, dst *float64) *Setting {
		return &Setting{Flag: name, Env: env, Default: "0", Usage: usage, Parse: func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
				return fmt.Errorf("want a fraction from 0 to 1, e.g. 0.05")
			}
			*dst = f
			return nil
		}}
	}
	return []*Setting{
		{Flag: "http-addr", Env: "PAYDISPATCH_RAIL_SIM_ADDR", Default: "127.0.0.1:9090",
			Usage: "listen address of the simulated rail (host:port; port 0: any free port)",
			Parse: func(v string) error {
				if !validAddr(v) {
					return fmt.Errorf("want host:port, e.g. 127.0.0.1:9090")
				}
				s.Addr = v
				return nil
			}},
		duration("latency", "PAYDISPATCH_RAIL_SIM_LATENCY", "added to every send and inquiry", &s.Latency),
		duration("jitter", "PAYDISPATCH_RAIL_SIM_JITTER", "a random extra latency of up to this much", &s.Jitter),
		fraction("retryable-fraction", "PAYDISPATCH_RAIL_SIM_RETRYABLE_FRACTION",
			"share of sends answered 503 RAIL_BUSY (not taken; drawn per attempt)", &s.RetryableFraction),
		fraction("terminal-fraction", "PAYDISPATCH_RAIL_SIM_TERMINAL_FRACTION",
			"share of instructions refused with AC04 (decided per idempotency key)", &s.TerminalFraction),
		fraction("timeout-fraction", "PAYDISPATCH_RAIL_SIM_TIMEOUT_FRACTION",
			"share of accepted sends then answered too late or cut off (unknown outcomes)", &s.TimeoutFraction),
		{Flag: "seed", Env: "PAYDISPATCH_RAIL_SIM_SEED", Default: "0", Usage: "seed of the random decisions",
			Parse: func(v string) error {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return fmt.Errorf("want a whole number from 0 to %d", uint64(math.MaxUint64))
				}
				s.Seed = n
				return nil
			}},
		{Flag: "cutoffs", Env: "PAYDISPATCH_RAIL_SIM_CUTOFFS",
			Usage: "rails' cut-offs, NAME=HH:MM:SS[@Zone] comma-separated (e.g. SEPA=16:00:00@Europe/Berlin,DEFAULT=17:30): an instruction arriving at or after its value date's cut-off is refused TM01",
			Parse: func(v string) error {
				c, err := railsim.ParseCutoffs(v)
				if err != nil {
					return err
				}
				s.Cutoffs = c
				return nil
			}},
	}
}

// validAddr: host:port with a numeric port (the host may be empty: all
// interfaces).
func validAddr(v string) bool {
	_, port, err := net.SplitHostPort(v)
	if err != nil || port == "" {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 0 && n <= 65535
}
