package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/railsim"
)

// outcome is what the run produced, for the checks, the summary and the
// report.
type outcome struct {
	instant   time.Time
	sub       submission
	planned   map[kind]int
	final     sample
	samples   []sample
	stored    int
	perSecond []float64 // executions in each second from the instant
	latencies []float64 // intake → DELIVERED, seconds
	tenants   []tenantShare
	reasons   []reason
	byCode    map[string]int // FAILED payments by their code
	rail      railsim.LedgerView
	railErr   error
	// Checks' own figures.
	violations     []string
	verifyErr      error
	openItems      int
	overLimit      int     // pacing windows with more slots than the limit
	early          int     // executions before their slot
	secondsOver    int     // full seconds with more executions than the limit
	mostOver       int     // by how many at most
	lagP50, lagP99 float64 // execution after its slot, ms
	unplanned      int     // FAILED or REJECTED payments not meant to fail
	// capped: the executions of the accounts that fit only some of
	// their payments, by account (and UTC day of execution for the
	// daily limit: a drain that crosses midnight starts a new day).
	capped                              []cappedGroup
	outboxDead, deadNoReason, queueDead int
	// noFXRan counts the payments meant to find FX unavailable that ran
	// (not past a cut-off); cutoffRejected the payments REJECTED at a
	// cut-off (CUTOFF_MISSED), not refused for what they are;
	// cutoffReturned the payments RETURNED because their instruction met
	// the rail's cut-off before it was sent (the relay sends nothing
	// late), not refused by the rail.
	noFXRan, cutoffRejected, cutoffReturned int
	// highFirst: how the HIGH payments went, by rail.
	highFirst []highOutcome
	// With rails: the set-up, each rail's outcome, and each file's
	// projection beside what Phase A did.
	rails       *railSetup
	railsOut    []railOutcome
	projections []fileProjection
	// controls: how the controls' payments ended (Options.Controls).
	controls *controlsOutcome
}

type tenantShare struct {
	tenant    string
	executed  int
	delivered int
}

type reason struct {
	status, code string
	n            int
}

// codeOf finds a status reason's code: a saga's (INSUFFICIENT_FUNDS) or
// an ISO 20022 reason (AC04).
var codeOf = regexp.MustCompile(`\b(?:[A-Z]+_[A-Z_]+|[A-Z]{2}[0-9]{2})\b`)

