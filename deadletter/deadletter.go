package deadletter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/queue"
)

// Sources of dead letters.
const (
	SourceDispatch = "dispatch" // the dispatch queue's DEAD_LETTER items
	SourceOutbox   = "outbox"   // the outbox's dead instructions
)

// Letter is a dead letter of either source.
type Letter struct {
	// ID names it for a requeue: "dispatch:<type>:<item id>" or
	// "outbox:<outbox id>".
	ID     string `json:"id"`
	Source string `json:"source"`
	// ItemType is the queue item's type, or the instruction's rail type.
	ItemType string `json:"itemType"`
	// ItemID is the queue item's id, or the instruction's (a payment's id).
	ItemID   string    `json:"itemId"`
	TenantID string    `json:"tenantId"`
	DiedAt   time.Time `json:"diedAt"`
	// Reason is why it died: the last error, or the outbox's code, the
	// rail's code and its message.
	Reason string `json:"reason"`
	// Attempts: the queue's dispatch retries, or the sends it had.
	Attempts int `json:"attempts"`
}

// Filter selects dead letters; zero fields select all.
type Filter struct {
	Source   string `json:"source,omitempty"`
	ItemType string `json:"itemType,omitempty"`
	TenantID string `json:"tenantId,omitempty"`
	// Reason matches a part of the reason, in any case.
	Reason string `json:"reason,omitempty"`
	// DiedFrom and DiedTo bound when it died: [DiedFrom, DiedTo).
	DiedFrom time.Time `json:"diedFrom,omitzero"`
	DiedTo   time.Time `json:"diedTo,omitzero"`
}

// Errors callers tell apart.
var (
	// ErrInvalid: a filter, an id or a request is malformed; nothing changed.
	ErrInvalid = errors.New("deadletter: invalid")
	// ErrNotDead: a letter asked for by id is not (or no longer) dead;
	// nothing changed.
	ErrNotDead = errors.New("deadletter: not a dead letter")
	// ErrNoConfig: no rate-limit config for the requeue (none named and
	// the item type has none, or the one named does not exist or is
	// inactive); nothing changed.
	ErrNoConfig = errors.New("deadletter: no rate-limit config")
)

// invalid is a *field.Invalid naming the field that is wrong; it is
// ErrInvalid.
func invalid(name, detail string) error {
	return &field.Invalid{Fields: []field.Error{{Field: name, Detail: detail}}, Kind: ErrInvalid}
}

// NotDeadError lists the ids asked for that are not dead letters, with
// what each is instead; it is ErrNotDead.
type NotDeadError struct{ Why map[string]string }

func (e *NotDeadError) Error() string {
	ids := make([]string, 0, len(e.Why))
	for id := range e.Why {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + ": " + e.Why[id]
	}
	return "not dead letters: " + strings.Join(parts, "; ")
}
func (e *NotDeadError) Is(target error) bool { return target == ErrNotDead }

// NoConfigError says which config is missing and why; it is ErrNoConfig.
type NoConfigError struct{ Detail string }

func (e *NoConfigError) Error() string        { return "no rate-limit config: " + e.Detail }
func (e *NoConfigError) Is(target error) bool { return target == ErrNoConfig }

// Config configures a Service.
type Config struct {
	// DB, Queue and Limiter hold the letters and the slots a requeue
	// takes (required).
	DB      *pgxpool.Pool
	Queue   *queue.Queue
	Limiter *pacing.Limiter
	// OutboxHooks are the domain's (its OnRequeue runs in each requeue's
	// transaction).
	OutboxHooks outbox.Hooks
	// OutboxItemType is the queue item type whose rate-limit config an
	// outbox letter's requeue takes when none is named (the payments').
	OutboxItemType string
	// OnRequeue, by queue item type, is told in the requeue's transaction
	// which items moved and the config whose slots they got, so that their
	// executions are held to that config's windows (a paced item's
	// execution counts itself in its config; see payment.RequeuedHook).
	OnRequeue map[string]func(ctx context.Context, tx pgx.Tx, itemIDs []string, config string) error
}

