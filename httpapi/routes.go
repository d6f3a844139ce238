package httpapi

import (
	"net/http"
	"slices"

	"github.com/paydispatch/paydispatch/auth"
)

// Route is one row of the API's table: a method and path (a ServeMux
// pattern, "POST /v1/payments"), the scope a token needs for it, the
// handler that serves it, the body it takes and how the router serves it.
type Route struct {
	Pattern string
	// Scope is the scope the route needs, or Public for none. A route
	// without one needs admin, so a route added without thought is
	// closed, not open.
	Scope   auth.Scope
	Handler http.HandlerFunc
	// body is what the route takes as its request body (noBody: its body,
	// if any, is never read, so it needs no Content-Type either: POST
	// /admin/processes/{id}/pause and the like).
	body bodyKind
	// serving says whether the route is idempotent or records itself.
	serving serving
}

// serving is what the router does around a route's handler besides
// checking its token and body.
type serving int

const (
	// plain: nothing more.
	plain serving = iota
	// idempotent: a creating POST that honours Idempotency-Key (see
	// RouterConfig.IdempotencyKeys).
	idempotent
	// recordsItself: an audited route whose change commits in
	// transactions of its own, by design: a cancel commits each statement
	// on its own (payment.Record), a filter's requeue a page at a time
	// (deadletter.Request.Record), a release after pacing outside its
	// transaction, a pause, a resume and a change of priority in the
	// transaction that moves the payments. Its handler records, inside
	// each of those transactions, what it changed.
	recordsItself
)

// Public marks a route that answers without a token: probes and scrapes,
// the contract, and the operator console's page and files, which hold no
// data (the console's script calls the API with the token its operator
// or checker signs in with).
const Public auth.Scope = "public"

// Services are what the routes stand on. Each route is served when the
// service it needs is given (RouterConfig.Services); NewRouter mounts them.
type Services struct {
	// Payments serves the payments. If it is also StatusReports or
	// HeldPayments, the status report and release routes are served.
	Payments Payments
	// Levers move what waits when an operator changes a limit; the pauses
	// and priorities are served.
	Levers          Levers
	Pacer           Pacer
	DispatchConfigs DispatchConfigs
	Accounts        Accounts
	FXRates         FXRates
	Processes       Processes
	// Audit keeps the audited routes' changes; without it they are
	// refused (503).
	Audit       AuditLog
	Webhooks    Webhooks
	EventTypes  []string // the event types a webhook endpoint may ask for
	DeadLetters DeadLetters
	Rails       Rails
	// Console is the operator console (package console).
	Console Console
	// Metrics serves GET /metrics (Prometheus).
	Metrics http.Handler
	// Contract serves GET /openapi.json.
	Contract bool

	probes bool // /healthz and /readyz, NewRouter's
}

// Console is the operator console's handlers (package console).
type Console interface {
	// Page serves the console's page; File its script and style sheet.
	Page(w http.ResponseWriter, r *http.Request)
	File(w http.ResponseWriter, r *http.Request)
	// Stats serves the figures its charts draw.
	Stats(w http.ResponseWriter, r *http.Request)
}

