package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
)

// AuditLog is the admin audit log (audit.Log).
type AuditLog interface {
	Record(ctx context.Context, actor, action, target string, detail any) error
	List(ctx context.Context, limit int, before int64) ([]audit.Entry, int64, error)
}

// HandleAudit records every change made through /admin/* (a request other
// than GET that succeeded: who, the route, the path, the request body up
// to 4 KiB) and adds GET /admin/audit (paged: limit, cursor), newest first.
func (rt *Router) HandleAudit(a AuditLog) {
	rt.audit = a
	rt.Handle("GET /admin/audit", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, prob := readPage(r, seqPosition)
		if prob != nil {
			WriteProblem(w, r, *prob)
			return
		}
		before, _ := strconv.ParseInt(p.after, 10, 64)
		entries, next, err := a.List(r.Context(), p.limit, before)
		if err != nil {
			rt.log.Error("reading the audit log failed", "error", err)
			WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the audit log cannot be read now; retry"})
			return
		}
		cursor := ""
		if next > 0 {
			cursor = p.cursor(strconv.FormatInt(next, 10))
		}
		WriteJSON(w, http.StatusOK, listJSON("entries", entries, cursor))
	}))
}

// audited reports whether r changes something through an admin route.
func (rt *Router) audited(r *http.Request) bool {
	// A cancel by filter and a requeue record their counts themselves
	// (auditCancelWhere, auditRequeue).
	return rt.audit != nil && r.Method != http.MethodGet && r.Method != http.MethodHead && strings.HasPrefix(r.URL.Path, "/admin/") &&
		r.URL.Path != "/admin/payments/cancel" && r.URL.Path != "/admin/dead-letters/requeue"
}

// maxAuditedBody bounds the request body kept in an audit entry.
const maxAuditedBody = 4 << 10

// serveAudited serves r and, if it succeeded, records it.
func (rt *Router) serveAudited(w http.ResponseWriter, r *http.Request, pattern string, serve http.Handler) {
	var body bytes.Buffer
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(r.Body, &limitedBuffer{b: &body, max: maxAuditedBody}), r.Body}
	rw := &recorder{ResponseWriter: w, status: http.StatusOK}
	serve.ServeHTTP(rw, r)
	if rw.status >= 400 {
		return
	}
	actor := actorOf(r)
	detail := map[string]any{"status": rw.status}
	if body.Len() > 0 {
		if json.Valid(body.Bytes()) {
			detail["request"] = json.RawMessage(body.Bytes())
		} else {
			detail["request"] = strings.ToValidUTF8(body.String(), "\uFFFD")
		}
	}
	if err := rt.audit.Record(context.WithoutCancel(r.Context()), actor, pattern, r.URL.Path, detail); err != nil {
		rt.log.Error("recording an admin change in the audit log failed", "route", pattern, "path", r.URL.Path, "error", err)
	}
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
	if op := r.Header.Get(OperatorHeader); op != "" && len(op) <= maxOperator {
		actor += " as " + op
	}
	return actor
}

// auditCancel records a cancel in the audit log: who, what, how many.
func (rt *Router) auditCancel(r *http.Request, what, id, tenant string, cancelled int) {
	if rt.audit == nil {
		return
	}
	detail := map[string]any{what: id, "tenantId": tenant, "cancelled": cancelled}
	if err := rt.audit.Record(context.WithoutCancel(r.Context()), actorOf(r), r.Pattern, r.URL.Path, detail); err != nil {
		rt.log.Error("recording a cancel in the audit log failed", "path", r.URL.Path, "error", err)
	}
}

// auditCancelWhere records an operator's cancel by filter: who, the
// filter, how many it cancelled.
func (rt *Router) auditCancelWhere(r *http.Request, filter any, cancelled int) {
	if rt.audit == nil {
		return
	}
	detail := map[string]any{"filter": filter, "cancelled": cancelled}
	if err := rt.audit.Record(context.WithoutCancel(r.Context()), actorOf(r), r.Pattern, r.URL.Path, detail); err != nil {
		rt.log.Error("recording a cancel in the audit log failed", "path", r.URL.Path, "error", err)
	}
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
