package rail

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/outbox"
)

// Rail is a Sender for one rail type.
type Rail interface {
	outbox.Sender
	// Type is the outbox rail type the rail serves.
	Type() string
}

// Destination is where one named rail's instructions go, as a Directory
// knows it.
type Destination struct {
	// Name is the rail's name: the RailType of its messages.
	Name string
	// Type is how its instructions are written: RailSEPAJSON or
	// RailPacs008.
	Type string
	// BaseURL is the rail's root; empty: RouterConfig.DefaultURL.
	BaseURL string
	// Cutoff is the instant of the rail's cut-off on the business day
	// valueDate (YYYY-MM-DD, a date in the rail's zone); ok false: none
	// that day. An error keeps the instruction unsent (retryable). nil:
	// the rail has no cut-off.
	Cutoff func(valueDate string) (at time.Time, ok bool, err error)
}

// Directory finds rails by name (the app wiring adapts the routing
// table to it; this package knows no routing).
type Directory interface {
	// Destination returns the rail named name; found is false when there
	// is none. An error is a failure to look: the rail may exist.
	Destination(ctx context.Context, name string) (d Destination, found bool, err error)
}

// RouterConfig configures a Router.
type RouterConfig struct {
	// Rails are served by type: a message whose RailType is one's Type
	// goes to it (the legacy types at the process's rail URL, the event
	// stream). They win over the directory: a database row can never
	// take another sender's traffic.
	Rails []Rail
	// Directory resolves every other RailType as a rail name; nil: none,
	// and a RailType no rail serves fails Validate.
	Directory Directory
	// DefaultURL is the base URL of a directory rail that names none.
	DefaultURL string
	// Timeout and Client are every directory rail's sender's (Config).
	Timeout time.Duration
	Client  *http.Client
	// ChargeBearer and DebtorAgentBIC are the pacs.008 senders'
	// (Pacs008Config).
	ChargeBearer   string
	DebtorAgentBIC string
	// Now is the clock the cut-off is read on (and pacs.008's CreDtTm);
	// default time.Now.
	Now func() time.Time
}

// Router is the relayer's one Sender: it dispatches each message by its
// RailType, to the rail serving that type or, with a directory, to the
// rail of that name: that rail's type decides the format, its base URL
// the endpoint. A directory rail's sender is built once per type and
// base URL and kept; all share the HTTP client. An instruction for a
// directory rail is never sent at or after the rail's cut-off for its
// value date: Send returns Terminal CUTOFF_MISSED without a call.
// Inquiries go to the rail whatever the time. Safe for concurrent use;
// fixed after NewRouter but for the senders it caches.
type Router struct {
	rails map[string]Rail
	dir   Directory
	cfg   RouterConfig

	mu      sync.RWMutex
	senders map[senderKey]Rail
}

// senderKey names a directory rail's sender: its type and base URL
// (without a trailing slash).
type senderKey struct{ railType, baseURL string }

var _ outbox.BatchSender = (*Router)(nil)

// NewRouter returns a router for cfg; a rail without a type, two rails
// of one type, and a directory's pacs.008 settings that no sender could
// use are configuration errors.
func NewRouter(cfg RouterConfig) (*Router, error) {
	r := &Router{rails: make(map[string]Rail, len(cfg.Rails)), dir: cfg.Directory, cfg: cfg, senders: map[senderKey]Rail{}}
	for _, rl := range cfg.Rails {
		t := rl.Type()
		if t == "" {
			return nil, fmt.Errorf("rail: a rail without a rail type")
		}
		if _, dup := r.rails[t]; dup {
			return nil, fmt.Errorf("rail: two rails for rail type %q", t)
		}
		r.rails[t] = rl
	}
	if r.cfg.Now == nil {
		r.cfg.Now = time.Now
	}
	if cfg.Directory != nil {
		// The process's own settings are refused at start, not at the
		// first instruction of a rail that uses them.
		base := cfg.DefaultURL
		if base == "" {
			base = "http://127.0.0.1"
		}
		if _, err := NewPacs008Rail(Pacs008Config{Config: Config{BaseURL: base}, ChargeBearer: cfg.ChargeBearer, DebtorAgentBIC: cfg.DebtorAgentBIC}); err != nil {
			return nil, fmt.Errorf("rail: the directory's rails' settings: %w", err)
		}
	}
	return r, nil
}

