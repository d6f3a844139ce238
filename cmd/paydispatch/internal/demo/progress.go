package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/client"
)

// sample is the state of things at one moment of the drain.
type sample struct {
	at       time.Duration // since the instant (negative before it)
	payments map[string]int
	queue    map[string]int
	dead     int
	executed int // payments whose execution began (accepted_at set)
	stopped  int // HELD by a control (not at a cut-off) or AWAITING_APPROVAL: an operator's
	// rails are each rail's figures (with rails).
	rails map[string]railSample
}

// railSample is one rail at one moment: what it was sent (the rail
// answered), what waits for the business day, what missed its cut-off
// (rolled to a later day, held, rejected), and from the API (GET
// /admin/console/stats) its cut-off and the projected finish.
type railSample struct {
	sent, waiting, rolled, held, rejected int
	cutoff, finish                        *time.Time
	margin                                *int64
}

func (s sample) terminal() int {
	return s.payments["DELIVERED"] + s.payments["RETURNED"] + s.payments["FAILED"] + s.payments["REJECTED"] + s.payments["CANCELLED"]
}

// settled counts the payments that will not move during the run: ended,
// held at a cut-off or by a control (for an operator), or rolled to a
// later business day.
func (s sample) settled() int {
	n := s.terminal() + s.stopped
	for _, r := range s.rails {
		n += r.held + r.rolled
	}
	return n
}

// tracker samples the database every second until every payment taken in
// has settled, and shows it.
type tracker struct {
	o        Options
	admin    *client.Client
	rails    *railSetup
	instant  time.Time
	expected int
	samples  []sample
	drawn    int // lines of the last live table, to redraw over
	lastLine time.Time
}

func newTracker(o Options, instant time.Time, expected int, admin *client.Client, rails *railSetup) *tracker {
	return &tracker{o: o, instant: instant, expected: expected, admin: admin, rails: rails}
}

// databaseOutage is how long follow waits for an unreachable database.
const databaseOutage = 2 * time.Minute

// queueSettle is how long follow waits, once every payment has settled,
// for the queue's last items to be settled too: a claim whose dispatcher
// died after starting its workflows waits for the stale-claim recovery
// (stale_claim_threshold_secs, 2 min by default, then 100 a cycle).
const queueSettle = 4 * time.Minute

