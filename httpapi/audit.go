package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
)

// AuditLog is the admin audit log (audit.Log). An audited change commits
// in a transaction it opens, with the change's entry.
type AuditLog interface {
	// Begin opens the transaction of a change and its entry.
	Begin(ctx context.Context) (pgx.Tx, error)
	// Record appends an entry in tx, the transaction of its change.
	Record(ctx context.Context, tx pgx.Tx, actor, action, target string, detail any) error
	List(ctx context.Context, limit int, before int64) ([]audit.Entry, int64, error)
}

// auditAPI serves the audit log, newest first. The audited routes'
// changes are kept in it (Services.Audit):
// an audited request (one other than GET to /admin/*, the cancels and
// the changes of priority) runs in a transaction: its handler makes the
// change in it (changeTx), the router then writes the entry (who, the
// route, the path, the status, the request body up to 4 KiB) in the same
// transaction and commits, and only then sends the handler's answer,
// held until then. A refused request (4xx, 5xx) is rolled back and not
// recorded; a change whose entry cannot be written is rolled back and
// answered 503. A handler with work that must follow the commit (driving
// a process, dropping a cache) commits first (commit). The routes whose
// change commits in transactions of its own (recordsItself in their
// rows) write an entry in each, through their store's hook. Without an audit log, the
// router makes no audited change (503).
type auditAPI struct {
	rt    *Router
	audit AuditLog
}

// audited reports whether a request to the route may change something
// that the audit log records.
func audited(route Route, r *http.Request) bool {
	return route.serving == recordsItself ||
		r.Method != http.MethodGet && r.Method != http.MethodHead && strings.HasPrefix(r.URL.Path, "/admin/")
}

// maxAuditedBody bounds the request body kept in an audit entry.
const maxAuditedBody = 4 << 10

// change is an audited request's: the transaction its change and entry
// commit in (nil for a route that records itself).
type change struct {
	tx      pgx.Tx
	pattern string
	body    bytes.Buffer
	// settled: committed, or rolled back and answered.
	settled bool
}

type changeKey struct{}

func changeOf(r *http.Request) *change {
	c, _ := r.Context().Value(changeKey{}).(*change)
	return c
}

// changeTx is the transaction an audited request's change is made in;
// every store call that changes something takes it.
func changeTx(r *http.Request) pgx.Tx {
	if c := changeOf(r); c != nil {
		return c.tx
	}
	return nil
}

// serveAudited serves an audited request: the change and its entry
// commit together, and the answer is sent after the commit.
func (rt *Router) serveAudited(w http.ResponseWriter, r *http.Request, route Route, serve http.Handler) {
	pattern := route.Pattern
	if rt.audit == nil {
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "this server keeps no audit log, so it makes no change an audit log records"})
		return
	}
	ctx := r.Context()
	c := &change{pattern: pattern}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(r.Body, &limitedBuffer{b: &c.body, max: maxAuditedBody}), r.Body}
	if route.serving != recordsItself {
		tx, err := rt.audit.Begin(ctx)
		if err != nil {
			rt.log.Error("opening an admin change's transaction failed", "route", pattern, "error", err)
			WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the change cannot be made now; retry"})
			return
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		c.tx = tx
	}
	held := &heldResponse{header: http.Header{}, status: http.StatusOK}
	serve.ServeHTTP(held, r.WithContext(context.WithValue(ctx, changeKey{}, c)))
	if c.tx != nil && !c.settled && held.status < 400 {
		if prob := rt.settle(r, c, held.status); prob != nil {
			WriteProblem(w, r, *prob)
			return
		}
	}
	held.sendTo(w)
}

// commit records the request's change and commits it now, before the
// handler answers, for a handler with work that must follow the commit;
// status is the answer it means to give. false: the change is rolled
// back and the answer (503) written.
func (rt *Router) commit(w http.ResponseWriter, r *http.Request, status int) bool {
	c := changeOf(r)
	if c == nil || c.tx == nil || c.settled {
		rt.log.Error("a handler committed outside an audited change", "route", r.Pattern)
		WriteProblem(w, r, Problem{Status: http.StatusInternalServerError, Detail: "this route is wired wrong; report it"})
		return false
	}
	if prob := rt.settle(r, c, status); prob != nil {
		WriteProblem(w, r, *prob)
		return false
	}
	return true
}

