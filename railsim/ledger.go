package railsim

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// LedgerView is a simulated rail's account of what it was sent (the
// JSON of GET /ledger, and of GET /rails/{name}/ledger). Definitions,
// over all participants:
//
//   - Received: send calls the rail accepted, including those it accepted
//     and then answered too late or not at all, and duplicates.
//   - Unique: distinct idempotency keys accepted.
//   - Duplicates: acceptances of a key already accepted (Received =
//     Unique + Duplicates). A correct relayer never resends an accepted
//     instruction, so a good run has none.
//   - Refused: distinct keys refused terminally (a refusal is recorded and
//     repeated; a retryable answer records nothing).
//   - Gaps, Reordered: summed over participants (ParticipantView).
//
// The other counters describe the traffic, not the instructions.
type LedgerView struct {
	Received   int64 `json:"received"`
	Unique     int64 `json:"unique"`
	Duplicates int64 `json:"duplicates"`
	Refused    int64 `json:"refused"`
	Gaps       int64 `json:"gaps"`
	Reordered  int64 `json:"reordered"`
	// SequenceReused: new keys that came with a sequence number the
	// participant's earlier instructions had already taken.
	SequenceReused int64 `json:"sequenceReused"`
	// RetryableAnswers: sends answered with the retryable code.
	RetryableAnswers int64 `json:"retryableAnswers"`
	// TimeoutsAfterAccept: accepted sends then answered late or cut off.
	TimeoutsAfterAccept int64 `json:"timeoutsAfterAccept"`
	// Malformed: sends refused for their headers or body (FF01); those
	// with a usable key are also in Refused.
	Malformed int64 `json:"malformed"`
	// Inquiries: status inquiries answered.
	Inquiries int64 `json:"inquiries"`
	// Late: keys refused for arriving at or after the rail's cut-off for
	// their value date (TM01; also in Refused).
	Late int64 `json:"late"`

	Participants map[string]ParticipantView `json:"participants"`

	// Rail names the rail the counters are of; Cutoff and TimeZone are
	// its cut-off (HH:MM:SS, empty: none) and the zone it is read in.
	Rail     string `json:"rail,omitempty"`
	Cutoff   string `json:"cutoff,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
	// Rails, in GET /ledger and Simulator.Ledger, is every rail's own
	// ledger by name, DEFAULT's too (the counters above are DEFAULT's).
	Rails map[string]LedgerView `json:"rails,omitempty"`
	// Instructions, when asked for (?instructions=true), is every key
	// the rail holds, in the order they arrived.
	Instructions []Receipt `json:"instructions,omitempty"`
}

// Receipt is what a rail holds under one idempotency key: when the send
// it decided on arrived, and its answer.
type Receipt struct {
	Key           string `json:"key"`
	ParticipantID string `json:"participantId"`
	SequenceID    int64  `json:"sequenceId"`
	// ValueDate is the instruction's (empty when its body was unreadable).
	ValueDate string `json:"valueDate,omitempty"`
	// ReceivedAt is when that send arrived (its headers read).
	ReceivedAt time.Time `json:"receivedAt"`
	// Status is ACCEPTED (with Reference) or REJECTED (with Code).
	Status    string `json:"status"`
	Reference string `json:"reference,omitempty"`
	Code      string `json:"code,omitempty"`
}

// ParticipantView is one participant's part of the ledger. The rail
// "takes" a sequence number when it accepts or terminally refuses an
// instruction (a retryable answer did not take it):
//
//   - Gaps: numbers between 1 and Highest not taken.
//   - Reordered: first arrivals whose number is lower than one already
//     taken.
type ParticipantView struct {
	Received       int64 `json:"received"`
	Unique         int64 `json:"unique"`
	Duplicates     int64 `json:"duplicates"`
	Refused        int64 `json:"refused"`
	Gaps           int64 `json:"gaps"`
	Reordered      int64 `json:"reordered"`
	SequenceReused int64 `json:"sequenceReused"`
	Highest        int64 `json:"highest"`
	Taken          int64 `json:"taken"`
}

// record is what the rail holds under an idempotency key, as the
// handlers read it.
type record struct {
	accepted  bool
	reference string
	code      string
	message   string
	// receivedAt: when the send that decided it arrived.
	receivedAt  time.Time
	participant string
	seq         int64
	valueDate   string
}

// entry is a record as the ledger keeps it: a rail holds every key it
// took for the whole run (100,000 in a 100,000-payment drain, in the
// drain's own process), so the strings a record repeats are kept once
// (names), a reference as its number and a refusal's words apart, and
// a key that is a UUID as its bytes (keyed).
type entry struct {
	ref        uint64 // the reference's number; 0: refused (see refusals)
	receivedAt int64  // Unix nanoseconds
	seq        int64
	part       uint32 // names index
	valueDate  uint32 // names index
}

type refused struct{ code, message string }

type participant struct {
	ParticipantView
	// taken is a bit a sequence number, 64 to a word keyed by seq>>6:
	// sequences are dense, so a word holds 64 of them.
	taken map[int64]uint64
}

// take marks seq taken and reports whether it already was.
func (p *participant) take(seq int64) (already bool) {
	w, bit := seq>>6, uint64(1)<<(uint64(seq)&63)
	if p.taken[w]&bit != 0 {
		return true
	}
	p.taken[w] |= bit
	return false
}

// ledger is guarded by one mutex: every operation is a few map lookups,
// far shorter than the HTTP work around it.
type ledger struct {
	mu       sync.Mutex
	keys     keyed
	refusals map[string]refused
	names    []string
	nameIdx  map[string]uint32
	parts    map[string]*participant
	traffic  LedgerView // only the traffic counters are used
	nextRef  uint64
	// refPrefix starts every reference (one per rail: references are
	// unique across a simulator's rails).
	refPrefix string
	// lifted are refused keys whose refusal an operator lifted: the next
	// send of each is accepted.
	lifted map[string]bool
}

func newLedger(refPrefix string) *ledger {
	l := &ledger{lifted: make(map[string]bool), refPrefix: refPrefix}
	l.clear()
	return l
}

func (l *ledger) clear() {
	l.keys, l.refusals = newKeyed(), make(map[string]refused)
	l.names, l.nameIdx = nil, make(map[string]uint32)
	l.parts = make(map[string]*participant)
	l.traffic = LedgerView{}
}

// name is s's index in names, added when new.
func (l *ledger) name(s string) uint32 {
	if i, ok := l.nameIdx[s]; ok {
		return i
	}
	i := uint32(len(l.names))
	l.names = append(l.names, s)
	l.nameIdx[s] = i
	return i
}

// record expands key's entry.
func (l *ledger) record(key string, e entry) record {
	rec := record{accepted: e.ref != 0, receivedAt: time.Unix(0, e.receivedAt), participant: l.names[e.part],
		seq: e.seq, valueDate: l.names[e.valueDate]}
	if rec.accepted {
		rec.reference = l.reference(e.ref)
	} else {
		r := l.refusals[key]
		rec.code, rec.message = r.code, r.message
	}
	return rec
}

func (l *ledger) reference(n uint64) string { return fmt.Sprintf("%s%012d", l.refPrefix, n) }

// take records a send that arrived at the given time and got past the
// retryable decision. A key seen before gets its record back (duplicate
// reports an acceptance of an accepted key). A new key is refused when
// refusal names a code, else accepted; either way its sequence number is
// taken.
func (l *ledger) take(c send, arrived time.Time, refusal func() (code, message string)) (rec record, duplicate bool) {
	key, part, seq := c.key, c.participant, c.seq
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.parts[part]
	if p == nil {
		p = &participant{taken: make(map[int64]uint64)}
		l.parts[part] = p
	}
	lifted := l.lifted[key]
	if lifted {
		delete(l.lifted, key)
	} else if e, ok := l.keys.get(key); ok {
		if e.ref != 0 {
			p.Received++
			p.Duplicates++
		}
		return l.record(key, e), e.ref != 0
	}
	e := entry{receivedAt: arrived.UnixNano(), seq: seq, part: l.name(part), valueDate: l.name(c.valueDate)}
	if code, msg := refusal(); code != "" && !lifted {
		l.refusals[key] = refused{code: code, message: msg}
		p.Refused++
		if c.late && code == CodeCutoff {
			l.traffic.Late++
		}
	} else {
		l.nextRef++
		e.ref = l.nextRef
		delete(l.refusals, key)
		p.Received++
		p.Unique++
	}
	l.keys.put(key, e)
	rec = l.record(key, e)
	if lifted {
		return rec, false // its sequence was taken when it was refused
	}
	if p.take(seq) {
		p.SequenceReused++
	} else {
		if seq < p.Highest {
			p.Reordered++
		}
		p.Taken++
		if seq > p.Highest {
			p.Highest = seq
		}
	}
	return rec, false
}

// lift forgets a refused key's refusal: its next send is accepted (the
// cause fixed at the rail, e.g. an account reopened). False when the key
// was not refused.
func (l *ledger) lift(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.keys.get(key)
	if !ok || e.ref != 0 {
		return false
	}
	l.keys.remove(key)
	delete(l.refusals, key)
	l.lifted[key] = true
	return true
}

func (l *ledger) lookup(key string) (record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.traffic.Inquiries++
	e, ok := l.keys.get(key)
	if !ok {
		return record{}, false
	}
	return l.record(key, e), true
}

// receivedAt is when the accepted send of key arrived.
func (l *ledger) receivedAt(key string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.keys.get(key)
	if !ok || e.ref == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, e.receivedAt), true
}

// receipts is every key held, in the order the sends deciding them
// arrived.
func (l *ledger) receipts() []Receipt {
	l.mu.Lock()
	out := make([]Receipt, 0, l.keys.len())
	l.keys.each(func(key string, e entry) {
		rec := l.record(key, e)
		r := Receipt{Key: key, ParticipantID: rec.participant, SequenceID: rec.seq, ValueDate: rec.valueDate,
			ReceivedAt: rec.receivedAt, Status: "REJECTED", Code: rec.code}
		if rec.accepted {
			r.Status, r.Reference = "ACCEPTED", rec.reference
		}
		out = append(out, r)
	})
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ReceivedAt.Equal(out[j].ReceivedAt) {
			return out[i].ReceivedAt.Before(out[j].ReceivedAt)
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// count bumps one traffic counter.
func (l *ledger) count(f func(*LedgerView)) {
	l.mu.Lock()
	f(&l.traffic)
	l.mu.Unlock()
}

func (l *ledger) view() LedgerView {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.traffic
	v.Participants = make(map[string]ParticipantView, len(l.parts))
	for id, p := range l.parts {
		pv := p.ParticipantView
		pv.Gaps = pv.Highest - pv.Taken
		v.Participants[id] = pv
		v.Received += pv.Received
		v.Unique += pv.Unique
		v.Duplicates += pv.Duplicates
		v.Refused += pv.Refused
		v.Gaps += pv.Gaps
		v.Reordered += pv.Reordered
		v.SequenceReused += pv.SequenceReused
	}
	return v
}

func (l *ledger) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
}
