package outbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
)

// Config configures a Relayer. Zero fields take their defaults; New
// validates the result once.
type Config struct {
	// Pool is the database (required). The relayer also opens one
	// connection of its own with the pool's settings, to LISTEN.
	Pool *pgxpool.Pool
	// Sender delivers messages to their rails (required).
	Sender Sender
	// Hooks react to final outcomes in their transaction (optional).
	Hooks Hooks
	// Metrics records the relayer's work; nil records nothing.
	Metrics *Metrics
	// Logger; nil logs nothing.
	Logger *slog.Logger
	// Tracer, when set, gives each rail call a span (outbox.send,
	// outbox.inquire), the child of the trace context the instruction was
	// enqueued with (Instruction.TraceParent), and hands the Sender a
	// context holding it; nil (tracing off): no spans, nothing spent.
	Tracer trace.Tracer
	// ID names the relayer in the archive and the logs (default
	// host-pid-random).
	ID string

	// DisableNotify turns off LISTEN/NOTIFY wake-ups; DisablePoll the
	// fallback poll. Each alone drives delivery; not both.
	DisableNotify, DisablePoll bool
	// Debounce: a notification after a quiet spell wakes the relayer at
	// once; more within Debounce are folded into one wake at its end
	// (default 25 ms; 1 ms to 1 s).
	Debounce time.Duration
	// PollInterval is the fallback poll (default 500 ms).
	PollInterval time.Duration

	// ClaimBatchSize caps the due throughput rows claimed per claim
	// (default 200; at most 10,000).
	ClaimBatchSize int
	// StrictClaimBatchSize caps the strict participants whose head is
	// claimed per claim (default 100).
	StrictClaimBatchSize int
	// LaneBatchSize caps the messages of one strict participant claimed
	// and sent together, its head and the run right behind it, when the
	// Sender is a BatchSender that batches their rail type (default 50;
	// 1: one at a time). Other rail types go one at a time.
	LaneBatchSize int
	// MaxInFlight caps the messages this relayer holds claimed and not
	// yet recorded (default 1,000): what a crash leaves to the reaper.
	MaxInFlight int
	// Concurrency caps rail calls at once (default 64); RailConcurrency
	// caps them per rail type too (absent: Concurrency).
	Concurrency     int
	RailConcurrency map[string]int
	// RailTimeout is the hard timeout of one Send or Inquire (default
	// 10 s, as serve's --rail-timeout; at most half of ReaperTimeout).
	RailTimeout time.Duration

	// MaxAttempts: a message still retryable at its MaxAttempts-th
	// attempt is dead-lettered (default 8). Unknown outcomes never are:
	// they are inquired about until the rail answers.
	MaxAttempts int
	// Backoff before attempt n+1: BackoffBase·2^(n−1), at most
	// BackoffMax, less a random part of up to BackoffJitter of it
	// (defaults 1 s, 5 min, 0.2; jitter below 0.5, so delays still grow).
	BackoffBase   time.Duration
	BackoffMax    time.Duration
	BackoffJitter float64

	// Outcomes are recorded in batches of up to RecordBatchSize (default
	// 500), gathered for at most RecordLinger (default 2 ms).
	RecordBatchSize int
	RecordLinger    time.Duration

	// The reaper runs every ReaperInterval (default 60 s), and sooner when
	// the oldest claim in flight reaches ReaperTimeout (default 120 s),
	// taking back at most ReaperBatchSize claims per statement (default
	// 500). DisableReaper: tests that simulate a dead fleet.
	ReaperInterval  time.Duration
	ReaperTimeout   time.Duration
	ReaperBatchSize int
	DisableReaper   bool

	// ShutdownTimeout bounds how long Run, once its context is done, waits
	// for rail calls under way and their records (default RailTimeout +
	// 5 s). Whatever is left is the reaper's.
	ShutdownTimeout time.Duration
}

