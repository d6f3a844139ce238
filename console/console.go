// Package console is the operator console that serve shows at /console:
// one server-rendered page with a small script and style sheet, all
// embedded in the binary, that draws live charts of the executions a
// second against their limit and of the queue by status, and lets an
// operator list and requeue dead letters, stop and resume dispatch (the
// kill switch, confirmed), edit each item type's dispatch settings and
// the rate-limit configs, pause and resume a tenant's, a file's or a
// rail's waiting payments, and look a payment up with its priority (and
// change it while it waits), its process log and a link to its execution
// in Temporal's Web UI.
//
// The page, the script and the style sheet hold no data and are public
// (GET /console, GET /console/{file}); every figure comes from the admin
// API, called by the script with the admin token the operator pasted at
// sign-in (kept in the tab's sessionStorage and sent as Authorization:
// Bearer). No cookie is ever set, so a request another site makes a
// browser send carries no credential: there is nothing for a cross-site
// request forgery to ride on. The page's Content-Security-Policy is
// default-src 'self': the script loads nothing from anywhere else, and
// the charts are inline SVG it draws itself.
//
// The charts read GET /admin/console/stats, which this package adds: each
// item type's queue by status (queue.Depth, from the database), its kill
// switch and pacing config, the executions this process let go at their
// slots (the dispatcher's metrics, dispatch.Metrics, as the Grafana
// dashboard draws them), each rate-limit config's limit in executions
// a second, and each rail's backlog, rate and current business day's
// cut-off against the projected finish (from the wiring: Rails). The script polls it every second and keeps the last five
// minutes in the browser.
//
// It is an adapter at the edge, beside httpapi: it knows the dispatch
// queue and the limiter, and no domain.
package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/queue"
)

// Queue is what the console reads of the dispatch queue (queue.Queue).
type Queue interface {
	ListConfigs(ctx context.Context) ([]queue.Settings, error)
	Depth(ctx context.Context, itemType string) (queue.Depth, error)
}

// Limits is what the console reads of the rate limiter (pacing.Limiter).
type Limits interface {
	ListConfigs(ctx context.Context) ([]pacing.Limit, error)
}

// Rails is what the console reads of the rails: each one's figures now,
// as GET /admin/rails/{name} and the rail metrics compute them (the
// wiring's, which knows the payments and the routing tables).
type Rails interface {
	RailFigures(ctx context.Context) ([]RailFigure, error)
}

// The console's routes. The page and its files are public (they hold no
// data; httpapi's route table says so); the figures need admin.
const (
	PagePattern  = "GET /console"
	FilePattern  = "GET /console/{file}"
	StatsPattern = "GET /admin/console/stats"
)

// CSP is the page's Content-Security-Policy: its own script, style sheet
// and API calls, nothing else; no framing, no <base>, forms only to
// itself.
const CSP = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

//go:embed assets
var assets embed.FS

// asset is one embedded file as it is served.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// files are the console's files by name: the page, and what it loads.
var files = func() map[string]asset {
	out := map[string]asset{}
	for name, ct := range map[string]string{
		"index.html":  "text/html; charset=utf-8",
		"console.js":  "text/javascript; charset=utf-8",
		"console.css": "text/css; charset=utf-8",
	} {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			panic("console: " + err.Error()) // embedded at build time
		}
		sum := sha256.Sum256(b)
		out[name] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return out
}()

// ExecutionsMetric is the dispatcher's metric whose count is the
// executions let go at their slots, by item type (dispatch.Metrics'
// execution lag histogram: one observation an execution).
const ExecutionsMetric = "paydispatch_dispatch_execution_lag_seconds"

// Handlers are the console's: its page, its script and style sheet, and
// the figures its charts draw (httpapi.Console, mounted by httpapi's
// route table).
type Handlers struct{ stats *stats }

// New returns the console's handlers. counters gathers this process's
// dispatcher metrics (dispatch.NewMetrics's registry), read at each
// figure; nil: no executions are counted. rails gives each rail's
// figures; nil: none.
func New(q Queue, l Limits, counters prometheus.Gatherer, rails Rails) *Handlers {
	return &Handlers{stats: &stats{q: q, l: l, rails: rails, counters: counters, now: time.Now, instance: rand.Text()[:12]}}
}