// Types lists the rail types served by type, sorted.
func (r *Router) Types() []string {
	out := make([]string, 0, len(r.rails))
	for t := range r.rails {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Validate checks m with its rail. It makes no call: a rail name is
// resolved by Send, which refuses an unknown one (UNKNOWN_RAIL) and
// checks the rules of the rail's type there, before any call. Without
// a directory a type no rail serves is an error here.
func (r *Router) Validate(m outbox.Message) error {
	if rl, ok := r.rails[m.RailType]; ok {
		return rl.Validate(m)
	}
	if r.dir == nil {
		return r.unknown(m)
	}
	// The rules of every type: the message's fields and the instruction
	// as a JSON rail takes it (pacs.008's add the agents' BICs).
	_, err := parseMessage(m, m.RailType, FormatJSON, "")
	return err
}

// Send sends m through its rail. An unknown rail is Terminal; an
// instruction at or past its rail's cut-off for its value date is
// Terminal CUTOFF_MISSED and not sent.
func (r *Router) Send(ctx context.Context, m outbox.Message) outbox.Result {
	if rl, ok := r.rails[m.RailType]; ok {
		return rl.Send(ctx, m)
	}
	if r.dir == nil {
		return outbox.Result{Outcome: outbox.Terminal, Code: CodeUnknownRailType, Message: r.unknown(m).Error()}
	}
	d, rl, res, ok := r.resolve(ctx, m, outbox.Retryable)
	if !ok {
		return res
	}
	m.RailType = rl.Type()
	if in, err := DecodeInstruction(m.Payload); err == nil {
		if res, late := r.late(d, in.ValueDate); late {
			return res
		}
	}
	// An invalid instruction (a bad value date included) is refused by
	// the sender, without a call.
	return rl.Send(ctx, m)
}

// Batches says whether messages of railType go in batches: only to a rail
// served by that type that is itself an outbox.BatchSender batching it
// (the Kafka event stream). Directory rails never do.
func (r *Router) Batches(railType string) bool {
	bs, ok := r.rails[railType].(outbox.BatchSender)
	return ok && bs.Batches(railType)
}

// SendBatch sends ms, all of one rail type that Batches, through their
// rail in one call.
func (r *Router) SendBatch(ctx context.Context, ms []outbox.Message) []outbox.Result {
	bs, ok := r.rails[ms[0].RailType].(outbox.BatchSender)
	if !ok {
		// Not a batching rail: the relayer never asks; one at a time.
		res := make([]outbox.Result, len(ms))
		for i, m := range ms {
			res[i] = r.Send(ctx, m)
		}
		return res
	}
	return bs.SendBatch(ctx, ms)
}

// Inquire asks m's rail. With no rail to ask (none of that name or
// type, or the directory unreadable) the outcome stays Unknown.
func (r *Router) Inquire(ctx context.Context, m outbox.Message) outbox.Result {
	if rl, ok := r.rails[m.RailType]; ok {
		return rl.Inquire(ctx, m)
	}
	if r.dir == nil {
		return outbox.Result{Outcome: outbox.Unknown, Code: CodeUnknownRailType, Message: r.unknown(m).Error()}
	}
	_, rl, res, ok := r.resolve(ctx, m, outbox.Unknown)
	if !ok {
		res.Outcome = outbox.Unknown
		return res
	}
	m.RailType = rl.Type()
	return rl.Inquire(ctx, m)
}

// resolve finds m's directory rail and its sender; when it cannot, res
// says why (a failure to read the directory with outcome lookupFailed).
func (r *Router) resolve(ctx context.Context, m outbox.Message, lookupFailed outbox.Outcome) (d Destination, rl Rail, res outbox.Result, ok bool) {
	name := plaintext.Clip(m.RailType, 64)
	d, found, err := r.dir.Destination(ctx, m.RailType)
	switch {
	case err != nil:
		return d, nil, outbox.Result{Outcome: lookupFailed, Code: CodeRailLookupFailed,
			Message: plaintext.Clip(fmt.Sprintf("rail %q: reading the rails: %v", name, err), maxMessage)}, false
	case !found:
		return d, nil, outbox.Result{Outcome: outbox.Terminal, Code: CodeUnknownRail,
			Message: fmt.Sprintf("no rail named %q, nor a rail type served by that name (by type: %v)", name, r.Types())}, false
	}
	rl, err = r.sender(d)
	if err != nil {
		return d, nil, outbox.Result{Outcome: outbox.Terminal, Code: CodeRailMisconfigured,
			Message: plaintext.Clip(fmt.Sprintf("rail %q: %v", name, err), maxMessage)}, false
	}
	return d, rl, outbox.Result{}, true
}

// late reports whether an instruction valued on valueDate is at or past
// d's cut-off now, with the result to record when it is (or when the
// cut-off cannot be told: then it is not sent either).
func (r *Router) late(d Destination, valueDate string) (outbox.Result, bool) {
	if d.Cutoff == nil {
		return outbox.Result{}, false
	}
	var c checker
	if c.valueDate(valueDate); c.err() != nil {
		return outbox.Result{}, false // the sender refuses it as invalid
	}
	at, ok, err := d.Cutoff(valueDate)
	switch {
	case err != nil:
		return outbox.Result{Outcome: outbox.Retryable, Code: CodeRailLookupFailed,
			Message: plaintext.Clip(fmt.Sprintf("rail %s: the cut-off of %s: %v", d.Name, valueDate, err), maxMessage)}, true
	case !ok:
		return outbox.Result{}, false
	}
	now := r.cfg.Now()
	if now.Before(at) {
		return outbox.Result{}, false
	}
	return outbox.Result{Outcome: outbox.Terminal, Code: CodeCutoffMissed,
		Message: fmt.Sprintf("rail %s's cut-off for value date %s was %s; not sent at %s",
			d.Name, valueDate, at.Format(time.RFC3339), now.In(at.Location()).Format(time.RFC3339))}, true
}

// sender returns the sender of d's type and base URL, built on first use.
func (r *Router) sender(d Destination) (Rail, error) {
	base := d.BaseURL
	if base == "" {
		base = r.cfg.DefaultURL
	}
	if base == "" {
		return nil, errors.New("no endpoint, and the process has no default rail URL")
	}
	key := senderKey{railType: d.Type, baseURL: strings.TrimRight(base, "/")}
	r.mu.RLock()
	rl, ok := r.senders[key]
	r.mu.RUnlock()
	if ok {
		return rl, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rl, ok := r.senders[key]; ok {
		return rl, nil
	}
	cfg := Config{BaseURL: key.baseURL, RailType: d.Type, Timeout: r.cfg.Timeout, Client: r.cfg.Client}
	var err error
	switch d.Type {
	case RailSEPAJSON:
		rl, err = NewHTTPRail(cfg)
	case RailPacs008:
		rl, err = NewPacs008Rail(Pacs008Config{Config: cfg, ChargeBearer: r.cfg.ChargeBearer, DebtorAgentBIC: r.cfg.DebtorAgentBIC, Now: r.cfg.Now})
	default:
		err = fmt.Errorf("type %q: want %s or %s", plaintext.Clip(d.Type, 32), RailSEPAJSON, RailPacs008)
	}
	if err != nil {
		return nil, err
	}
	r.senders[key] = rl
	return rl, nil
}

func (r *Router) unknown(m outbox.Message) error {
	return fieldErr("railType", "no rail configured for %q (configured: %v)", plaintext.Clip(m.RailType, 32), r.Types())
}
