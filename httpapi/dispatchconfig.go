package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/queue"
)

// DispatchConfigs reads and changes the item types' dispatch settings
// (queue.Queue).
type DispatchConfigs interface {
	ListConfigs(ctx context.Context) ([]queue.Settings, error)
	GetConfig(ctx context.Context, itemType string) (queue.Settings, error)
	// UpdateConfigTx changes settings in the transaction of the change
	// and its audit entry (see auditAPI).
	UpdateConfigTx(ctx context.Context, tx pgx.Tx, itemType string, changes map[string]string) (queue.Settings, error)
}

// dispatchConfigView is an item type's settings under the keys the CLI's
// `config set` and PATCH take.
type dispatchConfigView struct {
	ItemType                 string `json:"item_type"`
	Enabled                  bool   `json:"enabled"`
	ExecMode                 string `json:"exec_mode"`
	BatchSize                int    `json:"batch_size"`
	DispatchIntervalSecs     int    `json:"dispatch_interval_secs"`
	JitterWindowMs           int64  `json:"jitter_window_ms"`
	PreStartBufferSecs       int    `json:"pre_start_buffer_secs"`
	MaxDispatchRetries       int    `json:"max_dispatch_retries"`
	StaleClaimThresholdSecs  int    `json:"stale_claim_threshold_secs"`
	MaxStaleRecoveryPerCycle int    `json:"max_stale_recovery_per_cycle"`
	MaxInFlight              int    `json:"max_in_flight"`
	PacingConfig             string `json:"pacing_config"`
	PacedLeadMs              int64  `json:"paced_lead_ms"`
	ExecWorkflowType         string `json:"exec_workflow_type"`
	ExecTaskQueue            string `json:"exec_task_queue"`
	UpdatedAt                string `json:"updated_at"`
}

func viewDispatchConfig(c queue.Settings) dispatchConfigView {
	return dispatchConfigView{
		ItemType: c.ItemType, Enabled: c.Enabled, ExecMode: string(c.ExecMode), BatchSize: c.BatchSize,
		DispatchIntervalSecs: int(c.DispatchInterval.Seconds()), JitterWindowMs: c.JitterWindow.Milliseconds(),
		PreStartBufferSecs: int(c.PreStartBuffer.Seconds()), MaxDispatchRetries: c.MaxDispatchRetries,
		StaleClaimThresholdSecs: int(c.StaleClaimThreshold.Seconds()), MaxStaleRecoveryPerCycle: c.MaxStaleRecoveryPerCycle,
		MaxInFlight: c.MaxInFlight, PacingConfig: c.PacingConfig, PacedLeadMs: c.PacedLead.Milliseconds(),
		ExecWorkflowType: c.ExecWorkflowType, ExecTaskQueue: c.ExecTaskQueue, UpdatedAt: c.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
	}
}

// dispatchConfigAPI serves the item types' dispatch settings (admin).
// A PATCH takes a JSON object of the settings to change, under the keys
// `paydispatch config set` takes ({"exec_mode": "BATCH", "batch_size":
// 1000}); the dispatcher applies it at its next cycle, and the change is
// in the admin audit log. A bad key or value changes nothing (422 naming
// it).
type dispatchConfigAPI struct {
	rt      *Router
	configs DispatchConfigs
}

// settingValue reads one setting's JSON value as the text UpdateConfig
// takes.
func settingValue(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return strconv.FormatBool(b), true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if _, err := n.Int64(); err == nil {
			return n.String(), true
		}
	}
	return "", false
}

func (rt *Router) dispatchConfigProblem(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, queue.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Title: "Unknown item type", Detail: "no item type " + strconv.Quote(r.PathValue("itemType")) + " is registered"})
	case errors.Is(err, queue.ErrInvalidConfig):
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid dispatch setting", Detail: "nothing was changed: " + err.Error(),
			Errors: invalidFields(err)})
	default:
		rt.log.Error("dispatch settings", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the dispatch settings cannot be reached now; retry"})
	}
}

// list serves GET /admin/dispatch/config.
func (api *dispatchConfigAPI) list(w http.ResponseWriter, r *http.Request) {
	cs, err := api.configs.ListConfigs(r.Context())
	if err != nil {
		api.rt.dispatchConfigProblem(w, r, err)
		return
	}
	out := make([]dispatchConfigView, len(cs))
	for i, c := range cs {
		out[i] = viewDispatchConfig(c)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"configs": out})
}

// get serves GET /admin/dispatch/config/{itemType}.
func (api *dispatchConfigAPI) get(w http.ResponseWriter, r *http.Request) {
	c, err := api.configs.GetConfig(r.Context(), r.PathValue("itemType"))
	if err != nil {
		api.rt.dispatchConfigProblem(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, viewDispatchConfig(c))
}

// patch serves PATCH /admin/dispatch/config/{itemType}.
func (api *dispatchConfigAPI) patch(w http.ResponseWriter, r *http.Request) {
	var req map[string]json.RawMessage
	if !decodeBody(w, r, &req) {
		return
	}
	changes := make(map[string]string, len(req))
	var fields []field.Error
	for k, raw := range req {
		if !slices.Contains(queue.ConfigKeys(), k) {
			fields = append(fields, field.Error{Field: k, Detail: "unknown setting: use one of " + strings.Join(queue.ConfigKeys(), ", ")})
			continue
		}
		v, ok := settingValue(raw)
		if !ok {
			fields = append(fields, field.Error{Field: k, Detail: "want a string, a whole number or true/false"})
			continue
		}
		changes[k] = v
	}
	if len(fields) > 0 {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid dispatch setting", Detail: "nothing was changed", Errors: fields})
		return
	}
	c, err := api.configs.UpdateConfigTx(r.Context(), changeTx(r), r.PathValue("itemType"), changes)
	if err != nil {
		api.rt.dispatchConfigProblem(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, viewDispatchConfig(c))
}