// Page serves GET /console.
func (*Handlers) Page(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, r, files["index.html"])
}

// File serves GET /console/{file}: the page's script and style sheet.
func (*Handlers) File(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	a, ok := files[name]
	if !ok || name == "index.html" {
		httpapi.WriteProblem(w, r, httpapi.Problem{Status: http.StatusNotFound, Detail: "the console has no file " + clip(name)})
		return
	}
	serveAsset(w, r, a)
}

// Stats serves GET /admin/console/stats.
func (h *Handlers) Stats(w http.ResponseWriter, r *http.Request) { h.stats.serve(w, r) }

// serveAsset writes an embedded file with the console's security headers.
// Browsers revalidate it (no-cache) and get 304 while it is unchanged.
func serveAsset(w http.ResponseWriter, r *http.Request, a asset) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Type", a.contentType)
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(string(a.body)))
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Stats is GET /admin/console/stats: what the live charts draw.
type Stats struct {
	// At is when the figures were read (at most one read a second is
	// made, whatever the number of consoles open).
	At time.Time `json:"at"`
	// Instance names the process that counted the executions: a rate is
	// drawn between two figures of one instance only (behind a load
	// balancer, two reads may come from two serve processes; a restart
	// starts the counts again).
	Instance   string          `json:"instance"`
	ItemTypes  []ItemTypeStats `json:"itemTypes"`
	RateLimits []RateLimit     `json:"rateLimits"`
	// Rails are every rail's figures, by name.
	Rails []RailFigure `json:"rails"`
}

// RailFigure is a rail now: what waits for it and whether it makes its
// current business day's cut-off.
type RailFigure struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Active bool   `json:"active"`
	// Waiting counts the payments SCHEDULED on it for its current
	// business day, not yet begun; WaitingLater those SCHEDULED for a
	// later one (rolled past a cut-off, or asked for then); Held those
	// HELD at a cut-off, waiting for an operator.
	Waiting      int64 `json:"waiting"`
	WaitingLater int64 `json:"waitingLater"`
	Held         int64 `json:"held"`
	// RateLimitConfig paces it (its own, or PAYMENT's; "": none found),
	// at RatePerSecond (0: not paced, or the config is inactive).
	RateLimitConfig string  `json:"rateLimitConfig"`
	RatePerSecond   float64 `json:"ratePerSecond"`
	// BusinessDay is the day a payment requested now executes on, Cutoff
	// its cut-off (nil: none); "" when its calendar has no business day
	// within two years.
	BusinessDay string     `json:"businessDay"`
	Cutoff      *time.Time `json:"cutoff,omitempty"`
	// ProjectedFinish is when the day's waiting payments are projected to
	// have left (nil: none waits): the later of their last slot and now
	// plus what waits at the rate. PastCutoff: it is at or after the
	// cut-off; MarginSeconds is the cut-off less it, in whole seconds
	// rounded down (negative: past it; nil without either).
	ProjectedFinish *time.Time `json:"projectedFinish,omitempty"`
	PastCutoff      bool       `json:"pastCutoff"`
	MarginSeconds   *int64     `json:"marginSeconds,omitempty"`
}

// ItemTypeStats is one item type's queue and settings now.
type ItemTypeStats struct {
	ItemType string `json:"itemType"`
	// Enabled is the kill switch: false, nothing is dispatched.
	Enabled  bool   `json:"enabled"`
	ExecMode string `json:"execMode"`
	// PacingConfig is the rate-limit config that gives the type's items
	// their slots ("": not paced), and LimitPerSecond its limit in
	// executions a second (0: none, or the config is inactive or gone).
	PacingConfig   string  `json:"pacingConfig"`
	LimitPerSecond float64 `json:"limitPerSecond"`
	// Queue counts the type's items by status, every status listed.
	Queue map[string]int64 `json:"queue"`
	// Executed counts the executions this process let go at their slots
	// since it started (the dispatcher's metrics): the executions a second
	// are its rise over time. Executions in worker processes are not
	// counted here (nor in any metric).
	Executed uint64 `json:"executed"`
	// Completed counts the items whose execution completed, ever, from the
	// queue (every process's); it moves as executions are settled, a batch
	// execution's items together.
	Completed int64 `json:"completed"`
	// OldestReadyOverdueSeconds is how long the oldest due READY item has
	// waited past its time (0: none is due).
	OldestReadyOverdueSeconds float64 `json:"oldestReadyOverdueSeconds"`
}

