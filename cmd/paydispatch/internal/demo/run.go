package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// Options say what the demo runs and against which stack.
type Options struct {
	Payments int           // how many (default 10,000)
	At       time.Duration // the instant: this long after the start (default 30 s)
	Rate     int           // executions a second the pacing allows (default 40)
	Seed     uint64        // the payment mix and the rail's refusals
	ExecMode string        // payments' exec_mode for the run (empty: as configured)
	MaxWait  time.Duration // give up this long after the instant (default 30 min)

	API        string // the stack's API base URL
	AdminToken string
	Pool       *pgxpool.Pool
	RailURL    string // the rail simulator (its GET /ledger)
	ReportPath string // where the HTML report goes

	Out  io.Writer
	Live bool // redraw a live table (a terminal); else a line every few seconds

	// Disrupt, when set, runs from the moment the payments are taken in
	// until every one has settled, when its context is cancelled; it
	// returns only once the stack is whole again. The fault-injection
	// suite's faults.
	Disrupt func(ctx context.Context, instant time.Time)
	// MoreChecks adds the caller's checks to the verification.
	MoreChecks func(ctx context.Context) []Check

	// CancelShare cancels one ordinary payment in fifty before the
	// instant, with its tenant's token.
	CancelShare bool
	// Webhooks registers an endpoint per tenant on a loopback receiver
	// (the stack must allow http and private addresses) and checks that
	// each payment's events arrive complete, in order and signed.
	Webhooks bool
	// Kafka, when set, sends a share of the payments through the stack's
	// Kafka intake and checks its event stream.
	Kafka *KafkaOptions
	// Rails sets up two rails on the rail simulator (RailURL) over the
	// API, each paced by a rate-limit config of its own (Rate split five
	// to three) and closed by a cut-off inside its drain, a calendar,
	// routing rules splitting the payments between them and the tenants'
	// cut-off rules; files go one after another, each projected at intake.
	// The live table, the checks and the report follow each rail. Off:
	// every payment on DEFAULT, paced at Rate.
	Rails bool
	// Controls shows the controls before money leaves (with Rails): a
	// payment over acme's approval rule waits for a second principal and
	// executes at the instant; cobalt's file sent again is refused, and a
	// line of it sent again under a new id is held as a duplicate.
	Controls bool
}

// Result is the verification's outcome.
type Result struct {
	Checks []Check
	Report string // the report's path
}

// Passed reports whether every check passed.
func (r Result) Passed() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Check is one verified property.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

