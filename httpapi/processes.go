package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/process"
)

// Processes is what the process endpoints need: reading (process.Get and
// Log on the database) and the operator's actions (process.Operator).
type Processes interface {
	Get(ctx context.Context, id uuid.UUID) (process.Instance, error)
	Log(ctx context.Context, id uuid.UUID) ([]process.LogEntry, error)
	// The actions change the process in the transaction of the change
	// and its audit entry (see auditAPI); the Action drives the
	// process on once that has committed.
	RetryTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string) (process.Action, error)
	CompensateTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string) (process.Action, error)
	PauseTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string) (process.Action, error)
	ResumeTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string) (process.Action, error)
}

// processView is a process with its whole log.
type processView struct {
	process.Instance
	Log []process.LogEntry `json:"log"`
}

// processesAPI serves a process and its log, and an operator's actions
// on it. An action is recorded in the process's log with who asked (the
// X-Operator header, default "admin-api"); an action the process's
// status does not allow is 409, naming the status.
type processesAPI struct {
	rt        *Router
	processes Processes
}

// processID is the route's process id, or false once it has answered 404.
func processID(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no process " + plaintext.Clip(r.PathValue("id"), 64) + ": a process id is a UUID"})
		return uuid.Nil, false
	}
	return id, true
}

// retry serves POST /admin/processes/{id}/retry.
func (api *processesAPI) retry(w http.ResponseWriter, r *http.Request) {
	api.act(w, r, "retry", api.processes.RetryTx)
}

// compensate serves POST /admin/processes/{id}/compensate.
func (api *processesAPI) compensate(w http.ResponseWriter, r *http.Request) {
	api.act(w, r, "compensate", api.processes.CompensateTx)
}

// pause serves POST /admin/processes/{id}/pause.
func (api *processesAPI) pause(w http.ResponseWriter, r *http.Request) {
	api.act(w, r, "pause", api.processes.PauseTx)
}

// resume serves POST /admin/processes/{id}/resume.
func (api *processesAPI) resume(w http.ResponseWriter, r *http.Request) {
	api.act(w, r, "resume", api.processes.ResumeTx)
}

// act takes the action name in the request's audited transaction, and
// drives the process once it has committed.
func (api *processesAPI) act(w http.ResponseWriter, r *http.Request, name string,
	act func(context.Context, pgx.Tx, uuid.UUID, string) (process.Action, error)) {
	id, ok := processID(w, r)
	if !ok {
		return
	}
	a, err := act(r.Context(), changeTx(r), id, operatorOf(r))
	switch {
	case errors.Is(err, process.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no process " + id.String()})
		return
	case errors.Is(err, process.ErrWrongStatus):
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Not in a status for " + name, Detail: err.Error()})
		return
	case err != nil:
		api.rt.log.Error("a process action failed", "process", id, "action", name, "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the action could not be taken now; retry"})
		return
	}
	// A runner started or woken before the commit would find the
	// process as it was.
	if !api.rt.commit(w, r, http.StatusOK) {
		return
	}
	inst, err := a.Drive(r.Context())
	if err != nil {
		api.rt.log.Error("a process action is made, but its runner did not start", "process", id, "action", name, "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable,
			Detail: "the " + name + " is made and recorded (the process is " + string(a.Status) + "), but its runner could not be started now"})
		return
	}
	WriteJSON(w, http.StatusOK, inst)
}

// tenantOf is the tenant a process's data names in its "tenantId" (a
// payment's does), "" for none: the data is the process's own JSON.
func tenantOf(data json.RawMessage) string {
	var d struct {
		TenantID string `json:"tenantId"`
	}
	_ = json.Unmarshal(data, &d) // a tenantId that is no string is none
	return d.TenantID
}

// get serves GET /v1/processes/{id}.
func (api *processesAPI) get(w http.ResponseWriter, r *http.Request) {
	id, ok := processID(w, r)
	if !ok {
		return
	}
	inst, err := api.processes.Get(r.Context(), id)
	if err == nil && !tenantAllowed(r, tenantOf(inst.Data)) {
		err = process.ErrNotFound // another tenant's process does not exist for this caller
	}
	var log []process.LogEntry
	if err == nil {
		log, err = api.processes.Log(r.Context(), id)
	}
	switch {
	case errors.Is(err, process.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no process " + id.String()})
	case err != nil:
		api.rt.log.Error("reading a process failed", "process", id, "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the process cannot be read now; retry"})
	default:
		if log == nil {
			log = []process.LogEntry{}
		}
		WriteJSON(w, http.StatusOK, processView{Instance: inst, Log: log})
	}
}
