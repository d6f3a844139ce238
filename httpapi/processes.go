package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/process"
)

// Processes is what the process endpoints need: reading (process.Get and
// Log on the database) and the operator's actions (process.Operator).
type Processes interface {
	Get(ctx context.Context, id uuid.UUID) (process.Instance, error)
	Log(ctx context.Context, id uuid.UUID) ([]process.LogEntry, error)
	Retry(ctx context.Context, id uuid.UUID, actor string) (process.Instance, error)
	Compensate(ctx context.Context, id uuid.UUID, actor string) (process.Instance, error)
	Pause(ctx context.Context, id uuid.UUID, actor string) (process.Instance, error)
	Resume(ctx context.Context, id uuid.UUID, actor string) (process.Instance, error)
}

// processView is a process with its whole log.
type processView struct {
	process.Instance
	Log []process.LogEntry `json:"log"`
}

// HandleProcesses adds GET /v1/processes/{id} (the process and its log)
// and POST /admin/processes/{id}/retry|compensate|pause|resume. An action
// is recorded in the process's log with who asked (the X-Operator header,
// default "admin-api"); an action the process's status does not allow is
// 409, naming the status.
func (rt *Router) HandleProcesses(p Processes) {
	parse := func(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
		id, err := uuid.Parse(r.PathValue("id"))
		if err != nil {
			WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no process " + plaintext.Clip(r.PathValue("id"), 64) + ": a process id is a UUID"})
			return uuid.Nil, false
		}
		return id, true
	}
	rt.Handle("GET /v1/processes/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := parse(w, r)
		if !ok {
			return
		}
		inst, err := p.Get(r.Context(), id)
		if err == nil && !tenantAllowed(r, tenantOf(inst.Data)) {
			err = process.ErrNotFound // another tenant's process does not exist for this caller
		}
		var log []process.LogEntry
		if err == nil {
			log, err = p.Log(r.Context(), id)
		}
		switch {
		case errors.Is(err, process.ErrNotFound):
			WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no process " + id.String()})
		case err != nil:
			rt.log.Error("reading a process failed", "process", id, "error", err)
			WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the process cannot be read now; retry"})
		default:
			if log == nil {
				log = []process.LogEntry{}
			}
			WriteJSON(w, http.StatusOK, processView{Instance: inst, Log: log})
		}
	}))
	actions := map[string]func(context.Context, uuid.UUID, string) (process.Instance, error){
		"retry": p.Retry, "compensate": p.Compensate, "pause": p.Pause, "resume": p.Resume,
	}
	for name, act := range actions {
		rt.Handle("POST /admin/processes/{id}/"+name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, ok := parse(w, r)
			if !ok {
				return
			}
			actor, ok := operator(w, r)
			if !ok {
				return
			}
			inst, err := act(r.Context(), id, actor)
			switch {
			case errors.Is(err, process.ErrNotFound):
				WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no process " + id.String()})
			case errors.Is(err, process.ErrWrongStatus):
				WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Not in a status for " + name, Detail: err.Error()})
			case err != nil:
				rt.log.Error("a process action failed", "process", id, "action", name, "error", err)
				WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the action could not be taken now; retry"})
			default:
				WriteJSON(w, http.StatusOK, inst)
			}
		}))
	}
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

// maxOperator bounds the X-Operator header, which is stored with what
// the operator did.
const maxOperator = 128

// operator is who asks for an operator action (the X-Operator header;
// "admin-api" without it). A value that cannot be recorded as it is —
// too long, not UTF-8, control characters — is refused with 400 rather
// than stored altered.
func operator(w http.ResponseWriter, r *http.Request) (string, bool) {
	op := r.Header.Get(OperatorHeader)
	if op == "" {
		return "admin-api", true
	}
	valid := len(op) <= maxOperator && utf8.ValidString(op)
	for _, c := range op {
		if unicode.IsControl(c) {
			valid = false
		}
	}
	if !valid {
		WriteProblem(w, r, Problem{Status: http.StatusBadRequest, Title: "Invalid " + OperatorHeader + " header",
			Detail: fmt.Sprintf("%s: at most %d bytes of UTF-8 text without control characters, e.g. ops-anna", OperatorHeader, maxOperator),
			Errors: []FieldError{{Field: OperatorHeader, Detail: fmt.Sprintf("at most %d bytes of text", maxOperator)}}})
		return "", false
	}
	return op, true
}