func collect(ctx context.Context, o Options, instant time.Time, ps []planned, sub submission, tr *tracker, rails *railSetup) (*outcome, error) {
	out := &outcome{instant: instant, sub: sub, planned: map[kind]int{}, samples: tr.samples, final: tr.samples[len(tr.samples)-1],
		rails: rails, projections: sub.projections}
	meantToFail := map[string]bool{}
	var noFX []string
	for _, p := range ps {
		out.planned[p.kind]++
		switch p.kind {
		case kindNoFunds, kindLimit, kindNoFX, kindBad:
			meantToFail[p.req.PaymentID] = true
		}
		if p.kind == kindNoFX {
			noFX = append(noFX, p.req.PaymentID)
		}
	}
	pool := o.Pool
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&out.stored); err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT floor(extract(epoch FROM accepted_at - $1::timestamptz))::int, count(*)
		FROM payments WHERE accepted_at IS NOT NULL GROUP BY 1 ORDER BY 1`, instant)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var s, n int
		if err := rows.Scan(&s, &n); err != nil {
			rows.Close()
			return nil, err
		}
		for s >= 0 && len(out.perSecond) <= s {
			out.perSecond = append(out.perSecond, 0)
		}
		if s >= 0 {
			out.perSecond[s] = float64(n)
		}
	}
	rows.Close()
	for i, n := range out.perSecond {
		// The first and last seconds are partial.
		if i > 0 && i < len(out.perSecond)-1 && int(n) > o.Rate {
			out.secondsOver++
			out.mostOver = max(out.mostOver, int(n)-o.Rate)
		}
	}
	rows, err = pool.Query(ctx, `SELECT extract(epoch FROM updated_at - created_at)::float8 FROM payments WHERE status = 'DELIVERED'`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var f float64
		if err := rows.Scan(&f); err != nil {
			rows.Close()
			return nil, err
		}
		out.latencies = append(out.latencies, f)
	}
	rows.Close()
	rows, err = pool.Query(ctx, `SELECT tenant_id, count(*) FILTER (WHERE accepted_at IS NOT NULL), count(*) FILTER (WHERE status = 'DELIVERED')
		FROM payments GROUP BY 1 ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var t tenantShare
		if err := rows.Scan(&t.tenant, &t.executed, &t.delivered); err != nil {
			rows.Close()
			return nil, err
		}
		out.tenants = append(out.tenants, t)
	}
	rows.Close()
	rows, err = pool.Query(ctx, `SELECT external_id, status, coalesce(status_reason, '') FROM payments WHERE status IN ('FAILED', 'RETURNED', 'REJECTED')`)
	if err != nil {
		return nil, err
	}
	byReason := map[[2]string]int{}
	out.byCode = map[string]int{}
	for rows.Next() {
		var id, st, why string
		if err := rows.Scan(&id, &st, &why); err != nil {
			rows.Close()
			return nil, err
		}
		code := codeOf.FindString(why)
		if code == "" {
			code = why
			if len(code) > 60 {
				code = code[:60] + "…"
			}
		}
		byReason[[2]string{st, code}]++
		if st == "FAILED" {
			out.byCode[code]++
		}
		atCutoff := st == "REJECTED" && strings.HasPrefix(why, payment.CodeCutoffMissed)
		if atCutoff {
			out.cutoffRejected++
		}
		if st == "RETURNED" && strings.HasPrefix(why, payment.CodeCutoffMissed) {
			out.cutoffReturned++
		}
		if st != "RETURNED" && !meantToFail[id] && !atCutoff {
			out.unplanned++
		}
	}
	rows.Close()
	for k, n := range byReason {
		out.reasons = append(out.reasons, reason{status: k[0], code: k[1], n: n})
	}
	sort.Slice(out.reasons, func(i, j int) bool {
		if out.reasons[i].status != out.reasons[j].status {
			return out.reasons[i].status < out.reasons[j].status
		}
		return out.reasons[i].n > out.reasons[j].n
	})
	if err := pool.QueryRow(ctx, `SELECT coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY l), 0), coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY l), 0)
		FROM (SELECT extract(epoch FROM accepted_at - scheduled_execution_time) * 1000 AS l FROM payments WHERE accepted_at IS NOT NULL) x`).Scan(&out.lagP50, &out.lagP99); err != nil {
		return nil, err
	}
	if out.capped, err = cappedGroups(ctx, pool); err != nil {
		return nil, err
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE external_id = ANY($1) AND status IN ('FAILED', 'DELIVERED', 'RETURNED')`,
		noFX).Scan(&out.noFXRan); err != nil {
		return nil, err
	}
	out.rail, out.railErr = railLedger(ctx, o.RailURL, rails != nil)
	if rails != nil && out.railErr == nil {
		if out.railsOut, err = railOutcomes(ctx, pool, rails, out.rail); err != nil {
			return nil, err
		}
	}
	if out.highFirst, err = highOutcomes(ctx, pool, o.Rate, rails); err != nil {
		return nil, err
	}
	vs, err := payment.Verify(ctx, pool)
	out.verifyErr = err
	for _, v := range vs {
		out.violations = append(out.violations, v.String())
	}
	// Items rolled to a later business day wait READY for it; each of the
	// demo's configs has a window of a second.
	err = pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM exec_queue WHERE queue_status IN ('READY', 'CLAIMED', 'DISPATCHED')
			AND NOT (queue_status = 'READY' AND scheduled_exec_time > now() + interval '1 hour')),
		(SELECT count(*) FROM pacing_window w JOIN pacing_config c ON c.config_name = w.config_name
			WHERE (w.config_name = 'demo' AND w.slot_count > $1) OR (w.config_name LIKE 'demo-%' AND w.slot_count > c.max_per_window)),
		(SELECT count(*) FROM payments WHERE accepted_at < scheduled_execution_time),
		(SELECT count(*) FROM payment_outbox_dead_letters),
		(SELECT count(*) FROM payment_outbox_dead_letters WHERE error_code = ''),
		(SELECT count(*) FROM exec_queue WHERE queue_status = 'DEAD_LETTER')`, o.Rate).Scan(&out.openItems, &out.overLimit, &out.early,
		&out.outboxDead, &out.deadNoReason, &out.queueDead)
	return out, err
}

