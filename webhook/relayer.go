package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/webhook/internal/dbsqlc"
)

// Config tunes a relayer. Zero fields take the defaults.
type Config struct {
	Pool *pgxpool.Pool
	// Policy is where deliveries may connect (Policy documents it).
	Policy Policy
	// Timeout bounds one delivery, from connecting to the answer's
	// status (default 10 s). A delivery cut off by it is retried.
	Timeout time.Duration
	// MaxAttempts: a delivery that fails this many times is a dead letter
	// (default DefaultMaxAttempts).
	MaxAttempts int
	// The delay before attempt n+1 is BackoffBase·2^(n−1), at most
	// BackoffMax, less up to a fifth of it at random (defaults
	// DefaultBackoffBase, DefaultBackoffMax); longer when the answer's
	// Retry-After asks for longer, up to BackoffMax.
	BackoffBase, BackoffMax time.Duration
	// PerEndpoint bounds the deliveries in flight to one endpoint (default
	// 32), each of a different subject: a slow endpoint holds that many
	// of the relayer's, no more, and a fast one gets as many subjects'
	// events at once, which is what lets one endpoint keep up with a
	// paced run's 4 events a payment.
	PerEndpoint int
	// MaxInFlight bounds the deliveries in flight in all (default 1024).
	// With PerEndpoint 32, thirty-two endpoints can hang before a fast one
	// waits.
	MaxInFlight int
	// Poll is how often the relayer looks for due deliveries when none
	// is settling (default 250 ms).
	Poll time.Duration
	// ShutdownTimeout bounds how long Run waits, once its context ends,
	// for the deliveries under way (default Timeout + 5 s).
	ShutdownTimeout time.Duration
	Metrics         *Metrics
	Logger          *slog.Logger
	// Client overrides the HTTP client (tests); it must not follow
	// redirects. Nil: one made from Policy.
	Client *http.Client
}