// Run sets up, submits, follows the drain, verifies and reports.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Payments <= 0 {
		o.Payments = 10_000
	}
	if o.At <= 0 {
		o.At = 30 * time.Second
	}
	if o.Rate <= 0 {
		o.Rate = 40
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 30 * time.Minute
	}
	hc := &http.Client{Timeout: 5 * time.Minute}
	admin, err := newAPI(o.API, o.AdminToken, hc)
	if err != nil {
		return Result{}, err
	}
	started := time.Now()
	instant := started.Add(o.At).Truncate(time.Second)
	payments := plan(o.Payments, instant, o.Seed)
	fmt.Fprintf(o.Out, "setting up: 3 tenants, 6 accounts (one in USD, one with a daily limit, one short of money), FX rates, pacing %d/s\n", o.Rate)
	if err := setUp(ctx, admin); err != nil {
		return Result{}, err
	}
	var rails *railSetup
	if o.Rails {
		if rails, err = planRails(o.Rate, instant, payments); err != nil {
			return Result{}, err
		}
		if err := setUpRails(ctx, admin, o.RailURL, rails); err != nil {
			return Result{}, err
		}
		for _, r := range rails.Rails {
			fmt.Fprintf(o.Out, "rail %s on the simulator: %d payments planned at %d/s, cut-off %s (%s in its zone %s, %.0f s after the instant)\n",
				r.Name, r.Payments, r.Rate, clock(r.Cutoff), clockIn(r.Cutoff, rails.Zone), rails.Zone, r.Cutoff.Sub(instant).Seconds())
		}
		fmt.Fprintf(o.Out, "routing: single calls and cobalt to %s, the rest to %s; calendar %s closes %s; past a cut-off acme ROLLs, bravo's are REJECTED, cobalt's HELD\n",
			railUrgent, railBulk, demoCalendar, rails.Closed)
	}
	controls := o.Controls && o.Rails
	if controls {
		if err := setUpControls(ctx, admin); err != nil {
			return Result{}, err
		}
		fmt.Fprintf(o.Out, "controls: acme's payments of %s or more sent alone need an approval by another principal (rule %s); cobalt HOLDs a suspected duplicate\n",
			treasuryMin, treasuryRule)
	}
	// With the controls, a tenant's token may also approve (never its own
	// payments), and acme has an approver.
	scopes := []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead, auth.WebhooksWrite}
	if controls {
		scopes = append(scopes, auth.PaymentsApprove)
	}
	tokens := map[string]*client.Client{}
	newToken := func(name, tenant string, scopes []auth.Scope) (*client.Client, error) {
		secret, _, err := auth.NewStore(o.Pool).Create(ctx, auth.NewToken{Name: name, TenantID: tenant, Scopes: scopes})
		if err != nil {
			return nil, fmt.Errorf("token %s: %w", name, err)
		}
		return newAPI(o.API, secret, hc)
	}
	for _, t := range tenants {
		if tokens[t.id], err = newToken("demo "+t.id, t.id, scopes); err != nil {
			return Result{}, err
		}
	}
	windows := o.Payments/o.Rate + 1
	if _, err := pacing.New(pacing.Config{Pool: o.Pool}).PutConfig(ctx, pacing.Limit{Name: "demo", MaxPerWindow: o.Rate, Window: time.Second,
		Headroom: windows + pacing.DefaultHeadroom}); err != nil {
		return Result{}, fmt.Errorf("pacing config: %w", err)
	}
	settings := map[string]string{"pacing_config": "demo"}
	if o.ExecMode != "" {
		settings["exec_mode"] = o.ExecMode
	}
	qc, err := queue.New(o.Pool).UpdateConfig(ctx, payment.ItemType, settings)
	if err != nil {
		return Result{}, fmt.Errorf("pace payments: %w", err)
	}
	fmt.Fprintf(o.Out, "payments execute in %s mode\n", qc.ExecMode)

	var hk *hooks
	if o.Webhooks {
		if hk, err = startHooks(); err != nil {
			return Result{}, err
		}
		defer hk.stop()
		if err := hk.register(ctx, tokens); err != nil {
			return Result{}, err
		}
		fmt.Fprintf(o.Out, "webhooks: an endpoint per tenant on %s, every delivery's signature checked\n", hk.url)
	}

	var events *eventReader
	if o.Kafka != nil {
		if events, err = o.Kafka.readEvents(ctx); err != nil {
			return Result{}, err
		}
		defer events.stop()
	}

	var cr *controlsRun
	if controls {
		approver, err := newToken("demo acme approver", "acme", []auth.Scope{auth.PaymentsApprove, auth.PaymentsRead})
		if err != nil {
			return Result{}, err
		}
		if cr, err = approveBeforeTheInstant(ctx, o.Pool, tokens["acme"], approver, instant); err != nil {
			return Result{}, err
		}
		fmt.Fprintf(o.Out, "four eyes: acme's %s (%s EUR, alone) waited AWAITING_APPROVAL (%s); its submitter's approval refused (%s); approved by acme's approver %.1f s before the instant\n",
			treasuryID, treasuryAmount, cr.waited, orNone(cr.ownRefusal), instant.Sub(cr.approvedAt).Seconds())
	}
	fmt.Fprintf(o.Out, "submitting %d payments due at %s (in %.0f s): a JSON-lines file per tenant and %d single calls\n",
		len(payments), instant.Format("15:04:05"), time.Until(instant).Seconds(), countSingle(payments))
	var sub submission
	if rails != nil {
		sub, err = submitInOrder(ctx, o.Pool, tokens, payments, o.Kafka, rails)
	} else {
		sub, err = submit(ctx, tokens, payments, o.Kafka)
	}
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(o.Out, "taken in: %d payments in %.1f s (%d lines refused at intake, as meant)\n", sub.takenIn, sub.took.Seconds(), sub.refused)
	if o.Kafka != nil {
		fmt.Fprintf(o.Out, "of them %d through Kafka (%s), each payment's events read from %s\n", sub.viaKafka, o.Kafka.Topic, o.Kafka.EventsTopic)
	}
	for _, f := range sub.projections {
		p := f.projected
		fmt.Fprintf(o.Out, "%s's file on %s, projected at intake: %d before the cut-off (slots %s to %s), %d rolled, %d held, %d rejected\n",
			f.tenant, f.rail, p.BeforeCutoff, optClock(p.FirstSlot), optClock(p.LastSlot), p.Rolled, p.Held, p.Rejected)
	}
	if cr != nil {
		sub.takenIn++ // the treasury payment
		files, _, _ := split(payments, o.Kafka)
		if err := sendAgain(ctx, o.Pool, tokens["cobalt"], files["cobalt"], sub.batches["cobalt"], cr); err != nil {
			return Result{}, err
		}
		sub.takenIn++ // the line sent again
		fmt.Fprintf(o.Out, "duplicates: cobalt's file sent again: %d (%s); its %s sent again alone as %s: the 202 says like %s, %s\n",
			cr.fileAgain, orNone(cr.fileSaid), cr.againOf, cr.againID, orNone(cr.againSaid), orNone(cr.againHow))
	}
	if o.CancelShare {
		if sub.cancelled, err = cancelShare(ctx, tokens, payments, sub.kafkaIDs); err != nil {
			return Result{}, err
		}
		fmt.Fprintf(o.Out, "cancelled %d payments before the instant (one ordinary payment in fifty), each by its tenant\n", len(sub.cancelled))
	}

	tr := newTracker(o, instant, sub.takenIn, admin, rails)
	disruptCtx, stopDisrupting := context.WithCancel(ctx)
	disrupted := make(chan struct{})
	go func() {
		defer close(disrupted)
		if o.Disrupt != nil {
			o.Disrupt(disruptCtx, instant)
		}
	}()
	if len(sub.kafkaLate) > 0 {
		if err := o.Kafka.produceLate(ctx, sub.kafkaLate); err != nil {
			stopDisrupting()
			<-disrupted
			return Result{}, err
		}
	}
	err = tr.follow(ctx)
	stopDisrupting()
	<-disrupted
	if err != nil {
		return Result{}, err
	}
	data, err := collect(ctx, o, instant, payments, sub, tr, rails)
	if err != nil {
		return Result{}, err
	}
	if cr != nil {
		if data.controls, err = collectControls(ctx, o.Pool, cr); err != nil {
			return Result{}, err
		}
	}
	res := Result{Checks: verify(ctx, o, data)}
	if hk != nil {
		res.Checks = append(res.Checks, hookCheck(ctx, o, hk))
	}
	if events != nil {
		res.Checks = append(res.Checks, events.check(ctx, o.Pool))
	}
	if o.MoreChecks != nil {
		res.Checks = append(res.Checks, o.MoreChecks(ctx)...)
	}
	res.Report = o.ReportPath
	if err := writeReport(o.ReportPath, o, data, res); err != nil {
		return res, err
	}
	printSummary(o.Out, data, res)
	return res, nil
}

