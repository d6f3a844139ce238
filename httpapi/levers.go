package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
)

// Levers move the payments already waiting when an operator pulls a
// lever (payment.Service).
type Levers interface {
	// RepaceConfig moves the payments waiting under a rate-limit config
	// to its limit as it is now.
	RepaceConfig(ctx context.Context, config string, record payment.Record) (payment.Repaced, error)
}

// HandleLevers makes a change of a rate-limit config move the payments
// waiting under it (the change's answer gains "repaced"), and adds POST
// /admin/rate-limit/config/{name}/repace: the same move again, on its
// own (after a move that failed, or a config changed by another
// process). Each move is audited in its own transaction.
func (rt *Router) HandleLevers(l Levers) {
	rt.levers = l
	rt.Handle("POST /admin/rate-limit/config/{name}/repace", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		res, err := l.RepaceConfig(r.Context(), name, rt.recordCancel(r, map[string]any{"repaced": name}))
		switch {
		case errors.Is(err, pacing.ErrConfigNotFound):
			WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no rate-limit config " + plaintext.Clip(name, 100)})
		case err != nil:
			rt.log.Error("moving the waiting payments failed", "config", name, "error", err)
			WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the waiting payments cannot be moved now; retry: what moved stays so"})
		default:
			WriteJSON(w, http.StatusOK, res)
		}
	}))
}

// repace moves what waits under a changed config, after the change has
// committed; it answers the move, or nil when there are no levers or the
// move failed (logged: the config changed, and the limiter holds each
// execution to it; a repace call moves them later).
func (rt *Router) repace(r *http.Request, config string) *payment.Repaced {
	if rt.levers == nil {
		return nil
	}
	res, err := rt.levers.RepaceConfig(r.Context(), config, rt.recordCancel(r, map[string]any{"repaced": config}))
	if err != nil {
		rt.log.Error("moving the payments waiting under a changed rate-limit config failed; POST /admin/rate-limit/config/{name}/repace moves them",
			"config", config, "error", err)
		return nil
	}
	return &res
}