const maxBatch = 10000

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(i *int, v int) {
		if *i == 0 {
			*i = v
		}
	}
	def(&c.Debounce, 25*time.Millisecond)
	def(&c.PollInterval, 500*time.Millisecond)
	defInt(&c.ClaimBatchSize, 200)
	defInt(&c.StrictClaimBatchSize, 100)
	defInt(&c.LaneBatchSize, 50)
	defInt(&c.MaxInFlight, 1000)
	defInt(&c.Concurrency, 64)
	def(&c.RailTimeout, 10*time.Second)
	defInt(&c.MaxAttempts, 8)
	def(&c.BackoffBase, time.Second)
	def(&c.BackoffMax, 5*time.Minute)
	if c.BackoffJitter == 0 {
		c.BackoffJitter = 0.2
	}
	defInt(&c.RecordBatchSize, 500)
	def(&c.RecordLinger, 2*time.Millisecond)
	def(&c.ReaperInterval, 60*time.Second)
	def(&c.ReaperTimeout, 120*time.Second)
	defInt(&c.ReaperBatchSize, 500)
	def(&c.ShutdownTimeout, c.RailTimeout+5*time.Second)
	if c.ID == "" {
		c.ID = defaultID()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Pool == nil {
		bad("Pool is required")
	}
	if c.Sender == nil {
		bad("Sender is required")
	}
	if c.DisableNotify && c.DisablePoll {
		bad("DisableNotify and DisablePoll together leave nothing to wake the relayer")
	}
	if c.Debounce < time.Millisecond || c.Debounce > time.Second {
		bad("Debounce %v: want 1ms to 1s", c.Debounce)
	}
	if c.PollInterval < time.Millisecond {
		bad("PollInterval %v: want at least 1ms", c.PollInterval)
	}
	for name, v := range map[string]int{
		"ClaimBatchSize": c.ClaimBatchSize, "StrictClaimBatchSize": c.StrictClaimBatchSize, "LaneBatchSize": c.LaneBatchSize,
		"RecordBatchSize": c.RecordBatchSize, "ReaperBatchSize": c.ReaperBatchSize,
	} {
		if v < 1 || v > maxBatch {
			bad("%s %d: want 1 to %d", name, v, maxBatch)
		}
	}
	if c.MaxInFlight < 1 {
		bad("MaxInFlight %d: want at least 1", c.MaxInFlight)
	}
	if c.Concurrency < 1 {
		bad("Concurrency %d: want at least 1", c.Concurrency)
	}
	for rail, n := range c.RailConcurrency {
		if n < 1 {
			bad("RailConcurrency[%q] %d: want at least 1", rail, n)
		}
	}
	if c.MaxAttempts < 1 {
		bad("MaxAttempts %d: want at least 1", c.MaxAttempts)
	}
	if c.BackoffBase <= 0 || c.BackoffMax < c.BackoffBase {
		bad("BackoffBase %v, BackoffMax %v: want 0 < base <= max", c.BackoffBase, c.BackoffMax)
	}
	if c.BackoffJitter < 0 || c.BackoffJitter >= 0.5 {
		bad("BackoffJitter %v: want 0 to below 0.5", c.BackoffJitter)
	}
	if c.RecordLinger < 0 {
		bad("RecordLinger %v: want >= 0", c.RecordLinger)
	}
	if c.ReaperInterval <= 0 || c.ReaperTimeout <= 0 {
		bad("ReaperInterval %v, ReaperTimeout %v: want > 0", c.ReaperInterval, c.ReaperTimeout)
	}
	// A send must be over well before the reaper may hand the message to
	// another relayer (see sendDeadline).
	if c.RailTimeout <= 0 || c.RailTimeout > c.ReaperTimeout/2 {
		bad("RailTimeout %v: want > 0 and at most half of ReaperTimeout %v", c.RailTimeout, c.ReaperTimeout)
	}
	if c.ShutdownTimeout < 0 {
		bad("ShutdownTimeout %v: want >= 0", c.ShutdownTimeout)
	}
	if len(errs) > 0 {
		return fmt.Errorf("outbox: relayer config: %w", errors.Join(errs...))
	}
	return nil
}

// sendDeadline is how long after its claim a message may still be sent.
// Past it the relayer puts the message back unsent: the send, which may
// last RailTimeout, must be over before the reaper (ReaperTimeout after the
// claim) can requeue it and another relayer inquire and send. A quarter of
// the timeout is kept as margin for the claim's own duration and the
// relayer's scheduling.
func (c Config) sendDeadline() time.Duration {
	return c.ReaperTimeout - c.RailTimeout - c.ReaperTimeout/4
}

func (c Config) railLimit(rail string) int {
	if n, ok := c.RailConcurrency[rail]; ok && n < c.Concurrency {
		return n
	}
	return c.Concurrency
}

func defaultID() string {
	host, _ := os.Hostname()
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