func countSingle(ps []planned) (n int) {
	for _, p := range ps {
		if p.single {
			n++
		}
	}
	return n
}

// submission is what intake took.
type submission struct {
	takenIn   int // payments stored or on their way (202)
	refused   int // lines a file had refused
	took      time.Duration
	cancelled map[string]bool // the payments cancelled before the instant
	viaKafka  int             // of takenIn, sent through Kafka
	kafkaIDs  map[string]bool // their ids
	kafkaLate []payment.Request
	// projections are each file's 202 projection by rail, beside where
	// Phase A put its payments (with rails).
	projections []fileProjection
	// batches are each tenant's file's batch id (with rails).
	batches map[string]string
}

// cancelShare cancels one ordinary payment of a file in fifty, each with
// its tenant's token, before the instant (none sent through Kafka: the
// intake may not have stored it yet).
func cancelShare(ctx context.Context, tokens map[string]*client.Client, ps []planned, viaKafka map[string]bool) (map[string]bool, error) {
	out := map[string]bool{}
	n := 0
	for _, p := range ps {
		if p.kind != kindOrdinary || p.single || viaKafka[p.req.PaymentID] {
			continue
		}
		if n++; n%50 != 0 {
			continue
		}
		if err := client.Check(tokens[p.req.TenantID].CancelPayment(ctx, client.CancelPaymentParams{ID: p.req.PaymentID})); err != nil {
			return out, fmt.Errorf("cancel %s: %w", p.req.PaymentID, err)
		}
		out[p.req.PaymentID] = true
	}
	return out, nil
}