// routes is the API: every route, in one table, that the services given
// serve. A search for a route ("POST /v1/payments") finds its row here,
// and its row names its handler.
func (rt *Router) routes(s Services) []Route {
	var (
		payments    = newPaymentsAPI(rt, s.Payments)
		levers      = &leversAPI{rt: rt, levers: s.Levers}
		pacer       = &pacingAPI{rt: rt, pacer: s.Pacer}
		dispatch    = &dispatchConfigAPI{rt: rt, configs: s.DispatchConfigs}
		accounts    = &accountsAPI{rt: rt, accounts: s.Accounts}
		rates       = &fxRatesAPI{rt: rt, rates: s.FXRates}
		processes   = &processesAPI{rt: rt, processes: s.Processes}
		audit       = &auditAPI{rt: rt, audit: s.Audit}
		hooks       = &webhooksAPI{rt: rt, hooks: s.Webhooks, eventTypes: s.EventTypes}
		deadLetters = &deadLettersAPI{rt: rt, deadLetters: s.DeadLetters}
		rails       = &railsAPI{rt: rt, rails: s.Rails}
		approvals   = &approvalsAPI{rt: rt}
	)
	approvals.approvals, _ = s.Payments.(Approvals)
	// A method value of a nil interface panics: these are taken only when
	// their routes are served.
	var metrics, consolePage, consoleFile, consoleStats http.HandlerFunc
	if s.Metrics != nil {
		metrics = s.Metrics.ServeHTTP
	}
	if s.Console != nil {
		consolePage, consoleFile, consoleStats = s.Console.Page, s.Console.File, s.Console.Stats
	}
	var routes []Route
	add := func(served bool, rows ...Route) {
		if served {
			routes = append(routes, rows...)
		}
	}
	add(s.probes,
		Route{"GET /healthz", Public, rt.healthz, noBody, plain},
		Route{"GET /readyz", Public, rt.readyz, noBody, plain},
	)
	add(s.Contract,
		Route{"GET /openapi.json", Public, serveOpenAPI, noBody, plain},
	)
	add(s.Metrics != nil,
		Route{"GET /metrics", Public, metrics, noBody, plain},
	)
	add(s.Payments != nil,
		Route{"POST /v1/payments", auth.PaymentsWrite, payments.create, jsonBody, idempotent},
		Route{"GET /v1/payments", auth.PaymentsRead, payments.list, noBody, plain},
		Route{"GET /v1/payments/{id}", auth.PaymentsRead, payments.get, noBody, plain},
		Route{"POST /v1/payments/{id}/cancel", auth.PaymentsWrite, payments.cancel, noBody, recordsItself},
		Route{"POST /v1/payment-batches", auth.PaymentsWrite, payments.createBatch, bulkFileBody, idempotent},
		Route{"GET /v1/payment-batches/{id}", auth.PaymentsRead, payments.getBatch, noBody, plain},
		Route{"GET /v1/payment-batches/{id}/rejections", auth.PaymentsRead, payments.batchRejections, noBody, plain},
		Route{"POST /v1/payment-batches/{id}/cancel", auth.PaymentsWrite, payments.cancelBatch, noBody, recordsItself},
		Route{"POST /admin/payments/cancel", auth.Admin, payments.cancelWhere, jsonBody, recordsItself},
	)
	add(payments.reports != nil,
		Route{"GET /v1/payment-batches/{id}/status-report", auth.PaymentsRead, payments.statusReport, noBody, plain},
	)
	add(approvals.approvals != nil,
		Route{"POST /v1/payments/approve", auth.PaymentsApprove, approvals.approve, jsonBody, recordsItself},
		Route{"POST /v1/payments/deny", auth.PaymentsApprove, approvals.deny, jsonBody, recordsItself},
		Route{"POST /admin/approval-rules", auth.Admin, approvals.putRules, tableJSONBody, plain},
		Route{"GET /admin/approval-rules", auth.Admin, approvals.listRules, noBody, plain},
	)
	add(payments.held != nil,
		Route{"POST /admin/payments/release", auth.Admin, payments.release, tableJSONBody, recordsItself},
		Route{"POST /admin/payments/reject", auth.Admin, payments.reject, tableJSONBody, recordsItself},
	)
	add(s.Levers != nil,
		Route{"POST /v1/payments/{id}/priority", auth.PaymentsWrite, levers.setPriority, jsonBody, recordsItself},
		Route{"POST /v1/payment-batches/{id}/priority", auth.PaymentsWrite, levers.setBatchPriority, jsonBody, recordsItself},
		Route{"POST /admin/pauses", auth.Admin, levers.pause, jsonBody, recordsItself},
		Route{"GET /admin/pauses", auth.Admin, levers.listPauses, noBody, plain},
		Route{"DELETE /admin/pauses/{scope}/{id}", auth.Admin, levers.resume, noBody, recordsItself},
		Route{"POST /admin/rate-limit/config/{name}/repace", auth.Admin, levers.repace, noBody, plain},
	)
	add(s.Pacer != nil,
		Route{"POST /api/v1/slots", auth.Admin, pacer.assignSlot, jsonBody, plain},
		Route{"POST /api/v1/slots/bulk", auth.Admin, pacer.assignSlots, bigJSONBody, plain},
		Route{"POST /admin/rate-limit/config", auth.Admin, pacer.putConfig, jsonBody, plain},
		Route{"GET /admin/rate-limit/config", auth.Admin, pacer.listConfigs, noBody, plain},
		Route{"GET /admin/rate-limit/config/{name}", auth.Admin, pacer.getConfig, noBody, plain},
		Route{"POST /admin/rate-limit/config/{name}/deactivate", auth.Admin, pacer.deactivateConfig, noBody, plain},
		Route{"POST /admin/rate-limit/cache/flush", auth.Admin, pacer.flushCache, noBody, plain},
	)
	add(s.DispatchConfigs != nil,
		Route{"GET /admin/dispatch/config", auth.Admin, dispatch.list, noBody, plain},
		Route{"GET /admin/dispatch/config/{itemType}", auth.Admin, dispatch.get, noBody, plain},
		Route{"PATCH /admin/dispatch/config/{itemType}", auth.Admin, dispatch.patch, jsonBody, plain},
	)
	add(s.Accounts != nil,
		Route{"POST /v1/accounts", auth.AccountsWrite, accounts.create, jsonBody, idempotent},
		Route{"GET /v1/accounts/{id}", auth.PaymentsRead, accounts.get, noBody, plain},
	)
	add(s.FXRates != nil,
		Route{"POST /admin/fx-rates", auth.Admin, rates.set, jsonBody, plain},
		Route{"GET /admin/fx-rates", auth.Admin, rates.list, noBody, plain},
	)
	add(s.Processes != nil,
		Route{"GET /v1/processes/{id}", auth.PaymentsRead, processes.get, noBody, plain},
		Route{"POST /admin/processes/{id}/retry", auth.Admin, processes.retry, noBody, plain},
		Route{"POST /admin/processes/{id}/compensate", auth.Admin, processes.compensate, noBody, plain},
		Route{"POST /admin/processes/{id}/pause", auth.Admin, processes.pause, noBody, plain},
		Route{"POST /admin/processes/{id}/resume", auth.Admin, processes.resume, noBody, plain},
	)
	add(s.Audit != nil,
		Route{"GET /admin/audit", auth.Admin, audit.list, noBody, plain},
	)
	// A tenant manages its own endpoints, under /admin as operators do.
	add(s.Webhooks != nil,
		Route{"POST /admin/webhooks", auth.WebhooksWrite, hooks.register, jsonBody, plain},
		Route{"GET /admin/webhooks", auth.WebhooksWrite, hooks.list, noBody, plain},
		Route{"GET /admin/webhooks/{id}", auth.WebhooksWrite, hooks.get, noBody, plain},
		Route{"DELETE /admin/webhooks/{id}", auth.WebhooksWrite, hooks.delete, noBody, plain},
		Route{"POST /admin/webhooks/{id}/rotate-secret", auth.WebhooksWrite, hooks.rotateSecret, jsonBody, plain},
		Route{"GET /admin/webhooks/{id}/deliveries", auth.WebhooksWrite, hooks.deliveries, noBody, plain},
		Route{"POST /admin/webhooks/{id}/redrive", auth.WebhooksWrite, hooks.redrive, jsonBody, plain},
	)
	add(s.DeadLetters != nil,
		Route{"GET /admin/dead-letters", auth.Admin, deadLetters.list, noBody, plain},
		Route{"POST /admin/dead-letters/requeue", auth.Admin, deadLetters.requeue, jsonBody, recordsItself},
	)
	add(s.Rails != nil,
		Route{"POST /admin/rails", auth.Admin, rails.putRail, jsonBody, plain},
		Route{"GET /admin/rails", auth.Admin, rails.listRails, noBody, plain},
		Route{"GET /admin/rails/{name}", auth.Admin, rails.getRail, noBody, plain},
		Route{"POST /admin/calendars", auth.Admin, rails.putCalendar, tableJSONBody, plain},
		Route{"GET /admin/calendars", auth.Admin, rails.listCalendars, noBody, plain},
		Route{"GET /admin/calendars/{name}", auth.Admin, rails.getCalendar, noBody, plain},
		Route{"POST /admin/routing-rules", auth.Admin, rails.putRules, tableJSONBody, plain},
		Route{"GET /admin/routing-rules", auth.Admin, rails.listRules, noBody, plain},
		Route{"POST /admin/cutoff-rules", auth.Admin, rails.setCutoffRule, jsonBody, plain},
		Route{"GET /admin/cutoff-rules", auth.Admin, rails.listCutoffRules, noBody, plain},
		Route{"POST /admin/control-settings", auth.Admin, rails.setControlSettings, jsonBody, plain},
		Route{"GET /admin/control-settings", auth.Admin, rails.listControlSettings, noBody, plain},
	)
	add(s.Console != nil,
		Route{"GET /console", Public, consolePage, noBody, plain},
		Route{"GET /console/{file}", Public, consoleFile, noBody, plain},
		Route{"GET /admin/console/stats", auth.Admin, consoleStats, noBody, plain},
	)
	return routes
}

// mount adds the routes of the services given, and keeps Levers and
// Audit for the routes that use them (NewRouter: the probes, then
// RouterConfig.Services).
func (rt *Router) mount(s Services) {
	if s.Levers != nil {
		rt.levers = s.Levers
	}
	if s.Audit != nil {
		rt.audit = s.Audit
	}
	for _, route := range rt.routes(s) {
		rt.mux.Handle(route.Pattern, route.Handler)
		rt.table = append(rt.table, route)
		rt.rows[route.Pattern] = route
	}
}

// Routes are the routes mounted, in the table's order.
func (rt *Router) Routes() []Route { return slices.Clone(rt.table) }

// RouteScope is the scope a route pattern needs, and whether it is
// public; a pattern not mounted (or mounted without a scope) needs admin.
func (rt *Router) RouteScope(pattern string) (scope auth.Scope, public bool) {
	switch s := rt.rows[pattern].Scope; s {
	case Public:
		return "", true
	case "":
		return auth.Admin, false
	default:
		return s, false
	}
}