// RateLimit is a rate-limit config and its limit.
type RateLimit struct {
	ConfigName   string `json:"configName"`
	MaxPerWindow int    `json:"maxPerWindow"`
	WindowSize   string `json:"windowSize"`
	Active       bool   `json:"active"`
	// LimitPerSecond is MaxPerWindow over the window, in executions a
	// second (0 when the config is inactive).
	LimitPerSecond float64 `json:"limitPerSecond"`
}

// stats reads the figures, at most once a second: every console open
// polls every second, and the queue's depth is a count over its table.
type stats struct {
	q        Queue
	l        Limits
	rails    Rails
	counters prometheus.Gatherer
	instance string
	now      func() time.Time

	mu   sync.Mutex
	last *Stats
}

// maxAge is how long one read of the figures is served.
const maxAge = time.Second

func (s *stats) serve(w http.ResponseWriter, r *http.Request) {
	st, err := s.get(r.Context())
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problem{Status: http.StatusServiceUnavailable, Detail: "the console's figures cannot be read now; retry"})
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, st)
}

func (s *stats) get(ctx context.Context) (*Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && s.now().Sub(s.last.At) < maxAge {
		return s.last, nil
	}
	st, err := s.read(ctx)
	if err != nil {
		return nil, err
	}
	s.last = st
	return st, nil
}

func (s *stats) read(ctx context.Context) (*Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	limits, err := s.l.ListConfigs(ctx)
	if err != nil {
		return nil, err
	}
	types, err := s.q.ListConfigs(ctx)
	if err != nil {
		return nil, err
	}
	executed, err := executions(s.counters)
	if err != nil {
		return nil, err
	}
	st := &Stats{Instance: s.instance, ItemTypes: make([]ItemTypeStats, 0, len(types)), RateLimits: make([]RateLimit, 0, len(limits)),
		Rails: []RailFigure{}}
	if s.rails != nil {
		rails, err := s.rails.RailFigures(ctx)
		if err != nil {
			return nil, err
		}
		st.Rails = append(st.Rails, rails...)
	}
	perSecond := map[string]float64{}
	for _, c := range limits {
		rl := RateLimit{ConfigName: c.Name, MaxPerWindow: c.MaxPerWindow, WindowSize: pacing.FormatISODuration(c.Window), Active: c.Active}
		if c.Active && c.Window > 0 {
			rl.LimitPerSecond = float64(c.MaxPerWindow) / c.Window.Seconds()
			perSecond[c.Name] = rl.LimitPerSecond
		}
		st.RateLimits = append(st.RateLimits, rl)
	}
	for _, c := range types {
		d, err := s.q.Depth(ctx, c.ItemType)
		if err != nil {
			return nil, err
		}
		it := ItemTypeStats{ItemType: c.ItemType, Enabled: c.Enabled, ExecMode: string(c.ExecMode), PacingConfig: c.PacingConfig,
			LimitPerSecond: perSecond[c.PacingConfig], Queue: make(map[string]int64, len(queue.Statuses)),
			Executed: executed[c.ItemType], Completed: d.ByStatus[queue.StatusCompleted]}
		for _, status := range queue.Statuses {
			it.Queue[string(status)] = d.ByStatus[status]
		}
		if d.OldestReady != nil {
			it.OldestReadyOverdueSeconds = max(s.now().Sub(*d.OldestReady).Seconds(), 0)
		}
		st.ItemTypes = append(st.ItemTypes, it)
	}
	st.At = s.now().UTC()
	return st, nil
}

// executions reads the executions let go by item type from the
// dispatcher's metrics.
func executions(g prometheus.Gatherer) (map[string]uint64, error) {
	out := map[string]uint64{}
	if g == nil {
		return out, nil
	}
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	for _, f := range families {
		if f.GetName() != ExecutionsMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "item_type" {
					out[l.GetValue()] += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return out, nil
}
