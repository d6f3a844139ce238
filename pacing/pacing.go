package pacing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/pgerr"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/pacing/internal/dbsqlc"
)

// Errors callers tell apart.
var (
	ErrConfigNotFound = errors.New("no such rate-limit config")
	ErrConfigInactive = errors.New("rate-limit config is inactive")
	// ErrExhausted: no window within the search limit had room; nothing
	// was written for the event.
	ErrExhausted = errors.New("no window with room within the search limit")
	// ErrInvalid: a config or request is malformed; nothing changed.
	ErrInvalid = errors.New("invalid")
	// ErrLate: no window had room before the event's deadline; nothing
	// was written for it.
	ErrLate = errors.New("no room before the deadline")
)

// invalid is a *field.Invalid naming the field of a config or request
// that is wrong and what it takes; errors.Is(err, ErrInvalid) holds for it.
func invalid(name, detail string) error {
	return &field.Invalid{Fields: []field.Error{{Field: name, Detail: detail}}, Kind: ErrInvalid}
}

// Limit is a named rate limit: at most MaxPerWindow events per Window.
type Limit struct {
	Name         string
	MaxPerWindow int
	Window       time.Duration
	// Headroom is how many windows a request searches past the first one
	// with room before it gives up (EXHAUSTED).
	Headroom  int
	Active    bool
	Version   int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DefaultHeadroom is how far past the requested window an event may be
// placed: 100 windows.
const DefaultHeadroom = 100

var configName = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,100}$`)

// Validate says what is wrong with c, naming the field.
func (c Limit) Validate() error {
	switch {
	case !configName.MatchString(c.Name):
		return invalid("configName", "want 1-100 letters, digits, '_', '.', ':' or '-'")
	case c.MaxPerWindow < 1 || c.MaxPerWindow > 1_000_000:
		return invalid("maxPerWindow", "want a whole number from 1 to 1000000")
	case c.Window < time.Millisecond || c.Window > 24*time.Hour || c.Window%time.Millisecond != 0:
		return invalid("windowSize", "want from PT0.001S to P1D in whole milliseconds")
	case c.Headroom < 0 || c.Headroom > 100_000:
		return invalid("headroom", "want a whole number of windows from 0 to 100000")
	}
	return nil
}

// Status says how an event got its slot.
type Status string

const (
	StatusNew       Status = "NEW"       // assigned by this call
	StatusExisting  Status = "EXISTING"  // assigned before: the same slot again
	StatusExhausted Status = "EXHAUSTED" // no room within the search limit; nothing written
	StatusLate      Status = "LATE"      // no room before the deadline; nothing written
)

// Slot is an event's place in the schedule.
type Slot struct {
	EventID       string
	ScheduledTime time.Time
	WindowStart   time.Time
	Index         int // the slot's number in its window, from 0
	Status        Status
}

// Event is something to pace: an id (the idempotency key), the time it
// asks for and, optionally, a deadline its slot must come before (a
// rail's cut-off).
type Event struct {
	ID            string
	RequestedTime time.Time
	// Deadline, when set, bounds the slot: an event with no room before
	// it is LATE, and nothing is written for it.
	Deadline time.Time
}

// Config configures a Limiter; zero fields take their defaults.
type Config struct {
	// Pool is the database, whose schema has the pacing tables (required).
	Pool *pgxpool.Pool
	// CacheTTL is how long a limit read is trusted (default 5 s).
	CacheTTL time.Duration
	// BulkChunk is how many events of one instant go in one round trip
	// (default 5,000).
	BulkChunk int
}

func (c Config) withDefaults() Config {
	if c.CacheTTL <= 0 {
		c.CacheTTL = 5 * time.Second
	}
	if c.BulkChunk <= 0 {
		c.BulkChunk = 5000
	}
	return c
}

// Limiter assigns slots. Configs are cached for CacheTTL.
type Limiter struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
	opts Config
	now  func() time.Time

	mu    sync.Mutex
	cache map[string]cachedConfig

	assigns    batcher[coalesceKey, assignRequest, assignResult]  // single assignments, by instant
	executions batcher[executeKey, executeRequest, executeResult] // executions let go, by config
}

type cachedConfig struct {
	c   Limit
	err error
	at  time.Time
}

// New returns a limiter with cfg, defaults filled in. Nothing in cfg can
// be invalid: a missing Pool fails at the first call, as a nil pool does.
func New(cfg Config) *Limiter {
	o := cfg.withDefaults()
	l := &Limiter{pool: o.Pool, q: dbsqlc.New(o.Pool), opts: o, now: time.Now, cache: map[string]cachedConfig{}}
	l.assigns = batcher[coalesceKey, assignRequest, assignResult]{maxCalls: maxCallsPerInstant, chunk: o.BulkChunk, call: l.assignBatch}
	l.executions = batcher[executeKey, executeRequest, executeResult]{maxCalls: 1, chunk: o.BulkChunk, call: l.executeBatch}
	return l
}

func fromRow(r dbsqlc.PacingConfig) Limit {
	return Limit{
		Name: r.ConfigName, MaxPerWindow: int(r.MaxPerWindow), Window: time.Duration(r.WindowMs) * time.Millisecond,
		Headroom: int(r.HeadroomWindows), Active: r.Active, Version: int(r.Version), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// PutConfig creates or changes a config (activating it; a change bumps
// the version) and drops it from the cache.
func (l *Limiter) PutConfig(ctx context.Context, c Limit) (Limit, error) {
	saved, err := putConfig(ctx, l.q, c)
	if err == nil {
		l.Forget(c.Name)
	}
	return saved, err
}

// PutConfigTx is PutConfig inside the caller's transaction (the change
// commits with the caller's other writes, an admin change's audit entry),
// without touching the cache: once the transaction has committed, the
// caller drops the config from it (Forget).
func (l *Limiter) PutConfigTx(ctx context.Context, tx pgx.Tx, c Limit) (Limit, error) {
	return putConfig(ctx, dbsqlc.New(tx), c)
}

func putConfig(ctx context.Context, q *dbsqlc.Queries, c Limit) (Limit, error) {
	if err := c.Validate(); err != nil {
		return Limit{}, err
	}
	r, err := q.PutConfig(ctx, dbsqlc.PutConfigParams{
		ConfigName: c.Name, MaxPerWindow: int32(c.MaxPerWindow), WindowMs: c.Window.Milliseconds(), HeadroomWindows: int32(c.Headroom),
	})
	if err != nil {
		return Limit{}, fmt.Errorf("pacing: put config %s: %w", c.Name, err)
	}
	return fromRow(r), nil
}

// GetConfig reads a config from the database (not the cache).
func (l *Limiter) GetConfig(ctx context.Context, name string) (Limit, error) {
	return getConfig(ctx, l.q, name)
}

func getConfig(ctx context.Context, q *dbsqlc.Queries, name string) (Limit, error) {
	r, err := q.GetConfig(ctx, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return Limit{}, fmt.Errorf("pacing: config %q: %w", name, ErrConfigNotFound)
	}
	if err != nil {
		return Limit{}, fmt.Errorf("pacing: read config %s: %w", name, err)
	}
	return fromRow(r), nil
}

// ListConfigs reads every config.
func (l *Limiter) ListConfigs(ctx context.Context) ([]Limit, error) {
	rows, err := l.q.ListConfigs(ctx)
	if err != nil {
		return nil, fmt.Errorf("pacing: list configs: %w", err)
	}
	out := make([]Limit, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, nil
}

// Deactivate stops a config from assigning slots (slots already given
// stay) and drops it from the cache.
func (l *Limiter) Deactivate(ctx context.Context, name string) (Limit, error) {
	c, err := deactivate(ctx, l.q, name)
	if err == nil {
		l.Forget(name)
	}
	return c, err
}

// DeactivateTx is Deactivate inside the caller's transaction, without
// touching the cache (see PutConfigTx).
func (l *Limiter) DeactivateTx(ctx context.Context, tx pgx.Tx, name string) (Limit, error) {
	return deactivate(ctx, dbsqlc.New(tx), name)
}

func deactivate(ctx context.Context, q *dbsqlc.Queries, name string) (Limit, error) {
	r, err := q.DeactivateConfig(ctx, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return Limit{}, fmt.Errorf("pacing: config %q: %w", name, ErrConfigNotFound)
	}
	if err != nil {
		return Limit{}, fmt.Errorf("pacing: deactivate %s: %w", name, err)
	}
	return fromRow(r), nil
}

// FlushCache forgets every cached config: the next request reads them
// again. Other processes' caches expire within CacheTTL.
func (l *Limiter) FlushCache() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.cache)
}

// Forget drops a config from the cache: the next request reads it again.
// A change made in a caller's transaction (PutConfigTx, DeactivateTx) is
// forgotten once it has committed; forgotten before, a request in between
// would cache the old config again.
func (l *Limiter) Forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.cache, name)
}

// activeConfig is the config as cached (read again after CacheTTL).
func (l *Limiter) activeConfig(ctx context.Context, name string) (Limit, error) {
	l.mu.Lock()
	c, ok := l.cache[name]
	l.mu.Unlock()
	if !ok || l.now().Sub(c.at) >= l.opts.CacheTTL {
		cfg, err := l.GetConfig(ctx, name)
		if err != nil && !errors.Is(err, ErrConfigNotFound) {
			return Limit{}, err // not cached: a database error is not an answer
		}
		c = cachedConfig{c: cfg, err: err, at: l.now()}
		l.mu.Lock()
		l.cache[name] = c
		l.mu.Unlock()
	}
	if c.err != nil {
		return Limit{}, c.err
	}
	if !c.c.Active {
		return Limit{}, fmt.Errorf("pacing: config %q: %w", name, ErrConfigInactive)
	}
	return c.c, nil
}

// Assign gives one event its slot under the named config: the slot it
// already has (EXISTING), or a new one at or after requested (NEW). With
// no room within the search limit it returns ErrExhausted and writes
// nothing. Concurrent calls for the same config and instant share
// database calls (see coalesce.go).
func (l *Limiter) Assign(ctx context.Context, configName, eventID string, requested time.Time) (Slot, error) {
	return l.AssignEvent(ctx, configName, Event{ID: eventID, RequestedTime: requested})
}

// AssignEvent is Assign for an event that may have a deadline: with no
// room before it, the slot's Status is LATE, with ErrLate, and nothing is
// written.
func (l *Limiter) AssignEvent(ctx context.Context, configName string, e Event) (Slot, error) {
	eventID, requested := e.ID, e.RequestedTime
	if eventID == "" || len(eventID) > 200 || !plaintext.Valid(eventID) {
		return Slot{}, invalid("eventId", "want 1-200 characters of UTF-8 text, no control characters")
	}
	if requested.IsZero() {
		return Slot{}, invalid("requestedTime", "want an RFC 3339 time")
	}
	cfg, err := l.activeConfig(ctx, configName)
	if err != nil {
		return Slot{}, err
	}
	slot, err := l.assignCoalesced(ctx, cfg, eventID, ceilMilli(requested), floorMilli(e.Deadline))
	if err != nil {
		return Slot{}, err
	}
	if slot.Status == statusBusy {
		// Alone this time (see retryLate).
		got := map[string]Slot{eventID: slot}
		if err := l.retryLate(ctx, cfg, instant{ceilMilli(requested), floorMilli(e.Deadline)}, []string{eventID}, got); err != nil {
			return Slot{}, err
		}
		slot = got[eventID]
	}
	switch slot.Status {
	case StatusExhausted:
		return slot, fmt.Errorf("pacing: %s at %s under %s: %w", eventID, requested.Format(time.RFC3339Nano), configName, ErrExhausted)
	case StatusLate:
		return slot, fmt.Errorf("pacing: %s at %s under %s before %s: %w", eventID, requested.Format(time.RFC3339Nano), configName,
			e.Deadline.Format(time.RFC3339Nano), ErrLate)
	}
	return slot, nil
}

// ceilMilli rounds up to the millisecond slots are kept in, so a slot is
// never before the requested time.
func ceilMilli(t time.Time) time.Time {
	r := t.UTC().Truncate(time.Millisecond)
	if r.Before(t) {
		r = r.Add(time.Millisecond)
	}
	return r
}

// floorMilli rounds down to the millisecond, so a slot before the
// rounded deadline is before the deadline; zero stays zero.
func floorMilli(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}

func errNoResult(eventID string) error { return fmt.Errorf("pacing: no result for event %s", eventID) }

// AssignBulk gives each event a slot, in one round trip per requested
// instant and chunk of BulkChunk events: a file of 500,000 payments for one
// instant takes 100 round trips, not 500,000. Results come in the order of
// events; an event that found no room has Status EXHAUSTED, one that found
// none before its deadline LATE (and nothing written for either). An event
// id given twice gets one slot.
func (l *Limiter) AssignBulk(ctx context.Context, configName string, events []Event) ([]Slot, error) {
	for i, e := range events {
		if e.ID == "" || len(e.ID) > 200 || !plaintext.Valid(e.ID) {
			return nil, invalid(fmt.Sprintf("events[%d].eventId", i), "want 1-200 characters of UTF-8 text, no control characters")
		}
		if e.RequestedTime.IsZero() {
			return nil, invalid(fmt.Sprintf("events[%d].requestedTime", i), "want an RFC 3339 time")
		}
	}
	cfg, err := l.activeConfig(ctx, configName)
	if err != nil {
		return nil, err
	}
	// Group by instant (and deadline), earliest first, keeping each
	// group's order. An id given twice is assigned once, with its first
	// requested time: two chunks racing for one id would answer it NEW and
	// EXISTING in either order.
	byTime := map[instant][]string{}
	var times []instant
	seen := make(map[string]struct{}, len(events))
	for _, e := range events {
		if _, dup := seen[e.ID]; dup {
			continue
		}
		seen[e.ID] = struct{}{}
		t := instant{at: ceilMilli(e.RequestedTime), deadline: floorMilli(e.Deadline)}
		if _, ok := byTime[t]; !ok {
			times = append(times, t)
		}
		byTime[t] = append(byTime[t], e.ID)
	}
	slices.SortFunc(times, func(a, b instant) int { return cmp.Or(a.at.Compare(b.at), a.deadline.Compare(b.deadline)) })
	got := make(map[string]Slot, len(events))
	// Chunks of one instant go maxCallsPerInstant at a time. A call holds
	// its windows until it commits, so the other walks past them: a chunk
	// spans at most its share of the headroom, or the others would give up.
	chunk := max(min(l.opts.BulkChunk, cfg.MaxPerWindow*max(cfg.Headroom, 1)/maxCallsPerInstant), 1)
	var (
		mu       sync.Mutex
		firstErr error
	)
	for _, t := range times {
		ids := byTime[t]
		sem := make(chan struct{}, maxCallsPerInstant)
		var wg sync.WaitGroup
		for start := 0; start < len(ids); start += chunk {
			part := ids[start:min(start+chunk, len(ids))]
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				slots, err := l.assignFresh(ctx, cfg, t.at, t.deadline, part)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					firstErr = cmp.Or(firstErr, err)
					return
				}
				for _, s := range slots {
					if _, ok := got[s.EventID]; !ok { // a call answers an id once; keep the first if not
						got[s.EventID] = s
					}
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return nil, firstErr
		}
		if err := l.retryLate(ctx, cfg, t, byTime[t], got); err != nil {
			return nil, err
		}
	}
	out := make([]Slot, len(events))
	for i, e := range events {
		s, ok := got[e.ID]
		if !ok {
			return nil, errNoResult(e.ID)
		}
		out[i] = s
	}
	return out, nil
}

// statusBusy is pacing_assign's answer for an event it found no room for
// before its deadline while a window before it, with room, was held by
// another transaction: not LATE yet. Callers never see it.
const statusBusy Status = "BUSY"

// busyPatience bounds how long BUSY events are asked again; still BUSY
// then, they are LATE (the safe side: a payment rolled, never late). It
// is a time, not a count: fifty quick retries (about a third of a
// second) gave up on holders that a loaded machine had not yet let
// commit, and rolled events there was room for.
const busyPatience = 2 * time.Second

// retryLate asks again, alone, for the events of an instant that came
// back BUSY, after a pause for the holders to commit, until each is
// placed or LATE.
func (l *Limiter) retryLate(ctx context.Context, cfg Limit, t instant, ids []string, got map[string]Slot) error {
	return l.retryBusy(ctx, l.q, cfg, t, ids, got)
}

// retryBusy is retryLate on q (the pool's, or a transaction's).
func (l *Limiter) retryBusy(ctx context.Context, q *dbsqlc.Queries, cfg Limit, t instant, ids []string, got map[string]Slot) error {
	if t.deadline.IsZero() {
		return nil
	}
	giveUp := time.Now().Add(busyPatience)
	for {
		var busy []string
		for _, id := range ids {
			if got[id].Status == statusBusy {
				busy = append(busy, id)
			}
		}
		if len(busy) == 0 {
			return nil
		}
		if !time.Now().Before(giveUp) {
			for _, id := range busy {
				got[id] = Slot{EventID: id, Status: StatusLate}
			}
			return nil
		}
		if err := Hold(ctx, time.Now().Add(time.Duration(2+rand.IntN(10))*time.Millisecond)); err != nil {
			return err
		}
		slots, err := l.assignOn(ctx, q, cfg, t.at, t.deadline, busy, false)
		if err != nil {
			return err
		}
		for _, s := range slots {
			got[s.EventID] = s
		}
	}
}

// instant is a group of AssignBulk's events: one requested time and one
// deadline (zero: none).
type instant struct{ at, deadline time.Time }

// assign is one round trip: ids all requesting the instant t, before the
// deadline (zero: none).
func (l *Limiter) assign(ctx context.Context, cfg Limit, t, deadline time.Time, ids []string) ([]Slot, error) {
	return l.assignOn(ctx, l.q, cfg, t, deadline, ids, false)
}

// assignFresh is assign for ids that are not expected to have slots
// (AssignBulk's: a file's payments, placed once): their slots are
// inserted without probing each key first. When one has a slot after all
// (a retried chunk whose first try committed part of its calls), that
// call fails on the key, having written nothing, and is asked again as
// assign.
func (l *Limiter) assignFresh(ctx context.Context, cfg Limit, t, deadline time.Time, ids []string) ([]Slot, error) {
	slots, err := l.assignOn(ctx, l.q, cfg, t, deadline, ids, true)
	if pgerr.Is(err, pgerr.UniqueViolation) {
		return l.assign(ctx, cfg, t, deadline, ids)
	}
	return slots, err
}

// assignOn is assign on q (the pool's, or a transaction's); fresh as
// assignFresh, only on the pool (a failed statement aborts a transaction).
func (l *Limiter) assignOn(ctx context.Context, q *dbsqlc.Queries, cfg Limit, t, deadline time.Time, ids []string, fresh bool) ([]Slot, error) {
	jitter := make([]float64, len(ids))
	for i := range jitter {
		jitter[i] = rand.Float64()
	}
	var dl *time.Time
	if !deadline.IsZero() {
		dl = &deadline
	}
	rows, err := q.Assign(ctx, dbsqlc.AssignParams{
		ConfigName: cfg.Name, WindowMs: cfg.Window.Milliseconds(), MaxPerWindow: int32(cfg.MaxPerWindow),
		Headroom: int32(cfg.Headroom), RequestedTime: t, EventIds: ids, Jitter: jitter, Deadline: dl, Fresh: fresh,
	})
	if err != nil {
		return nil, fmt.Errorf("pacing: assign %d events under %s: %w", len(ids), cfg.Name, err)
	}
	out := make([]Slot, len(rows))
	for i, r := range rows {
		out[i] = Slot{EventID: r.EventID, Status: Status(r.Status)}
		if out[i].Status != StatusExhausted && out[i].Status != StatusLate && out[i].Status != statusBusy {
			out[i].ScheduledTime, out[i].WindowStart, out[i].Index = r.ScheduledTime, r.WindowStart, int(r.SlotIndex)
		}
	}
	return out, nil
}

// WindowCount is a window's counter beside the slots it holds.
type WindowCount struct {
	Start   time.Time
	Counter int
	Slots   int
	Status  string
}

// Windows lists a config's windows with their counters and slot counts.
func (l *Limiter) Windows(ctx context.Context, configName string) ([]WindowCount, error) {
	rows, err := l.q.WindowCounts(ctx, configName)
	if err != nil {
		return nil, fmt.Errorf("pacing: window counts %s: %w", configName, err)
	}
	out := make([]WindowCount, len(rows))
	for i, r := range rows {
		out[i] = WindowCount{Start: r.WindowStart, Counter: int(r.SlotCount), Slots: int(r.Slots), Status: r.Status}
	}
	return out, nil
}