// settle writes the change's entry in its transaction and commits, or
// rolls it back and says why (503).
func (rt *Router) settle(r *http.Request, c *change, status int) *Problem {
	c.settled = true
	ctx := context.WithoutCancel(r.Context())
	detail := map[string]any{"status": status}
	if c.body.Len() > 0 {
		if json.Valid(c.body.Bytes()) {
			detail["request"] = json.RawMessage(c.body.Bytes())
		} else {
			detail["request"] = strings.ToValidUTF8(c.body.String(), "\uFFFD")
		}
	}
	if err := rt.audit.Record(ctx, c.tx, actorOf(r), c.pattern, r.URL.Path, detail); err != nil {
		_ = c.tx.Rollback(ctx)
		rt.log.Error("an admin change's audit entry could not be written: the change is rolled back", "route", c.pattern, "path", r.URL.Path, "error", err)
		return &Problem{Status: http.StatusServiceUnavailable, Detail: "nothing was changed: the change's audit entry could not be written; retry"}
	}
	if err := c.tx.Commit(ctx); err != nil {
		rt.log.Error("an admin change did not commit", "route", c.pattern, "path", r.URL.Path, "error", err)
		return &Problem{Status: http.StatusServiceUnavailable, Detail: "the change and its audit entry could not be committed now; retry"}
	}
	return nil
}

// record writes an entry for r's change in tx, one of the transactions a
// route that records itself commits in.
func (rt *Router) record(ctx context.Context, tx pgx.Tx, r *http.Request, detail any) error {
	return rt.audit.Record(ctx, tx, actorOf(r), r.Pattern, r.URL.Path, detail)
}

// recordCancel is a cancel's payment.Record: an entry in each of its
// transactions that cancelled payments, with what was asked (detail) and
// how many that transaction cancelled.
func (rt *Router) recordCancel(r *http.Request, detail map[string]any) payment.Record {
	return rt.recordCount(r, detail, "cancelled")
}

// heldResponse holds an audited request's answer until its change has
// committed: a change that could not be recorded is answered 503, not
// with what its handler wrote (a Location, a success).
type heldResponse struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if !h.wrote {
		h.status, h.wrote = status, true
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	h.wrote = true
	return h.body.Write(b)
}

func (h *heldResponse) sendTo(w http.ResponseWriter) {
	maps.Copy(w.Header(), h.header)
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body.Bytes())
}

// maxOperator bounds the X-Operator header, which is stored with what
// the operator did.
const maxOperator = 128

// actorHeaders name who acts; each is stored with what is done (the
// audit log, a process's log, an FX rate's setBy).
var actorHeaders = []string{OperatorHeader}

// checkActor refuses, on every route and before anything is done, a
// header naming who acts that could not be stored as sent: more than one,
// too long, not UTF-8, or with a control character. Stored altered, or
// refused by PostgreSQL after the change, it would leave the change
// without its record.
func checkActor(r *http.Request) *Problem {
	for _, h := range actorHeaders {
		vs := r.Header.Values(h)
		if len(vs) == 0 {
			continue
		}
		if len(vs) == 1 && len(vs[0]) <= maxOperator && plaintext.Valid(vs[0]) {
			continue
		}
		return &Problem{Status: http.StatusBadRequest, Title: "Invalid " + h + " header",
			Detail: fmt.Sprintf("%s names who acts: once, at most %d bytes of UTF-8 text without control characters, e.g. ops-anna; nothing was done", h, maxOperator),
			Errors: []field.Error{{Field: h, Detail: fmt.Sprintf("once, at most %d bytes of text", maxOperator)}}}
	}
	return nil
}

// operatorOf is who asks for an operator action: the X-Operator header
// (checked by the router), "admin-api" without it.
func operatorOf(r *http.Request) string {
	if op := r.Header.Get(OperatorHeader); op != "" {
		return op
	}
	return "admin-api"
}

// actorOf names who made a request: its token, and the operator it names.
func actorOf(r *http.Request) string {
	actor := "anonymous"
	if p, ok := auth.FromContext(r.Context()); ok {
		actor = p.TokenID
		if p.Name != "" {
			actor += " (" + p.Name + ")"
		}
	}
	if op := r.Header.Get(OperatorHeader); op != "" {
		actor += " as " + op
	}
	return actor
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// list serves GET /admin/audit (paged: limit, cursor), newest first.
func (api *auditAPI) list(w http.ResponseWriter, r *http.Request) {
	p, prob := readPage(r, seqPosition)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	before, _ := strconv.ParseInt(p.after, 10, 64)
	entries, next, err := api.audit.List(r.Context(), p.limit, before)
	if err != nil {
		api.rt.log.Error("reading the audit log failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the audit log cannot be read now; retry"})
		return
	}
	cursor := ""
	if next > 0 {
		cursor = p.cursor(strconv.FormatInt(next, 10))
	}
	WriteJSON(w, http.StatusOK, listJSON("entries", entries, cursor))
}
