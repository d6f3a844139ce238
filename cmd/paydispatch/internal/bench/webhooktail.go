package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
)

// request is one delivery attempt the receiver saw: when, and whether it
// refused it.
type request struct {
	At      time.Time
	Refused bool
}

// eventTiming is where one event's time went, from its publication
// (createdAt) to its arrival, along its payment's events: an event
// cannot go before its payment's earlier ones, so the time it waited
// behind them is theirs, attributed in turn. Backoff and Queued add up
// to Total.
type eventTiming struct {
	ID      uuid.UUID
	Subject string
	Type    string
	Arrived time.Time
	// Attempts is how many requests the event took (the last accepted);
	// Chain, each of its payment's events' up to it, in publication
	// order.
	Attempts int
	Chain    []int
	// Gaps are the event's own waits between a refused attempt and the
	// next: the backoff and the time the relayer took to send the retry
	// once due.
	Gaps []time.Duration
	// Backoff: time spent between a refused attempt and the next, by it
	// or by an earlier event of its payment it waited behind. Queued:
	// the rest, waiting for the relayer to send (a claim, the
	// endpoint's cap).
	Total, Backoff, Queued time.Duration
}

// timeEvent splits the time of the j-th event of a payment (ids in
// publication order) from its publication to its arrival. Each event i
// is ready to go at max(its createdAt, the arrival of event i−1); from
// ready to its first request it is queued, from its first request to the
// accepted one in backoff. The span of event j is covered walking back:
// its own segments, then, for the part before it was ready, event j−1's,
// and so on. ok is false when an event up to j has not arrived.
func timeEvent(ids []uuid.UUID, j int, arrivals map[uuid.UUID]arrival, reqs map[uuid.UUID][]request) (t eventTiming, ok bool) {
	type span struct{ created, ready, first, accepted time.Time }
	spans := make([]span, j+1)
	t.Chain = make([]int, j+1)
	for i := 0; i <= j; i++ {
		a, found := arrivals[ids[i]]
		if !found {
			return t, false
		}
		s := span{created: a.CreatedAt, ready: a.CreatedAt, first: a.At, accepted: a.At}
		if i > 0 && spans[i-1].accepted.After(s.ready) {
			s.ready = spans[i-1].accepted
		}
		rs := acceptedAttempts(reqs[ids[i]])
		if len(rs) > 0 {
			s.first = rs[0].At
		}
		t.Chain[i] = max(len(rs), 1)
		spans[i] = s
	}
	last := spans[j]
	a := arrivals[ids[j]]
	t.ID, t.Type, t.Arrived, t.Attempts = ids[j], a.Type, a.At, t.Chain[j]
	t.Total = last.accepted.Sub(last.created)
	rs := acceptedAttempts(reqs[ids[j]])
	for k := 1; k < len(rs); k++ {
		t.Gaps = append(t.Gaps, rs[k].At.Sub(rs[k-1].At))
	}
	// clip is the part of [from, to] after start.
	start := last.created
	clip := func(from, to time.Time) time.Duration {
		if from.Before(start) {
			from = start
		}
		if !to.After(from) {
			return 0
		}
		return to.Sub(from)
	}
	for i := j; i >= 0; i-- {
		s := spans[i]
		t.Backoff += clip(s.first, s.accepted)
		if !s.ready.After(start) || !s.ready.After(s.created) {
			// Ready at its own publication: nothing earlier held it.
			break
		}
	}
	// The rest of the span is each event's wait from ready to its first
	// request (and, were an event's createdAt before an earlier one's,
	// the part the walk did not reach).
	t.Queued = t.Total - t.Backoff
	return t, true
}

// acceptedAttempts is an event's requests up to the first it accepted,
// in the order they came.
func acceptedAttempts(rs []request) []request {
	rs = append([]request(nil), rs...)
	sort.SliceStable(rs, func(a, b int) bool { return rs[a].At.Before(rs[b].At) })
	for i, r := range rs {
		if !r.Refused {
			return rs[:i+1]
		}
	}
	return rs
}

// tailReport is the events that arrived last, and those that arrived
// after the last payment's final status, with where their time went.
type tailReport struct {
	Last []eventTiming // the last to arrive, the latest first
	// After: the events that arrived after the last payment's final
	// status; Retried: how many of them had a refused attempt on their
	// payment's chain; their Backoff and Queued summed, and the most.
	After, Retried          int
	Backoff, Queued, Oldest time.Duration
}

// webhookTail times the n events that arrived last and sums those that
// arrived after lastFinal.
func webhookTail(expected map[string][]uuid.UUID, arrivals map[uuid.UUID]arrival, reqs map[uuid.UUID][]request, lastFinal time.Time, n int) tailReport {
	var all []eventTiming
	for subject, ids := range expected {
		for j := range ids {
			t, ok := timeEvent(ids, j, arrivals, reqs)
			if !ok {
				continue
			}
			t.Subject = subject
			all = append(all, t)
		}
	}
	sort.Slice(all, func(a, b int) bool {
		if !all[a].Arrived.Equal(all[b].Arrived) {
			return all[a].Arrived.After(all[b].Arrived)
		}
		return all[a].ID.String() < all[b].ID.String()
	})
	var r tailReport
	r.Last = all[:min(n, len(all))]
	for _, t := range all {
		if !t.Arrived.After(lastFinal) {
			break
		}
		r.After++
		if t.Backoff > 0 {
			r.Retried++
		}
		r.Backoff += t.Backoff
		r.Queued += t.Queued
		r.Oldest = max(r.Oldest, t.Total)
	}
	return r
}

// print writes the tail: for each of the last events, how long after the
// last payment it arrived, its attempts and its payment's, and its time
// from publication split into backoff and queued.
func (r tailReport) print(out io.Writer, lastFinal time.Time) {
	fmt.Fprintf(out, "the tail: %d events arrived after the last payment's final status, %d with a refused attempt on their payment's events; "+
		"from publication to arrival they spent %.1f s in backoff and %.1f s queued in all, the longest %.1f s\n",
		r.After, r.Retried, r.Backoff.Seconds(), r.Queued.Seconds(), r.Oldest.Seconds())
	fmt.Fprintf(out, "the last %d events to arrive (after the last payment; attempts, its payment's events' attempts; from publication: in backoff, queued; its own retries' gaps):\n", len(r.Last))
	for _, t := range r.Last {
		chain := make([]string, len(t.Chain))
		for i, c := range t.Chain {
			chain[i] = fmt.Sprint(c)
		}
		gaps := make([]string, len(t.Gaps))
		for i, g := range t.Gaps {
			gaps[i] = fmt.Sprintf("%.2f", g.Seconds())
		}
		if len(gaps) == 0 {
			gaps = []string{"-"}
		}
		fmt.Fprintf(out, "  %+6.2f s  %-20s attempts %d (%s)  %.2f s: backoff %.2f s, queued %.2f s  gaps %s s\n",
			t.Arrived.Sub(lastFinal).Seconds(), t.Type, t.Attempts, strings.Join(chain, ","),
			t.Total.Seconds(), t.Backoff.Seconds(), t.Queued.Seconds(), strings.Join(gaps, "+"))
	}
}
