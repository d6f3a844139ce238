package railsim

import (
	"fmt"
	"sync"
	"time"
)

// LedgerView is the simulated rail's account of what it was sent (the
// JSON of GET /ledger). Definitions, over all participants:
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

	Participants map[string]ParticipantView `json:"participants"`
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

// record is what the rail holds under an idempotency key.
type record struct {
	accepted  bool
	reference string
	code      string
	message   string
	// receivedAt: when the accepted send arrived (zero for a refusal).
	receivedAt time.Time
}

type participant struct {
	ParticipantView
	taken map[int64]struct{}
}

// ledger is guarded by one mutex: every operation is a few map lookups,
// far shorter than the HTTP work around it.
type ledger struct {
	mu      sync.Mutex
	keys    map[string]record
	parts   map[string]*participant
	traffic LedgerView // only the traffic counters are used
	nextRef uint64
	// lifted are refused keys whose refusal an operator lifted: the next
	// send of each is accepted.
	lifted map[string]bool
}

func newLedger() *ledger {
	return &ledger{keys: make(map[string]record), parts: make(map[string]*participant), lifted: make(map[string]bool)}
}

// take records a send that arrived at the given time and got past the
// retryable decision. A key seen before gets its record back (duplicate
// reports an acceptance of an accepted key). A new key is refused when
// refusal names a code, else accepted; either way its sequence number is
// taken.
func (l *ledger) take(key, part string, seq int64, arrived time.Time, refusal func() (code, message string)) (rec record, duplicate bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.parts[part]
	if p == nil {
		p = &participant{taken: make(map[int64]struct{})}
		l.parts[part] = p
	}
	lifted := l.lifted[key]
	if lifted {
		delete(l.lifted, key)
	} else if rec, ok := l.keys[key]; ok {
		if rec.accepted {
			p.Received++
			p.Duplicates++
		}
		return rec, rec.accepted
	}
	if code, msg := refusal(); code != "" && !lifted {
		rec = record{code: code, message: msg}
		p.Refused++
	} else {
		l.nextRef++
		rec = record{accepted: true, reference: fmt.Sprintf("SIM%012d", l.nextRef), receivedAt: arrived}
		p.Received++
		p.Unique++
	}
	l.keys[key] = rec
	if lifted {
		return rec, false // its sequence was taken when it was refused
	}
	if _, seen := p.taken[seq]; seen {
		p.SequenceReused++
	} else {
		if seq < p.Highest {
			p.Reordered++
		}
		p.taken[seq] = struct{}{}
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
	rec, ok := l.keys[key]
	if !ok || rec.accepted {
		return false
	}
	delete(l.keys, key)
	l.lifted[key] = true
	return true
}

func (l *ledger) lookup(key string) (record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.traffic.Inquiries++
	rec, ok := l.keys[key]
	return rec, ok
}

// receivedAt is when the accepted send of key arrived.
func (l *ledger) receivedAt(key string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, ok := l.keys[key]
	return rec.receivedAt, ok && rec.accepted
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
	l.keys = make(map[string]record)
	l.parts = make(map[string]*participant)
	l.traffic = LedgerView{}
}