func (c *Config) defaults() error {
	if c.Pool == nil {
		return errors.New("webhook: Config.Pool is required")
	}
	setDur := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	setDur(&c.Timeout, 10*time.Second)
	setDur(&c.BackoffBase, DefaultBackoffBase)
	setDur(&c.BackoffMax, DefaultBackoffMax)
	setDur(&c.Poll, 250*time.Millisecond)
	setDur(&c.ShutdownTimeout, c.Timeout+5*time.Second)
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.PerEndpoint <= 0 {
		c.PerEndpoint = DefaultPerEndpoint
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Client == nil {
		c.Client = c.Policy.client(c.Timeout, c.PerEndpoint)
	}
	return nil
}

// The relayer's defaults of PerEndpoint and MaxInFlight.
const (
	DefaultPerEndpoint = 32
	DefaultMaxInFlight = 1024
)

// The relayer's default retry schedule: 125 ms, 250 ms, 500 ms, 1 s,
// 2 s … 1,024 s. A refusal is most often brief (a receiver restarting,
// a load balancer shedding a burst), and every second a delivery waits
// its payment's later events wait too, so the first three retries take
// under a second together; the fifteen attempts still span about 34
// minutes before a delivery is dead, time for an outage to pass.
const (
	DefaultBackoffBase = 125 * time.Millisecond
	DefaultBackoffMax  = time.Hour
	DefaultMaxAttempts = 15
)

// client is an HTTP client for deliveries: no proxy from the
// environment, no redirects (a 3xx is a failed delivery), connections
// only to addresses the policy allows. Each endpoint keeps up to
// perEndpoint idle connections, one for each delivery it may have in
// flight: fewer, and deliveries beyond them would each dial anew.
func (p Policy) client(timeout time.Duration, perEndpoint int) *http.Client {
	d := &net.Dialer{Timeout: min(timeout, 5*time.Second), Control: func(network, address string, _ syscall.RawConn) error {
		return p.dialControl(network, address)
	}}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:           d.DialContext,
			TLSHandshakeTimeout:   min(timeout, 5*time.Second),
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   perEndpoint,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Relayer delivers the webhook outbox: it claims due deliveries, posts
// each to its endpoint signed, and records the outcome.
type Relayer struct {
	cfg Config
	db  beginner
	q   *dbsqlc.Queries
}

// beginner is the pool, or in tests a transaction (a savepoint then).
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// NewRelayer makes a relayer.
func NewRelayer(cfg Config) (*Relayer, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &Relayer{cfg: cfg, db: cfg.Pool, q: dbsqlc.New(cfg.Pool)}, nil
}

// outcome is what became of one claimed delivery.
type outcome struct {
	d      dbsqlc.ClaimDeliveriesRow
	status int // the HTTP status; 0: no answer
	// err is what the delivery records (failure); cause, the error
	// itself, only goes to the operator's log.
	err, cause string
	took       time.Duration
	// retryAfter is what the answer's Retry-After asked for (0: none).
	retryAfter time.Duration
}

// Run delivers until ctx ends, then waits for the deliveries under way
// (up to ShutdownTimeout) and records them. Several relayers, in one
// process or many, share the work: a claim is a row lock and a lease.
func (r *Relayer) Run(ctx context.Context) error {
	results := make(chan outcome, r.cfg.MaxInFlight)
	inFlight, claimNow := 0, true
	poll := time.NewTimer(0)
	defer poll.Stop()
	// Deliveries outlive ctx so that a shutdown lets them finish.
	sendCtx := context.WithoutCancel(ctx)
	for {
		if claimNow && ctx.Err() == nil && inFlight < r.cfg.MaxInFlight {
			claimNow = false
			ds, err := r.claim(ctx, r.cfg.MaxInFlight-inFlight)
			if err != nil && ctx.Err() == nil {
				r.cfg.Logger.Warn("webhook claim failed", "err", err)
			}
			for _, d := range ds {
				inFlight++
				go func() { results <- r.deliver(sendCtx, d) }()
			}
			poll.Reset(r.wait(ctx, len(ds) > 0))
		}
		select {
		case <-ctx.Done():
			r.drain(results, inFlight)
			return nil
		case o := <-results:
			batch := []outcome{o}
		gather:
			for len(batch) < 256 {
				select {
				case o := <-results:
					batch = append(batch, o)
				default:
					break gather
				}
			}
			inFlight -= len(batch)
			arg := r.settleParams(batch)
			if ctx.Err() == nil && inFlight < r.cfg.MaxInFlight {
				// A settled delivery may free its subject's next one:
				// claim again in the same round trip.
				ds, err := r.settleAndClaim(sendCtx, arg, r.cfg.MaxInFlight-inFlight)
				if err == nil {
					for _, d := range ds {
						inFlight++
						go func() { results <- r.deliver(sendCtx, d) }()
					}
					poll.Reset(r.wait(ctx, len(ds) > 0))
					continue
				}
				r.cfg.Logger.Warn("webhook settle and claim failed; recording the outcomes alone", "err", err)
			}
			r.record(sendCtx, arg, len(batch))
			claimNow = true
		case <-poll.C:
			claimNow = true
		}
	}
}

// wait is how long to sleep before the next claim: the poll, or less
// when a backoff or a lapsed claim falls due sooner. A claim that took
// nothing while a delivery was already due found it held back — its
// endpoint at its cap, or an earlier delivery of its subject still open
// — and what frees it wakes the relayer (an outcome) or the poll does:
// no claim in a loop.
func (r *Relayer) wait(ctx context.Context, claimed bool) time.Duration {
	if claimed {
		return r.cfg.Poll
	}
	next, err := r.q.NextDue(ctx)
	if err != nil {
		return r.cfg.Poll
	}
	d := time.Until(next)
	if d <= 0 {
		return r.cfg.Poll
	}
	return max(min(d, r.cfg.Poll), 10*time.Millisecond)
}

func (r *Relayer) drain(results chan outcome, inFlight int) {
	deadline := time.NewTimer(r.cfg.ShutdownTimeout)
	defer deadline.Stop()
	var batch []outcome
	for inFlight > 0 {
		select {
		case o := <-results:
			batch = append(batch, o)
			inFlight--
		case <-deadline.C:
			// Left SENDING: their leases lapse and they are sent again.
			r.cfg.Logger.Warn("webhook deliveries still under way at shutdown", "count", inFlight)
			inFlight = 0
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.settle(ctx, batch)
}

func (r *Relayer) claim(ctx context.Context, room int) ([]dbsqlc.ClaimDeliveriesRow, error) {
	var ds []dbsqlc.ClaimDeliveriesRow
	err := r.noJIT(ctx, func(q *dbsqlc.Queries) (err error) {
		ds, err = q.ClaimDeliveries(ctx, r.claimParams(room))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("webhook: claim: %w", err)
	}
	return ds, nil
}

// noJIT runs f in a transaction whose statements are not JIT-compiled.
// Behind a backlog the claim's estimated cost passes PostgreSQL's
// jit_above_cost, and compiling it, which a custom plan does on every
// execution, took 0.7 to 1 s of a loaded machine's CPU against 30 to
// 80 ms for running it: that alone held one endpoint to about 40 events a
// second.
func (r *Relayer) noJIT(ctx context.Context, f func(q *dbsqlc.Queries) error) error {
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL jit = off"); err != nil {
			return err
		}
		return f(r.q.WithTx(tx))
	})
}

func (r *Relayer) claimParams(room int) dbsqlc.ClaimDeliveriesParams {
	return dbsqlc.ClaimDeliveriesParams{
		// The lease outlasts a delivery and its recording, so a live
		// relayer's claim never lapses under it.
		LeaseSeconds: (2*r.cfg.Timeout + 30*time.Second).Seconds(),
		PerEndpoint:  int64(r.cfg.PerEndpoint), MaxClaim: int64(room)}
}

// maxCause bounds what the operator's log keeps of a delivery's
// error.
const maxCause = 512

// deliver posts one delivery. Headers: the signature, the event's id and
// type, the delivery's id and attempt.
func (r *Relayer) deliver(ctx context.Context, d dbsqlc.ClaimDeliveriesRow) (o outcome) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	start := time.Now()
	o.d = d
	defer func() { o.took = time.Since(start) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Url, bytes.NewReader(d.Payload))
	if err != nil {
		o.err, o.cause = "the endpoint's URL is not valid", clipError(err.Error())
		return o
	}
	secrets := []string{d.Secret}
	if d.PreviousSecret != "" {
		secrets = append(secrets, d.PreviousSecret)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "paydispatch-webhooks/1")
	h.Set(SignatureHeader, Sign(d.Payload, start, secrets...))
	h.Set("Paydispatch-Event-Id", d.EventID.String())
	h.Set("Paydispatch-Event-Type", d.EventType)
	h.Set("Paydispatch-Delivery-Id", strconv.FormatInt(d.DeliveryID, 10))
	h.Set("Paydispatch-Delivery-Attempt", strconv.Itoa(int(d.Attempts)))
	res, err := r.cfg.Client.Do(req)
	if err != nil {
		o.err, o.cause = failure(err), clipError(err.Error())
		return o
	}
	defer res.Body.Close()
	o.status = res.StatusCode
	if res.StatusCode < 200 || res.StatusCode > 299 {
		// The status, not the body: an answer is the endpoint's, and the
		// URL is the tenant's choice of any public server.
		o.err = strings.TrimSpace(fmt.Sprintf("HTTP %d %s", res.StatusCode, http.StatusText(res.StatusCode)))
		o.cause = o.err
		o.retryAfter = retryAfter(res.Header.Get("Retry-After"), time.Now())
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // lets the connection be reused
	return o
}

// failure is what a delivery that got no answer records, which its
// tenant reads (lastError): the kind of failure, never the address the
// endpoint's name resolved to, nor whether a name resolved to a private
// one rather than to none, so that a tenant cannot map the network
// paydispatch runs in by the names it tries.
func failure(err error) string {
	var (
		dns      *net.DNSError
		hostname x509.HostnameError
		record   tls.RecordHeaderError
		verify   *tls.CertificateVerificationError
		alert    tls.AlertError
		timeout  interface{ Timeout() bool }
	)
	switch {
	case errors.Is(err, errPrivateAddress), errors.As(err, &dns):
		return "connect: the host name does not resolve to a public address"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &timeout) && timeout.Timeout():
		return "timeout: no answer in time"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connect: connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "connect: no route to the endpoint"
	case errors.As(err, &hostname):
		return "TLS: the endpoint's certificate is not for its host name"
	case errors.As(err, &verify):
		return "TLS: the endpoint's certificate is not trusted"
	case errors.As(err, &record), errors.Is(err, http.ErrSchemeMismatch):
		return "TLS: the endpoint does not speak TLS"
	case errors.As(err, &alert):
		return "TLS: the endpoint refused the handshake"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the endpoint closed the connection without an answer"
	}
	return "the delivery failed without an answer"
}

func clipError(s string) string {
	if len(s) > maxCause {
		return s[:maxCause]
	}
	return s
}

// settle records a batch of outcomes in one statement.
func (r *Relayer) settle(ctx context.Context, batch []outcome) {
	if len(batch) == 0 {
		return
	}
	r.record(ctx, r.settleParams(batch), len(batch))
}

// settleParams is what a batch of outcomes records: each delivery's new
// state and delay. It counts them in the metrics and logs the dead.
func (r *Relayer) settleParams(batch []outcome) dbsqlc.SettleDeliveriesParams {
	arg := dbsqlc.SettleDeliveriesParams{}
	for _, o := range batch {
		state, delay := StateDelivered, 0.0
		switch {
		case o.status >= 200 && o.status <= 299:
		case int(o.d.Attempts) >= r.cfg.MaxAttempts:
			state = StateDead
		default:
			state, delay = StatePending, r.cfg.delay(int(o.d.Attempts), o.retryAfter, rand.Float64()).Seconds()
		}
		r.cfg.Metrics.observe(state, o.took)
		if state == StateDead {
			r.cfg.Logger.Warn("webhook delivery dead-lettered", "delivery", o.d.DeliveryID, "endpoint", o.d.EndpointID,
				"event_type", o.d.EventType, "attempts", o.d.Attempts, "last_error", o.err, "cause", o.cause)
		}
		arg.DeliveryIds = append(arg.DeliveryIds, o.d.DeliveryID)
		arg.Attempts = append(arg.Attempts, o.d.Attempts)
		arg.States = append(arg.States, state)
		arg.DelaySeconds = append(arg.DelaySeconds, delay)
		arg.HttpStatuses = append(arg.HttpStatuses, int32(o.status))
		arg.Errors = append(arg.Errors, o.err)
	}
	return arg
}

// record writes settled outcomes, retrying twice.
func (r *Relayer) record(ctx context.Context, arg dbsqlc.SettleDeliveriesParams, n int) {
	// A batch that cannot be recorded stays SENDING: the leases lapse
	// and the deliveries go again (at least once).
	for try := 0; ; try++ {
		err := r.noJIT(ctx, func(q *dbsqlc.Queries) error {
			return q.SettleDeliveries(ctx, arg)
		})
		if err == nil {
			return
		}
		if try == 2 || ctx.Err() != nil {
			r.cfg.Logger.Error("webhook outcomes not recorded; they will be sent again", "count", n, "err", err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settleAndClaim records outcomes and claims again in one transaction,
// its statements sent together: three round trips for the relayer's
// cycle (begin, the batch, commit) instead of one for each statement of
// two transactions, eight, and on a loaded machine every round trip
// waits for the CPU. The claim sees what
// the settle freed (a subject's next delivery).
func (r *Relayer) settleAndClaim(ctx context.Context, arg dbsqlc.SettleDeliveriesParams, room int) ([]dbsqlc.ClaimDeliveriesRow, error) {
	var ds []dbsqlc.ClaimDeliveriesRow
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue("SET LOCAL jit = off")
		// Queue's arguments are variadic: a statement's argument slice
		// passed whole would be one argument.
		sql, args := dbsqlc.SettleDeliveriesBatch(arg)
		b.Queue(sql, args...)
		sql, args = dbsqlc.ClaimDeliveriesBatch(r.claimParams(room))
		b.Queue(sql, args...)
		br := tx.SendBatch(ctx, b)
		_, err := br.Exec()
		if err == nil {
			_, err = br.Exec()
		}
		if err == nil {
			var rows pgx.Rows
			if rows, err = br.Query(); err == nil {
				ds, err = dbsqlc.ScanClaimDeliveries(rows)
			}
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("webhook: settle and claim: %w", err)
	}
	return ds, nil
}

// delay is how long a delivery waits after its attempt-th failure: the
// schedule's delay less jitter (in [0, 1)) times a fifth of it, so that
// deliveries refused together do not come back together; or, when the
// endpoint's Retry-After asked for longer, that, up to BackoffMax.
func (c *Config) delay(attempt int, retryAfter time.Duration, jitter float64) time.Duration {
	d := c.BackoffBase
	for i := 1; i < attempt && d < c.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.BackoffMax)
	d -= time.Duration(jitter * float64(d) / 5)
	return min(max(d, retryAfter), c.BackoffMax)
}

// retryAfter is how long a Retry-After header asks to wait, as seconds
// or an HTTP date; 0 when there is none or it cannot be read.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseInt(h, 10, 64); err == nil {
		// Bounded so that the product cannot overflow; BackoffMax bounds
		// the wait anyway.
		return time.Duration(min(max(s, 0), 1<<30)) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