func (t *tracker) follow(ctx context.Context) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	deadline := t.instant.Add(t.o.MaxWait)
	var failingSince, settled time.Time
	for {
		s, err := t.sample(ctx)
		switch {
		case err != nil && ctx.Err() == nil && (failingSince.IsZero() || time.Since(failingSince) < databaseOutage):
			// A restarting database (the fault suite restarts it) is
			// waited for; one gone for longer ends the run.
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
			continue
		case err != nil:
			return fmt.Errorf("follow the drain: %w", err)
		}
		failingSince = time.Time{}
		t.samples = append(t.samples, s)
		t.show(s)
		if s.settled() >= t.expected {
			// The queue settles a moment later: an item whose own
			// settlement was lost (its workflow ended before its dispatch
			// was recorded) is the reconcile's, on a later cycle.
			open := s.queue["READY"] + s.queue["CLAIMED"] + s.queue["DISPATCHED"]
			if settled.IsZero() {
				settled = time.Now()
			}
			if open == 0 || time.Since(settled) > queueSettle {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d payments settled %s after the instant: giving up (--max-wait)", s.settled(), t.expected, t.o.MaxWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func (t *tracker) sample(ctx context.Context) (sample, error) {
	s := sample{at: time.Since(t.instant)}
	var err error
	if s.payments, err = countBy(ctx, t.o.Pool, `SELECT status, count(*) FROM payments GROUP BY status`); err != nil {
		return s, err
	}
	// An item rolled to a later business day waits READY for it: not this
	// run's.
	if s.queue, err = countBy(ctx, t.o.Pool, `SELECT queue_status, count(*) FROM exec_queue
		WHERE NOT (queue_status = 'READY' AND scheduled_exec_time > now() + interval '1 hour') GROUP BY queue_status`); err != nil {
		return s, err
	}
	if t.rails != nil {
		if s.rails, err = t.sampleRails(ctx); err != nil {
			return s, err
		}
	}
	// Dead letters: the outbox's (instructions the rail never took) and
	// the queue's (items whose dispatch kept failing).
	err = t.o.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payment_outbox_dead_letters) + (SELECT count(*) FROM exec_queue WHERE queue_status = 'DEAD_LETTER'),
		(SELECT count(*) FROM payments WHERE accepted_at IS NOT NULL),
		(SELECT count(*) FROM payments WHERE status = 'AWAITING_APPROVAL' OR (status = 'HELD' AND status_reason NOT LIKE 'CUTOFF%'))`).Scan(
		&s.dead, &s.executed, &s.stopped)
	return s, err
}

// sampleRails reads each rail's payments from the database, and its
// cut-off and projected finish from the API, as the console shows them
// (none when the API does not answer).
func (t *tracker) sampleRails(ctx context.Context) (map[string]railSample, error) {
	rows, err := t.o.Pool.Query(ctx, `SELECT rail,
			count(*) FILTER (WHERE status IN ('DELIVERED', 'RETURNED')),
			count(*) FILTER (WHERE status = 'SCHEDULED' AND execution_date = $1::date),
			count(*) FILTER (WHERE status = 'SCHEDULED' AND execution_date > $1::date),
			count(*) FILTER (WHERE status = 'HELD' AND status_reason LIKE 'CUTOFF%'),
			count(*) FILTER (WHERE status = 'REJECTED' AND status_reason LIKE 'CUTOFF_MISSED%')
		FROM payments WHERE rail IS NOT NULL GROUP BY rail`, t.rails.Day)
	if err != nil {
		return nil, fmt.Errorf("progress: %w", err)
	}
	out := map[string]railSample{}
	for rows.Next() {
		var name string
		var r railSample
		if err := rows.Scan(&name, &r.sent, &r.waiting, &r.rolled, &r.held, &r.rejected); err != nil {
			rows.Close()
			return nil, fmt.Errorf("progress: %w", err)
		}
		out[name] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("progress: %w", err)
	}
	if st, err := client.Result[*client.ConsoleStats](t.admin.GetConsoleStats(ctx)); err == nil {
		for _, f := range st.Rails {
			r, ok := out[f.Name]
			if !ok {
				continue
			}
			if f.Cutoff.Set {
				r.cutoff = &f.Cutoff.Value
			}
			if f.ProjectedFinish.Set {
				r.finish = &f.ProjectedFinish.Value
			}
			if f.MarginSeconds.Set {
				m := int64(f.MarginSeconds.Value)
				r.margin = &m
			}
			out[f.Name] = r
		}
	}
	return out, nil
}

// railLines are the live table's lines of the rails.
func (t *tracker) railLines(s sample) []string {
	if t.rails == nil {
		return nil
	}
	lines := []string{fmt.Sprintf("%-8s %7s %8s %7s %6s %9s  %-9s %-17s %s", "rail", "sent", "waiting", "rolled", "held", "rejected", "cut-off", "projected finish", "margin")}
	for _, r := range t.rails.Rails {
		x := s.rails[r.Name]
		finish, margin := "-", "-"
		if x.finish != nil {
			finish = clock(*x.finish)
		}
		if x.margin != nil {
			margin = fmt.Sprintf("%+d s", *x.margin)
			if *x.margin < 0 {
				margin += " PAST THE CUT-OFF"
			}
		}
		lines = append(lines, fmt.Sprintf("%-8s %7d %8d %7d %6d %9d  %-9s %-17s %s", r.Name, x.sent, x.waiting, x.rolled, x.held, x.rejected,
			clock(r.Cutoff), finish, margin))
	}
	return lines
}

// countBy runs a query of (key, count) rows into a map.
func countBy(ctx context.Context, pool *pgxpool.Pool, query string) (map[string]int, error) {
	rows, err := pool.Query(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("progress: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return nil, fmt.Errorf("progress: %w", err)
		}
		out[k] = n
	}
	return out, rows.Err()
}

// rate is executions a second over the last five seconds.
func (t *tracker) rate() float64 {
	n := len(t.samples)
	if n < 2 {
		return 0
	}
	back := min(5, n-1)
	a, b := t.samples[n-1-back], t.samples[n-1]
	return float64(b.executed-a.executed) / (b.at - a.at).Seconds()
}

func (t *tracker) show(s sample) {
	rate := t.rate()
	// Neither a cancelled payment nor one past a cut-off (held, rolled;
	// a rejected one is among REJECTED) will execute in this run.
	toExecute := t.expected - s.executed - s.payments["REJECTED"] - s.payments["CANCELLED"]
	for _, r := range s.rails {
		toExecute -= r.held + r.rolled
	}
	eta := "-"
	switch {
	case s.at < 0:
		eta = fmt.Sprintf("the instant in %.0f s", -s.at.Seconds())
	case rate > 0:
		eta = (time.Duration(float64(max(toExecute, 0))/rate) * time.Second).Round(time.Second).String()
	}
	cells := []struct {
		name string
		n    int
	}{
		{"taken in", t.expected}, {"scheduled", s.payments["SCHEDULED"]}, {"ready", s.queue["READY"]},
		{"dispatched", s.queue["CLAIMED"] + s.queue["DISPATCHED"]}, {"executed", s.executed},
		{"delivered", s.payments["DELIVERED"]}, {"failed", s.payments["FAILED"]}, {"returned", s.payments["RETURNED"]},
		{"rejected", s.payments["REJECTED"]}, {"cancelled", s.payments["CANCELLED"]}, {"dead letters", s.dead},
	}
	if !t.o.Live {
		if time.Since(t.lastLine) < 5*time.Second && s.settled() < t.expected {
			return
		}
		t.lastLine = time.Now()
		var parts []string
		for _, c := range cells {
			parts = append(parts, fmt.Sprintf("%s %d", c.name, c.n))
		}
		parts = append(parts, t.railsOf(s)...)
		fmt.Fprintf(t.o.Out, "t%+.0fs  %s; %.1f/s (limit %d/s); ETA %s\n", s.at.Seconds(), strings.Join(parts, ", "), rate, t.o.Rate, eta)
		return
	}
	var b strings.Builder
	if t.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", t.drawn)
	}
	var head, vals strings.Builder
	for _, c := range cells {
		w := max(len(c.name), 6) + 2
		fmt.Fprintf(&head, "%-*s", w, c.name)
		fmt.Fprintf(&vals, "%-*d", w, c.n)
	}
	done := float64(s.settled()) / float64(max(t.expected, 1))
	bar := strings.Repeat("█", int(done*40)) + strings.Repeat("░", 40-int(done*40))
	fmt.Fprintf(&b, "%s\n%s\n%s %3.0f%%  t%+.0fs  executing %.1f/s (limit %d/s)  ETA %s\n",
		head.String(), vals.String(), bar, done*100, s.at.Seconds(), rate, t.o.Rate, eta)
	t.drawn = 3
	for _, l := range t.railLines(s) {
		fmt.Fprintln(&b, l)
		t.drawn++
	}
	fmt.Fprint(t.o.Out, b.String())
}

// railsOf is each rail's figures for a line of progress.
func (t *tracker) railsOf(s sample) []string {
	if t.rails == nil {
		return nil
	}
	var out []string
	for _, r := range t.rails.Rails {
		x := s.rails[r.Name]
		finish := "-"
		if x.finish != nil {
			finish = clock(*x.finish)
		}
		out = append(out, fmt.Sprintf("%s sent %d waiting %d rolled/held/rejected %d/%d/%d cut-off %s finish %s",
			r.Name, x.sent, x.waiting, x.rolled, x.held, x.rejected, clock(r.Cutoff), finish))
	}
	return out
}