// Service lists and requeues dead letters.
type Service struct{ cfg Config }

// New returns the service cfg configures. Nothing in cfg can be invalid:
// a missing DB, Queue or Limiter fails at the first call that needs it.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

// dispatchID is a queue letter's id.
func dispatchID(itemType, itemID string) string {
	return SourceDispatch + ":" + itemType + ":" + itemID
}

// outboxID is an outbox letter's id.
func outboxID(id uuid.UUID) string { return SourceOutbox + ":" + id.String() }

// ref is a parsed letter id.
type ref struct {
	source, itemType, itemID string
	outboxID                 uuid.UUID
}

func parseID(id string) (ref, error) {
	src, rest, _ := strings.Cut(id, ":")
	switch src {
	case SourceDispatch:
		t, item, ok := strings.Cut(rest, ":")
		if ok && t != "" && item != "" {
			return ref{source: src, itemType: t, itemID: item}, nil
		}
	case SourceOutbox:
		if u, err := uuid.Parse(rest); err == nil {
			return ref{source: src, outboxID: u}, nil
		}
	}
	return ref{}, invalid("ids", "not a dead letter's id: "+clip(id)+" (want dispatch:<item type>:<item id> or outbox:<outbox id>, as listed)")
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Validate says what is wrong with f.
func (f Filter) Validate() error {
	switch {
	case f.Source != "" && f.Source != SourceDispatch && f.Source != SourceOutbox:
		return invalid("source", "dispatch or outbox")
	case !f.DiedFrom.IsZero() && !f.DiedTo.IsZero() && !f.DiedFrom.Before(f.DiedTo):
		return invalid("diedTo", "must be after diedFrom")
	}
	for name, v := range map[string]string{"itemType": f.ItemType, "tenantId": f.TenantID, "reason": f.Reason} {
		if len(v) > 200 {
			return invalid(name, "at most 200 characters")
		}
	}
	return nil
}

func (f Filter) wants(source string) bool { return f.Source == "" || f.Source == source }

// Position is where a page ended: (diedAt, source, id) in the list's order.
type Position struct {
	DiedAt time.Time
	Source string
	ID     string
}

// String encodes p for a cursor.
func (p Position) String() string {
	return p.DiedAt.UTC().Format(time.RFC3339Nano) + "|" + p.Source + "|" + p.ID
}

// ParsePosition reads a Position's String.
func ParsePosition(s string) (Position, bool) {
	at, rest, ok := strings.Cut(s, "|")
	if !ok {
		return Position{}, false
	}
	src, id, ok := strings.Cut(rest, "|")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || (src != SourceDispatch && src != SourceOutbox) {
		return Position{}, false
	}
	if _, err := parseID(id); err != nil {
		return Position{}, false
	}
	return Position{DiedAt: t, Source: src, ID: id}, true
}

func (l Letter) position() Position { return Position{DiedAt: l.DiedAt, Source: l.Source, ID: l.ID} }

func before(a, b Position) bool {
	if !a.DiedAt.Equal(b.DiedAt) {
		return a.DiedAt.Before(b.DiedAt)
	}
	if a.Source != b.Source {
		return a.Source < b.Source
	}
	return a.ID < b.ID
}

// Page is a page of dead letters.
type Page struct {
	Letters []Letter
	// Next is where the next page starts; nil on the last.
	Next *Position
}

// List lists up to limit dead letters after the position (nil: from the
// first), oldest death first, both sources merged.
func (s *Service) List(ctx context.Context, f Filter, after *Position, limit int) (Page, error) {
	if err := f.Validate(); err != nil {
		return Page{}, err
	}
	var all []Letter
	if f.wants(SourceDispatch) {
		var pos *queue.DeadPosition
		if after != nil {
			// Within one instant, dispatch letters come before outbox ones.
			pos = &queue.DeadPosition{DiedAt: after.DiedAt}
			if after.Source == SourceDispatch {
				r, _ := parseID(after.ID)
				pos.ItemType, pos.ItemID = r.itemType, r.itemID
			} else {
				pos.DiedAt = after.DiedAt.Add(time.Microsecond) // past every dispatch letter of that instant
			}
		}
		items, err := s.cfg.Queue.DeadLetters(ctx, queue.DeadFilter{ItemType: f.ItemType, TenantID: f.TenantID, Reason: f.Reason,
			DiedFrom: f.DiedFrom, DiedTo: f.DiedTo}, pos, limit+1)
		if err != nil {
			return Page{}, err
		}
		for _, it := range items {
			all = append(all, Letter{ID: dispatchID(it.ItemType, it.ItemID), Source: SourceDispatch, ItemType: it.ItemType,
				ItemID: it.ItemID, TenantID: it.TenantID, DiedAt: it.DiedAt, Reason: it.LastError, Attempts: it.RetryCount})
		}
	}
	if f.wants(SourceOutbox) {
		var pos *outbox.DeadLetterPosition
		if after != nil {
			pos = &outbox.DeadLetterPosition{DeadAt: after.DiedAt}
			if after.Source == SourceOutbox {
				r, _ := parseID(after.ID)
				pos.OutboxID = r.outboxID
			} // else uuid.Nil: every outbox letter of that instant is after a dispatch one
		}
		dls, err := outbox.ListDeadLetters(ctx, s.cfg.DB, outbox.DeadLetterFilter{RailType: f.ItemType, ParticipantID: f.TenantID,
			Reason: f.Reason, DiedFrom: f.DiedFrom, DiedTo: f.DiedTo}, pos, limit+1)
		if err != nil {
			return Page{}, err
		}
		for _, d := range dls {
			all = append(all, outboxLetter(d))
		}
	}
	sort.Slice(all, func(i, j int) bool { return before(all[i].position(), all[j].position()) })
	if len(all) <= limit {
		return Page{Letters: all}, nil
	}
	next := all[limit-1].position()
	return Page{Letters: all[:limit], Next: &next}, nil
}

func outboxLetter(d outbox.DeadLetterEntry) Letter {
	reason := d.ErrorCode
	if d.RailCode != "" {
		reason += " " + d.RailCode
	}
	if d.ErrorMessage != "" {
		reason += ": " + d.ErrorMessage
	}
	return Letter{ID: outboxID(d.Message.OutboxID), Source: SourceOutbox, ItemType: d.Message.RailType,
		ItemID: d.Message.InstructionID, TenantID: d.Message.ParticipantID, DiedAt: d.DeadAt, Reason: reason,
		Attempts: d.Message.Attempt}
}

// Request is a requeue: by ids, or every letter a filter selects.
type Request struct {
	IDs    []string
	Filter *Filter
	// Config names the rate-limit config the requeued items take their
	// slots from; empty: each item type's own.
	Config string
	// Reason is recorded with each item (the queue's audit, the outbox's
	// attempt row).
	Reason string
	// From is when the first slot may be (zero: now).
	From time.Time
	// Record, when set, writes inside each transaction that requeues
	// letters the record of what it requeued (an admin change's audit
	// entry; page is that transaction's part of the Result): the record
	// commits with the letters it names, and its error rolls them back
	// and stops the requeue.
	Record func(ctx context.Context, tx pgx.Tx, page Result) error
}

// MaxIDs bounds a requeue by ids (a filter has no bound).
const MaxIDs = 1000

// Result is what a requeue did.
type Result struct {
	Requeued int `json:"requeued"`
	// Refused are letters the domain kept dead (e.g. an account that
	// cannot be debited again), by id, with why.
	Refused map[string]string `json:"refused,omitempty"`
	// Unslotted letters found no slot within their config's headroom and
	// stay dead; requeue them later.
	Unslotted int `json:"unslotted,omitempty"`
	// Configs are the rate-limit configs used.
	Configs []string `json:"configs"`
	// FirstSlot and LastSlot bound the slots given.
	FirstSlot time.Time `json:"firstSlot,omitzero"`
	LastSlot  time.Time `json:"lastSlot,omitzero"`
}

// pageSize is how many letters a filter's requeue moves per transaction.
const pageSize = 1000

// Requeue requeues dead letters through a rate limiter. By ids: every id
// must be a dead letter now, or nothing changes (ErrNotDead, naming
// them). By filter: every letter the filter selects, a page of 1,000 per
// transaction; one that stops being dead meanwhile is left out.
func (s *Service) Requeue(ctx context.Context, r Request) (Result, error) {
	if err := s.validate(r); err != nil {
		return Result{}, err
	}
	run := &requeue{s: s, req: r, id: uuid.NewString(), res: Result{Refused: map[string]string{}}, cfgs: map[string]pacing.Limit{},
		from: r.From, placed: map[string]int{}, defaults: map[string]string{}}
	if run.from.IsZero() {
		run.from = time.Now()
	}
	if r.Filter == nil {
		letters, err := s.lookup(ctx, r.IDs)
		if err != nil {
			return Result{}, err
		}
		if err := run.page(ctx, letters, true); err != nil {
			return Result{}, err
		}
		return run.result(), nil
	}
	// Requeued letters leave the list, so each page starts from the
	// first; those kept dead (refused, unslotted) are stepped over.
	var after *Position
	for {
		p, err := s.List(ctx, *r.Filter, after, pageSize)
		if err != nil {
			return run.result(), err
		}
		if len(p.Letters) > 0 {
			if err := run.page(ctx, p.Letters, false); err != nil {
				return run.result(), err
			}
			last := p.Letters[len(p.Letters)-1].position()
			after = &last
		}
		if p.Next == nil {
			return run.result(), nil
		}
	}
}

func (s *Service) validate(r Request) error {
	switch {
	case len(r.IDs) == 0 && r.Filter == nil:
		return invalid("ids", "name the dead letters to requeue (ids), or give a filter")
	case len(r.IDs) > 0 && r.Filter != nil:
		return invalid("filter", "either ids or a filter, not both")
	case len(r.IDs) > MaxIDs:
		return invalid("ids", fmt.Sprintf("at most %d; requeue more with a filter", MaxIDs))
	case len(r.Reason) > 500:
		return invalid("reason", "at most 500 characters")
	}
	if r.Filter != nil {
		if err := r.Filter.Validate(); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, id := range r.IDs {
		if _, err := parseID(id); err != nil {
			return err
		}
		if seen[id] {
			return invalid("ids", "named twice: "+clip(id))
		}
		seen[id] = true
	}
	return nil
}

// lookup reads the letters named by id, all of which must be dead.
func (s *Service) lookup(ctx context.Context, ids []string) ([]Letter, error) {
	notDead := map[string]string{}
	var out []Letter
	var outboxIDs []uuid.UUID
	byOutbox := map[uuid.UUID]string{}
	for _, id := range ids {
		r, _ := parseID(id)
		if r.source == SourceOutbox {
			outboxIDs = append(outboxIDs, r.outboxID)
			byOutbox[r.outboxID] = id
			continue
		}
		it, err := s.cfg.Queue.Get(ctx, r.itemType, r.itemID)
		switch {
		case errors.Is(err, queue.ErrNotFound):
			notDead[id] = "no such item"
		case err != nil:
			return nil, err
		case it.Status != queue.StatusDeadLetter:
			notDead[id] = "the item is " + string(it.Status) + ", not DEAD_LETTER"
		default:
			out = append(out, Letter{ID: id, Source: SourceDispatch, ItemType: it.Type, ItemID: it.ID,
				TenantID: it.TenantID, DiedAt: it.UpdatedAt, Reason: it.LastError, Attempts: it.RetryCount})
		}
	}
	if len(outboxIDs) > 0 {
		dls, err := outbox.DeadLettersByID(ctx, s.cfg.DB, outboxIDs)
		if err != nil {
			return nil, err
		}
		for _, d := range dls {
			out = append(out, outboxLetter(d))
			delete(byOutbox, d.Message.OutboxID)
		}
		for _, id := range byOutbox {
			notDead[id] = "not an outbox dead letter (delivered, pending or requeued already, or no such instruction)"
		}
	}
	if len(notDead) > 0 {
		return nil, &NotDeadError{Why: notDead}
	}
	return out, nil
}

// requeue is one Requeue call's state.
type requeue struct {
	s      *Service
	req    Request
	id     string // names this call's slots
	res    Result
	cfgs   map[string]pacing.Limit
	from   time.Time
	placed map[string]int // slots asked for so far, by config
	// defaults are the item types' own configs, read once a call.
	defaults map[string]string
}

func (r *requeue) result() Result {
	out := r.res
	for name := range r.cfgs {
		out.Configs = append(out.Configs, name)
	}
	sort.Strings(out.Configs)
	if len(out.Refused) == 0 {
		out.Refused = nil
	}
	return out
}

// configFor names the config a letter's slot comes from.
func (r *requeue) configFor(ctx context.Context, l Letter) (pacing.Limit, error) {
	name := r.req.Config
	if name == "" {
		itemType := l.ItemType
		if l.Source == SourceOutbox {
			itemType = r.s.cfg.OutboxItemType
		}
		if name = r.defaults[itemType]; name == "" {
			qc, err := r.s.cfg.Queue.GetConfig(ctx, itemType)
			if errors.Is(err, queue.ErrNotFound) || (err == nil && qc.PacingConfig == "") {
				return pacing.Limit{}, &NoConfigError{Detail: "item type " + itemType + " has no rate-limit config: name one (config)"}
			}
			if err != nil {
				return pacing.Limit{}, err
			}
			name = qc.PacingConfig
			r.defaults[itemType] = name
		}
	}
	if c, ok := r.cfgs[name]; ok {
		return c, nil
	}
	c, err := r.s.cfg.Limiter.GetConfig(ctx, name)
	switch {
	case errors.Is(err, pacing.ErrConfigNotFound):
		return pacing.Limit{}, &NoConfigError{Detail: "no rate-limit config " + clip(name)}
	case err != nil:
		return pacing.Limit{}, err
	case !c.Active:
		return pacing.Limit{}, &NoConfigError{Detail: "rate-limit config " + clip(name) + " is inactive"}
	}
	r.cfgs[name] = c
	return c, nil
}

// page slots and requeues one page of letters in one transaction. all:
// every letter must move, or nothing does (a requeue by ids).
func (r *requeue) page(ctx context.Context, letters []Letter, all bool) error {
	slots, err := r.slots(ctx, letters)
	if err != nil {
		return err
	}
	tx, err := r.s.cfg.DB.Begin(ctx)
	if err != nil {
		return fmt.Errorf("deadletter: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	byType := map[string][]queue.Requeue{}
	configOf := map[string]string{} // by queue item type: the config its items' slots came from (one per type per call)
	var out []outbox.Requeue
	wanted := map[string]string{} // the letters with a slot, and the config it came from
	for _, l := range letters {
		at, ok := slots[l.ID]
		if !ok {
			r.res.Unslotted++
			continue
		}
		c, err := r.configFor(ctx, l)
		if err != nil {
			return err
		}
		wanted[l.ID] = c.Name
		rf, _ := parseID(l.ID)
		if l.Source == SourceDispatch {
			byType[rf.itemType] = append(byType[rf.itemType], queue.Requeue{ItemID: rf.itemID, At: at})
			configOf[rf.itemType] = c.Name
		} else {
			out = append(out, outbox.Requeue{OutboxID: rf.outboxID, At: at})
		}
	}
	detail := "requeued by an operator"
	if r.req.Reason != "" {
		detail += ": " + r.req.Reason
	}
	moved := map[string]bool{}
	types := make([]string, 0, len(byType))
	for t := range byType {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		ids, err := queue.RequeueDead(ctx, tx, t, byType[t], detail)
		if err != nil {
			return err
		}
		for _, id := range ids {
			moved[dispatchID(t, id)] = true
		}
		if hook := r.s.cfg.OnRequeue[t]; hook != nil && len(ids) > 0 {
			if err := hook(ctx, tx, ids, configOf[t]); err != nil {
				return fmt.Errorf("deadletter: %s requeue hook: %w", t, err)
			}
		}
	}
	refused := map[string]string{}
	if len(out) > 0 {
		rq, err := outbox.RequeueDeadLetters(ctx, tx, r.s.cfg.OutboxHooks, out, detail)
		if err != nil {
			return err
		}
		for _, m := range rq.Messages {
			moved[outboxID(m.OutboxID)] = true
		}
		for id, why := range rq.Refused {
			refused[outboxID(id)] = why
		}
	}
	if all {
		notDead := map[string]string{}
		for id := range wanted {
			if !moved[id] {
				if why, ok := refused[id]; ok {
					notDead[id] = why
				} else {
					notDead[id] = "no longer a dead letter"
				}
			}
		}
		if r.res.Unslotted > 0 {
			return &NoConfigError{Detail: fmt.Sprintf("%d of the letters found no slot within their config's headroom; nothing was requeued", r.res.Unslotted)}
		}
		if len(notDead) > 0 {
			return &NotDeadError{Why: notDead}
		}
	}
	page := Result{Requeued: len(moved), Refused: refused}
	for id := range moved {
		at := slots[id]
		if page.FirstSlot.IsZero() || at.Before(page.FirstSlot) {
			page.FirstSlot = at
		}
		if at.After(page.LastSlot) {
			page.LastSlot = at
		}
		page.Configs = append(page.Configs, wanted[id])
	}
	slices.Sort(page.Configs)
	page.Configs = slices.Compact(page.Configs)
	if r.req.Record != nil && (len(moved) > 0 || len(refused) > 0) {
		if err := r.req.Record(ctx, tx, page); err != nil {
			return fmt.Errorf("deadletter: record the requeue: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("deadletter: commit: %w", err)
	}
	maps.Copy(r.res.Refused, refused)
	if r.res.FirstSlot.IsZero() || !page.FirstSlot.IsZero() && page.FirstSlot.Before(r.res.FirstSlot) {
		r.res.FirstSlot = page.FirstSlot
	}
	if page.LastSlot.After(r.res.LastSlot) {
		r.res.LastSlot = page.LastSlot
	}
	r.res.Requeued += len(moved)
	return nil
}

// slots gives each letter a new slot from its config; a letter with
// none (its config's headroom full) is absent. Each config's slots are
// asked for window by window from the call's start, as many per window as
// the config allows, so no request searches far.
func (r *requeue) slots(ctx context.Context, letters []Letter) (map[string]time.Time, error) {
	byConfig := map[string][]pacing.Event{}
	for _, l := range letters {
		c, err := r.configFor(ctx, l)
		if err != nil {
			return nil, err
		}
		k := r.placed[c.Name]
		r.placed[c.Name] = k + 1
		at := r.from.Add(time.Duration(k/c.MaxPerWindow) * c.Window)
		byConfig[c.Name] = append(byConfig[c.Name], pacing.Event{ID: r.eventID(l.ID), RequestedTime: at})
	}
	out := make(map[string]time.Time, len(letters))
	eventToLetter := make(map[string]string, len(letters))
	for _, l := range letters {
		eventToLetter[r.eventID(l.ID)] = l.ID
	}
	for name, evs := range byConfig {
		slots, err := r.s.cfg.Limiter.AssignBulk(ctx, name, evs)
		if err != nil {
			return nil, fmt.Errorf("deadletter: slots under %s: %w", name, err)
		}
		for _, sl := range slots {
			if sl.Status == pacing.StatusExhausted {
				continue
			}
			out[eventToLetter[sl.EventID]] = sl.ScheduledTime
		}
	}
	return out, nil
}

// eventID names a letter's slot in this call: a letter requeued again
// later gets a new one.
func (r *requeue) eventID(letterID string) string {
	id := "redrive:" + r.id + ":" + letterID
	if len(id) > 200 {
		sum := sha256.Sum256([]byte(letterID))
		id = "redrive:" + r.id + ":" + hex.EncodeToString(sum[:])
	}
	return id
}