// railLedger reads the simulator's ledger: DEFAULT's counters, every
// rail's in Rails, and with instructions every key each rail holds.
func railLedger(ctx context.Context, base string, instructions bool) (railsim.LedgerView, error) {
	var v railsim.LedgerView
	u := strings.TrimRight(base, "/") + "/ledger"
	if instructions {
		u += "?instructions=true"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return v, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, fmt.Errorf("the rail's ledger: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("the rail's ledger: %s", resp.Status)
	}
	return v, json.NewDecoder(resp.Body).Decode(&v)
}

// verify turns the outcome into the demo's checks.
func verify(_ context.Context, o Options, d *outcome) []Check {
	f := d.final.payments
	var checks []Check
	add := func(name string, ok bool, format string, args ...any) {
		checks = append(checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	if d.rails == nil {
		add("every payment taken in is settled", d.final.settled() == d.sub.takenIn && d.stored == d.sub.takenIn,
			"%d taken in, %d stored, %d DELIVERED/RETURNED/FAILED/REJECTED/CANCELLED", d.sub.takenIn, d.stored, d.final.settled())
	} else {
		held, rolled := 0, 0
		for _, r := range d.final.rails {
			held, rolled = held+r.held, rolled+r.rolled
		}
		add("every payment taken in is settled", d.final.settled() == d.sub.takenIn && d.stored == d.sub.takenIn,
			"%d taken in, %d stored, %d DELIVERED/RETURNED/FAILED/REJECTED/CANCELLED, %d HELD at a cut-off, %d rolled to a later business day, %d stopped by a control",
			d.sub.takenIn, d.stored, d.final.terminal(), held, rolled, d.final.stopped)
	}
	if len(d.sub.cancelled) > 0 || f["CANCELLED"] > 0 {
		add("the payments cancelled before the instant ended CANCELLED, never debited", f["CANCELLED"] == len(d.sub.cancelled),
			"%d CANCELLED, %d cancelled (verify checks none was debited or sent)", f["CANCELLED"], len(d.sub.cancelled))
	}
	add("bad lines refused at intake, bad accounts rejected at Phase A", d.sub.refused == d.planned[kindInvalid] && f["REJECTED"]-d.cutoffRejected == d.planned[kindBad],
		"%d lines refused (%d planned), %d REJECTED (%d planned; %d more at a cut-off)", d.sub.refused, d.planned[kindInvalid], f["REJECTED"]-d.cutoffRejected,
		d.planned[kindBad], d.cutoffRejected)
	add("only the payments meant to fail failed", d.unplanned == 0, "%d FAILED or REJECTED that were not meant to", d.unplanned)
	add("the saga's failures are the planned ones, compensated", cappedOK(d.capped, d.byCode) && d.byCode["FX_UNAVAILABLE"] == d.noFXRan,
		"%s; FX_UNAVAILABLE %d (%d planned, %d of them ran)", cappedDetail(d.capped, d.byCode), d.byCode["FX_UNAVAILABLE"], d.planned[kindNoFX], d.noFXRan)
	if d.railErr != nil {
		add("the rail's ledger", false, "%v", d.railErr)
	} else {
		r := totalLedger(d.rail)
		add("every delivered payment reached the rail exactly once", r.Unique == int64(f["DELIVERED"]) && r.Duplicates == 0,
			"rail: %d instructions accepted, %d duplicates; %d payments DELIVERED", r.Unique, r.Duplicates, f["DELIVERED"])
		add("every refusal by the rail returned its payment", r.Refused == int64(f["RETURNED"]-d.cutoffReturned),
			"rail: %d refused; %d payments RETURNED (%d more at the rail's cut-off, never sent)", r.Refused, f["RETURNED"]-d.cutoffReturned, d.cutoffReturned)
		add("no sequence gap, no sequence number reused", r.Gaps == 0 && r.SequenceReused == 0,
			"%d gaps, %d reused", r.Gaps, r.SequenceReused)
	}
	switch {
	case d.verifyErr != nil:
		add("paydispatch verify", false, "%v", d.verifyErr)
	default:
		detail := "0 violations: balances conserve, every failed or returned payment's money restored"
		if len(d.violations) > 0 {
			detail = fmt.Sprintf("%d violations, first: %s", len(d.violations), d.violations[0])
		}
		add("paydispatch verify (the ledger check)", len(d.violations) == 0, "%s", detail)
	}
	add("the queue holds no READY, CLAIMED or DISPATCHED item", d.openItems == 0, "%d left", d.openItems)
	add("pacing: no window over its limit, nothing before its slot", d.overLimit == 0 && d.early == 0,
		"%d windows over %d, %d executions before their slot", d.overLimit, o.Rate, d.early)
	add("dead letters: only the rail's refusals, each with its reason", d.outboxDead == f["RETURNED"] && d.queueDead == 0 && d.deadNoReason == 0,
		"%d instructions dead-lettered (%d RETURNED), %d without a reason; %d queue items dead-lettered", d.outboxDead, f["RETURNED"], d.deadNoReason, d.queueDead)
	checks = append(checks, highCheck(d.highFirst))
	if d.controls != nil {
		checks = append(checks, controlChecks(d.instant, d.controls)...)
	}
	if d.rails != nil {
		checks = append(checks, railChecks(d)...)
	}
	return checks
}

// railChecks are the checks of the rails: nothing reached a rail at or
// after its cut-off; what missed a cut-off met its tenant's rule; each
// file's projection at intake was what Phase A did, within a few
// seconds.
func railChecks(d *outcome) []Check {
	var checks []Check
	add := func(name string, ok bool, detail string) {
		checks = append(checks, Check{Name: name, OK: ok, Detail: detail})
	}
	if d.railErr != nil || len(d.railsOut) != len(d.rails.Rails) {
		add("nothing reached a rail after its cut-off", false, fmt.Sprintf("the simulator's receipts could not be read: %v", d.railErr))
	} else {
		ok, parts := true, []string(nil)
		for _, r := range d.railsOut {
			ok = ok && r.afterCutoff == 0 && r.late == 0 && r.received > 0
			part := fmt.Sprintf("%s: %d instructions received", r.name, r.received)
			if !r.lastReceived.IsZero() {
				part += fmt.Sprintf(", the last at %s, %.1f s before its cut-off at %s", clock(r.lastReceived),
					r.cutoff.Sub(r.lastReceived).Seconds(), clock(r.cutoff))
			}
			part += fmt.Sprintf("; %d at or after it (the simulator refused %d as late)", r.afterCutoff, r.late)
			if r.firstAfter != "" {
				part += ", first: " + r.firstAfter
			}
			parts = append(parts, part)
		}
		add("nothing reached a rail after its cut-off", ok, strings.Join(parts, "; "))
	}
	past, wrong, first := 0, 0, ""
	var parts []string
	for _, r := range d.railsOut {
		past += r.rolled + r.held + r.rejected
		wrong += r.wrongRule + r.rolledElsewhere
		if first == "" {
			first = r.firstWrong
		}
		var tenants []string
		for t, n := range r.pastByTenant {
			tenants = append(tenants, fmt.Sprintf("%s %d (%s)", t, n, cutoffRules[t]))
		}
		sort.Strings(tenants)
		parts = append(parts, fmt.Sprintf("%s: %d rolled to %s, %d held, %d rejected — %s", r.name, r.rolled, d.rails.Next, r.held, r.rejected,
			strings.Join(tenants, ", ")))
	}
	detail := fmt.Sprintf("%d payments past a cut-off, %d against their tenant's rule (%s closed, so a roll goes to %s); %s",
		past, wrong, d.rails.Closed, d.rails.Next, strings.Join(parts, "; "))
	if first != "" {
		detail += "; first: " + first
	}
	add("payments past the cut-off met their tenant's rule", past > 0 && wrong == 0 && len(d.railsOut) > 0, detail)
	off, parts := "", nil
	for _, f := range d.projections {
		r, _ := d.rails.rail(f.rail)
		if o := f.off(r.Rate); o != "" && off == "" {
			off = o
		}
		parts = append(parts, fmt.Sprintf("%s on %s: %d+%d projected, %d+%d placed, last slot %s/%s", f.tenant, f.rail,
			f.projected.BeforeCutoff, f.projected.Rolled+f.projected.Held+f.projected.Rejected, f.placed.day, f.placed.past(),
			optClock(f.projected.LastSlot), ptrClock(f.placed.last)))
	}
	detail = fmt.Sprintf("each file's 202 against where Phase A put it (before + past the cut-off; within %s at the rail's rate): %s",
		projectionSlack, strings.Join(parts, "; "))
	if off != "" {
		detail += "; off: " + off
	}
	add("the projection at intake was right within a few seconds", off == "" && len(d.projections) > 0, detail)
	return checks
}

// ptrClock is an optional time's time of day ("-": none).
func ptrClock(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return clock(*t)
}

// cappedGroup is how the payments of an account that fits only some of
// them ended: fit of them succeed, the others fail with code, except
// that a payment returned (by the rail, or at its cut-off) frees its room
// (money and limits) for one that comes after it. n counts the payments
// that ran: one held, rolled or rejected at a cut-off never reached the
// account.
type cappedGroup struct {
	account, day, code                  string
	fit, n, delivered, returned, failed int
}

func cappedGroups(ctx context.Context, pool *pgxpool.Pool) ([]cappedGroup, error) {
	rows, err := pool.Query(ctx, `SELECT p.debtor_account,
			CASE WHEN p.debtor_account = $3 THEN ((i.data->>'executionTime')::timestamptz AT TIME ZONE 'UTC')::date::text ELSE '' END,
			count(*) FILTER (WHERE p.status IN ('DELIVERED', 'RETURNED', 'FAILED')),
			count(*) FILTER (WHERE p.status = 'DELIVERED'), count(*) FILTER (WHERE p.status = 'RETURNED'),
			count(*) FILTER (WHERE p.status = 'FAILED')
		FROM payments p JOIN process_instance i ON i.process_type = $1 AND i.business_key = p.payment_id
		WHERE p.debtor_account IN ($2, $3) GROUP BY 1, 2 ORDER BY 1, 2`, payment.SubmitPaymentType, accPoor, accLimited)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cappedGroup
	for rows.Next() {
		var g cappedGroup
		if err := rows.Scan(&g.account, &g.day, &g.n, &g.delivered, &g.returned, &g.failed); err != nil {
			return nil, err
		}
		g.fit, g.code = poorFit, "INSUFFICIENT_FUNDS"
		if g.account == accLimited {
			g.fit, g.code = limitFit, "LIMIT_EXCEEDED"
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// ok: no more held than fits, the first that fit succeeded, and no more
// succeeded than fit plus the room returns freed.
func (g cappedGroup) ok() bool {
	fit := min(g.fit, g.n)
	return g.delivered <= fit && g.failed <= g.n-fit && g.failed >= g.n-fit-g.returned
}

// cappedOK: every group as it should be, and the failures' codes are
// exactly theirs.
func cappedOK(gs []cappedGroup, byCode map[string]int) bool {
	want := map[string]int{}
	for _, g := range gs {
		if !g.ok() {
			return false
		}
		want[g.code] += g.failed
	}
	return len(gs) > 0 && byCode["INSUFFICIENT_FUNDS"] == want["INSUFFICIENT_FUNDS"] && byCode["LIMIT_EXCEEDED"] == want["LIMIT_EXCEEDED"]
}

func cappedDetail(gs []cappedGroup, byCode map[string]int) string {
	var parts []string
	for _, g := range gs {
		what := g.account
		if g.day != "" {
			what += " on " + g.day
		}
		parts = append(parts, fmt.Sprintf("%s: %d payments, room for %d: %d failed %s, %d delivered, %d returned", what, g.n, g.fit, g.failed, g.code, g.delivered, g.returned))
	}
	return fmt.Sprintf("INSUFFICIENT_FUNDS %d, LIMIT_EXCEEDED %d (%s)", byCode["INSUFFICIENT_FUNDS"], byCode["LIMIT_EXCEEDED"], strings.Join(parts, "; "))
}

// highOutcome is how a rail's HIGH payments went: how many began, the
// last one's start, how many of the others began before it, and how
// many missed the cut-off; allowed is how many of the others may begin
// first: those claimed before the HIGH ones came (the rail's rate over
// the pre-start buffer) and those due while the reorder waited for the
// file to be quiet (at most 3 s) and moved them.
type highOutcome struct {
	rail                        string
	high, past, before, allowed int
	last                        *time.Time
	// lateSecs: how long after their instant the last of them was stored
	// (Phase A held up by a fault): the others meanwhile began first.
	lateSecs int
}

func highOutcomes(ctx context.Context, pool *pgxpool.Pool, rate int, rails *railSetup) ([]highOutcome, error) {
	var bufferSecs int
	if err := pool.QueryRow(ctx, `SELECT pre_start_buffer_secs FROM exec_rate_config WHERE item_type = $1`, payment.ItemType).Scan(&bufferSecs); err != nil {
		return nil, fmt.Errorf("PAYMENT's pre-start buffer: %w", err)
	}
	var day *string // the business day, with rails: a payment rolled past it missed its cut-off
	if rails != nil {
		day = &rails.Day
	}
	rows, err := pool.Query(ctx, `WITH h AS (
			SELECT coalesce(rail, '') AS rail, count(*) FILTER (WHERE accepted_at IS NOT NULL) AS high,
				count(*) FILTER (WHERE status = 'HELD' OR (status = 'REJECTED' AND status_reason LIKE 'CUTOFF_MISSED%')
					OR (status = 'SCHEDULED' AND execution_date > $1::date)) AS past,
				max(accepted_at) AS last,
				greatest(ceil(extract(epoch FROM max(created_at) - min(requested_execution_time))), 0)::int AS late
			FROM payments WHERE priority = 'HIGH' GROUP BY 1)
		SELECT h.rail, h.high, h.past, h.last, h.late,
			(SELECT count(*) FROM payments p WHERE coalesce(p.rail, '') = h.rail AND p.priority <> 'HIGH' AND p.accepted_at < h.last)
		FROM h ORDER BY 1`, day)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []highOutcome
	for rows.Next() {
		var h highOutcome
		if err := rows.Scan(&h.rail, &h.high, &h.past, &h.last, &h.lateSecs, &h.before); err != nil {
			return nil, err
		}
		r := rate
		if rails != nil {
			if dr, ok := rails.rail(h.rail); ok {
				r = dr.Rate
			}
		}
		h.allowed = r * (bufferSecs + 4 + h.lateSecs)
		out = append(out, h)
	}
	return out, rows.Err()
}

// highCheck: the single calls, sent last and HIGH, went ahead of the
// files that waited: none missed a cut-off, and no more of the others
// began before the last of them than the claim and the reorder allow.
func highCheck(hs []highOutcome) Check {
	ok, parts := len(hs) > 0, []string(nil)
	for _, h := range hs {
		ok = ok && h.high > 0 && h.past == 0 && h.before <= h.allowed
		rail := h.rail
		if rail == "" {
			rail = "no rail"
		}
		came := "claimed before they came"
		if h.lateSecs > 0 {
			came = fmt.Sprintf("claimed before they came, the last stored %d s after the instant", h.lateSecs)
		}
		parts = append(parts, fmt.Sprintf("%s: %d HIGH began, the last at %s, after %d others (at most %d: %s); %d past the cut-off",
			rail, h.high, ptrClock(h.last), h.before, h.allowed, came, h.past))
	}
	return Check{Name: "HIGH payments sent last went first", OK: ok, Detail: strings.Join(parts, "; ")}
}
