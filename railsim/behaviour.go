package railsim

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// Duration is a time.Duration that reads and writes JSON as Go duration
// text ("250ms", "2s"), the form an operator types.
type Duration time.Duration

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads duration text such as "250ms".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"250ms\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// Timeout modes: how an accepted call is made to look lost.
const (
	// TimeoutDelay holds the answer for TimeoutDelay, past the client's
	// timeout.
	TimeoutDelay = "delay"
	// TimeoutClose closes the connection without answering.
	TimeoutClose = "close"
	// TimeoutMixed picks one of the two per call.
	TimeoutMixed = "mixed"
)

// Behaviour is how the simulated rail misbehaves. Fractions are
// probabilities in [0, 1] (not money: floats are fine here). The zero
// value is a perfect rail.
type Behaviour struct {
	// Latency is added to every send and inquiry, plus a uniform random
	// part of up to Jitter.
	Latency Duration `json:"latency"`
	Jitter  Duration `json:"jitter"`

	// RetryableFraction of sends are answered 503 (429 for RATE_LIMITED)
	// with RetryableCode (default RAIL_BUSY), decided per attempt; the
	// rail does not take the instruction.
	RetryableFraction float64 `json:"retryableFraction"`
	RetryableCode     string  `json:"retryableCode"`

	// TerminalFraction of instructions are refused with TerminalCode
	// (default AC04), decided per idempotency key (from the key and
	// Seed): a refused key stays refused, on resend and on inquiry.
	TerminalFraction float64 `json:"terminalFraction"`
	TerminalCode     string  `json:"terminalCode"`

	// TimeoutFraction of accepted sends are accepted and recorded, then
	// answered too late or not at all (TimeoutMode, default mixed;
	// TimeoutDelay, default 30s, should exceed the client's timeout).
	TimeoutFraction float64  `json:"timeoutFraction"`
	TimeoutMode     string   `json:"timeoutMode"`
	TimeoutDelay    Duration `json:"timeoutDelay"`

	// Seed makes the random decisions reproducible (for one client
	// sending one call at a time; concurrency reorders the draws).
	Seed uint64 `json:"seed"`
}

// Defaults of the fields a zero Behaviour leaves empty.
const (
	DefaultRetryableCode = "RAIL_BUSY"
	DefaultTerminalCode  = "AC04"
	DefaultTimeoutDelay  = 30 * time.Second
	maxDuration          = 10 * time.Minute
)

var codePattern = regexp.MustCompile(`^[A-Z0-9_]{1,35}$`)

// normalize fills defaults and checks the values.
func (b Behaviour) normalize() (Behaviour, error) {
	if b.RetryableCode == "" {
		b.RetryableCode = DefaultRetryableCode
	}
	if b.TerminalCode == "" {
		b.TerminalCode = DefaultTerminalCode
	}
	if b.TimeoutMode == "" {
		b.TimeoutMode = TimeoutMixed
	}
	if b.TimeoutDelay == 0 {
		b.TimeoutDelay = Duration(DefaultTimeoutDelay)
	}
	fractions := []struct {
		name string
		f    float64
	}{{"retryableFraction", b.RetryableFraction}, {"terminalFraction", b.TerminalFraction}, {"timeoutFraction", b.TimeoutFraction}}
	for _, x := range fractions {
		if math.IsNaN(x.f) || x.f < 0 || x.f > 1 {
			return b, fmt.Errorf("%s: want a fraction between 0 and 1, got %v", x.name, x.f)
		}
	}
	durations := []struct {
		name string
		d    Duration
	}{{"latency", b.Latency}, {"jitter", b.Jitter}, {"timeoutDelay", b.TimeoutDelay}}
	for _, x := range durations {
		if x.d < 0 || time.Duration(x.d) > maxDuration {
			return b, fmt.Errorf("%s: want between 0 and %v, got %v", x.name, maxDuration, time.Duration(x.d))
		}
	}
	codes := []struct{ name, c string }{{"retryableCode", b.RetryableCode}, {"terminalCode", b.TerminalCode}}
	for _, x := range codes {
		if !codePattern.MatchString(x.c) {
			return b, fmt.Errorf("%s: want 1 to 35 of A-Z, 0-9 and _, got %q", x.name, plaintext.Clip(x.c, 40))
		}
	}
	switch b.TimeoutMode {
	case TimeoutDelay, TimeoutClose, TimeoutMixed:
	default:
		return b, fmt.Errorf("timeoutMode: want %s, %s or %s, got %q", TimeoutDelay, TimeoutClose, TimeoutMixed, b.TimeoutMode)
	}
	return b, nil
}