// hookCheck waits up to a minute for every payment's events to arrive
// complete and in order, and reports.
func hookCheck(ctx context.Context, o Options, hk *hooks) Check {
	c := Check{Name: "webhooks: every payment's events delivered, complete, in order and signed"}
	deadline := time.Now().Add(time.Minute)
	for {
		n, why, err := hk.incomplete(ctx, o.Pool)
		switch {
		case err != nil:
			c.Detail = err.Error()
			return c
		case n == 0 || time.Now().After(deadline):
			c.OK = n == 0 && hk.badSigs.Load() == 0
			c.Detail = fmt.Sprintf("%d events to 3 endpoints, %d signatures refused, %d payments incomplete", hk.events(), hk.badSigs.Load(), n)
			if why != "" {
				c.Detail += ", first: " + why
			}
			return c
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// split is the plan by way in: each tenant's file, the single calls,
// and with Kafka a share of the ordinary file payments.
func split(ps []planned, k *KafkaOptions) (files map[string][]payment.Request, singles []planned, viaKafka []payment.Request) {
	files = map[string][]payment.Request{}
	ordinary := 0
	for _, p := range ps {
		switch {
		case p.single:
			singles = append(singles, p)
		case p.kind == kindOrdinary && k.viaKafka(ordinary):
			ordinary++
			viaKafka = append(viaKafka, p.req)
		default:
			if p.kind == kindOrdinary {
				ordinary++
			}
			files[p.req.TenantID] = append(files[p.req.TenantID], p.req)
		}
	}
	return files, singles, viaKafka
}

// submit sends each tenant's file and the single calls at once, and with
// Kafka a share of the ordinary file payments to its topic.
func submit(ctx context.Context, tokens map[string]*client.Client, ps []planned, k *KafkaOptions) (submission, error) {
	start := time.Now()
	files, singles, viaKafka := split(ps, k)
	var (
		mu  sync.Mutex
		out submission
	)
	g, gctx := errgroup.WithContext(ctx)
	if len(viaKafka) > 0 {
		g.Go(func() error {
			if !k.Late {
				if err := k.produce(gctx, viaKafka); err != nil {
					return err
				}
			}
			mu.Lock()
			if k.Late {
				out.kafkaLate = viaKafka
			}
			out.takenIn += len(viaKafka)
			out.viaKafka = len(viaKafka)
			out.kafkaIDs = make(map[string]bool, len(viaKafka))
			for _, r := range viaKafka {
				out.kafkaIDs[r.PaymentID] = true
			}
			mu.Unlock()
			return nil
		})
	}
	names := make([]string, 0, len(files))
	for t := range files {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		g.Go(func() error {
			res, err := postFile(gctx, tokens[t], t, files[t])
			if err != nil {
				return err
			}
			mu.Lock()
			out.takenIn += res.Payments
			out.refused += res.Rejected
			mu.Unlock()
			return nil
		})
	}
	g.Go(func() error {
		n, err := sendSingles(gctx, tokens, singles)
		mu.Lock()
		out.takenIn += n
		mu.Unlock()
		return err
	})
	err := g.Wait()
	out.took = time.Since(start)
	return out, err
}

// postFile sends a tenant's file.
func postFile(ctx context.Context, c *client.Client, tenant string, reqs []payment.Request) (client.BatchAccepted, error) {
	body, err := jsonLines(reqs)
	if err != nil {
		return client.BatchAccepted{}, err
	}
	res, err := client.Result[*client.BatchAcceptedHeaders](c.CreatePaymentBatch(ctx,
		&client.CreatePaymentBatchReqApplicationXNdjson{Data: bytes.NewReader(body)}, client.CreatePaymentBatchParams{}))
	if err != nil {
		return client.BatchAccepted{}, fmt.Errorf("%s's file: %w", tenant, err)
	}
	return res.Response, nil
}

// sendSingles sends the single calls, eight at a time, and counts those
// taken in.
func sendSingles(ctx context.Context, tokens map[string]*client.Client, singles []planned) (int, error) {
	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex
	n := 0
	next := make(chan planned)
	for range 8 {
		g.Go(func() error {
			for p := range next {
				req := paymentRequest(p.req)
				if err := client.Check(tokens[p.req.TenantID].CreatePayment(gctx, &req, client.CreatePaymentParams{})); err != nil {
					return fmt.Errorf("payment %s: %w", p.req.PaymentID, err)
				}
				mu.Lock()
				n++
				mu.Unlock()
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(next)
		for _, p := range singles {
			select {
			case next <- p:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	err := g.Wait()
	return n, err
}

// submitInOrder sends the payments one way in after the other, each once
// Phase A has placed the one before, so that each file's projection sees
// the slots taken before it: what goes through Kafka, then the tenants'
// files (fileOrder), then the single calls. Where Phase A put each file's
// payments is read at once, before anything is cancelled.
func submitInOrder(ctx context.Context, pool *pgxpool.Pool, tokens map[string]*client.Client, ps []planned, k *KafkaOptions, rs *railSetup) (submission, error) {
	start := time.Now()
	files, singles, viaKafka := split(ps, k)
	var out submission
	if len(viaKafka) > 0 {
		out.kafkaIDs = make(map[string]bool, len(viaKafka))
		ids := make([]string, len(viaKafka))
		for i, r := range viaKafka {
			out.kafkaIDs[r.PaymentID], ids[i] = true, r.PaymentID
		}
		out.takenIn, out.viaKafka = len(viaKafka), len(viaKafka)
		if k.Late {
			out.kafkaLate = viaKafka
		} else {
			if err := k.produce(ctx, viaKafka); err != nil {
				return out, err
			}
			if err := waitPlaced(ctx, pool, "", ids, len(ids)); err != nil {
				return out, fmt.Errorf("the payments sent through Kafka: %w", err)
			}
		}
	}
	for _, t := range fileOrder {
		reqs := files[t]
		if len(reqs) == 0 {
			continue
		}
		res, err := postFile(ctx, tokens[t], t, reqs)
		if err != nil {
			return out, err
		}
		out.takenIn += res.Payments
		out.refused += res.Rejected
		if out.batches == nil {
			out.batches = map[string]string{}
		}
		out.batches[t] = res.BatchId
		ids := make([]string, len(reqs))
		for i, r := range reqs {
			ids[i] = r.PaymentID
		}
		if err := waitPlaced(ctx, pool, t, ids, res.Payments); err != nil {
			return out, fmt.Errorf("%s's file: %w", t, err)
		}
		placed, err := placements(ctx, pool, rs.Day, t, ids)
		if err != nil {
			return out, err
		}
		seen := map[string]bool{}
		for _, p := range res.Projection {
			seen[p.Rail] = true
			out.projections = append(out.projections, fileProjection{tenant: t, rail: p.Rail, projected: p, placed: placed[p.Rail]})
		}
		for name, pl := range placed {
			if !seen[name] && name != "" {
				out.projections = append(out.projections, fileProjection{tenant: t, rail: name, projected: client.RailProjection{Rail: name}, placed: pl})
			}
		}
	}
	n, err := sendSingles(ctx, tokens, singles)
	out.takenIn += n
	out.took = time.Since(start)
	return out, err
}
