package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/process/internal/dbsqlc"
)

// DB is what the package needs of PostgreSQL: a *pgxpool.Pool, or a
// pgx.Tx (whose Begin is a savepoint).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Instance is a process as stored in process_instance.
type Instance struct {
	ID          uuid.UUID `json:"processId"`
	Type        string    `json:"processType"`
	BusinessKey string    `json:"businessKey"`
	Status      Status    `json:"status"`
	Step        string    `json:"currentStep"`
	// Data is the process's data as stored: its definition's D encoded, a
	// JSON object, for readers that do not know D (an operator's view).
	Data         json.RawMessage `json:"data"`
	Retries      int             `json:"retries"`
	Version      int64           `json:"version"`
	ResumeStatus Status          `json:"resumeStatus,omitempty"`
	// The failure that made the process fail or compensate.
	FailedStep   string `json:"failedStep,omitempty"`
	ErrorCode    string `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	// A compensation that failed for good (COMPENSATION_FAILED at Step).
	CompensationErrorCode    string    `json:"compensationErrorCode,omitempty"`
	CompensationErrorMessage string    `json:"compensationErrorMessage,omitempty"`
	WorkflowID               string    `json:"workflowId,omitempty"`
	CreatedAt                time.Time `json:"createdAt"`
	UpdatedAt                time.Time `json:"updatedAt"`
}

// LogEntry is one process_log row.
type LogEntry struct {
	ProcessID uuid.UUID       `json:"processId"`
	Seq       int64           `json:"seq"`
	At        time.Time       `json:"at"`
	Event     Event           `json:"event"`
	Step      string          `json:"step,omitempty"`
	Attempt   int             `json:"attempt,omitempty"`
	ErrorCode string          `json:"errorCode,omitempty"`
	Detail    json.RawMessage `json:"detail"`
	Actor     string          `json:"actor"`
}

// Get reads a process; ErrNotFound if there is none.
func Get(ctx context.Context, db DB, id uuid.UUID) (Instance, error) {
	row, err := dbsqlc.New(db).GetInstance(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Instance{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Instance{}, fmt.Errorf("process: get %s: %w", id, err)
	}
	return fromRow(row), nil
}

// Log reads a process's entries in order (none for an unknown id).
func Log(ctx context.Context, db DB, id uuid.UUID) ([]LogEntry, error) {
	rows, err := dbsqlc.New(db).ListLog(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("process: log of %s: %w", id, err)
	}
	out := make([]LogEntry, len(rows))
	for i, r := range rows {
		out[i] = LogEntry{
			ProcessID: r.ProcessID, Seq: r.Seq, At: r.At, Event: Event(r.Event), Step: r.Step,
			Attempt: int(r.Attempt), ErrorCode: r.ErrorCode, Detail: r.Detail, Actor: r.Actor,
		}
	}
	return out, nil
}

// MaxListLimit caps a List page.
const MaxListLimit = 1000

// Listed reports whether List lists a status: those an operator looks
// for. NEW, RUNNING and SUCCEEDED, which nearly every process passes
// through, are not indexed by status, so that a step's updates write no
// index entry.
func (s Status) Listed() bool {
	switch s {
	case StatusFailed, StatusCompensating, StatusCompensated, StatusPaused, StatusCompensationFailed:
		return true
	}
	return false
}

// List reads up to limit processes in status (MaxListLimit when limit is
// not in 1..MaxListLimit), least recently changed first, after cursor (""
// for the first page). The returned cursor reads
// the next page; "" when there is none. A process that changes while an
// operator pages moves to the end of its status's order. A status that is
// not Listed is ErrNotListed.
func List(ctx context.Context, db DB, status Status, limit int, cursor string) ([]Instance, string, error) {
	if !status.Listed() {
		return nil, "", fmt.Errorf("%w: %s", ErrNotListed, status)
	}
	if limit <= 0 || limit > MaxListLimit {
		limit = MaxListLimit
	}
	afterAt, afterID, err := parseCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	rows, err := dbsqlc.New(db).ListByStatus(ctx, dbsqlc.ListByStatusParams{
		Status: string(status), AfterAt: afterAt, AfterID: afterID, MaxRows: int32(limit),
	})
	if err != nil {
		return nil, "", fmt.Errorf("process: list %s: %w", status, err)
	}
	out := make([]Instance, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	next := ""
	if len(out) == limit {
		last := out[len(out)-1]
		next = strconv.FormatInt(last.UpdatedAt.UnixMicro(), 10) + "_" + last.ID.String()
	}
	return out, next, nil
}

// parseCursor reads "<updated_at in µs>_<process id>"; "" is the start.
func parseCursor(c string) (time.Time, uuid.UUID, error) {
	if c == "" {
		return time.Time{}, uuid.Nil, nil
	}
	us, id, ok := strings.Cut(c, "_")
	micros, err1 := strconv.ParseInt(us, 10, 64)
	pid, err2 := uuid.Parse(id)
	if !ok || err1 != nil || err2 != nil {
		return time.Time{}, uuid.Nil, fmt.Errorf("%w: %q", ErrInvalidCursor, c)
	}
	return time.UnixMicro(micros), pid, nil
}

func fromRow(r dbsqlc.ProcessInstance) Instance {
	return Instance{
		ID: r.ProcessID, Type: r.ProcessType, BusinessKey: r.BusinessKey, Status: Status(r.Status),
		Step: r.CurrentStep, Data: r.Data, Retries: int(r.Retries), Version: r.Version,
		ResumeStatus: Status(r.ResumeStatus), FailedStep: r.FailedStep, ErrorCode: r.ErrorCode,
		ErrorMessage: r.ErrorMessage, CompensationErrorCode: r.CompensationErrorCode,
		CompensationErrorMessage: r.CompensationErrorMessage, WorkflowID: r.WorkflowID,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// entry is a log entry about to be written.
type entry struct {
	at      time.Time // zero: the transition's time
	event   Event
	step    string
	attempt int
	code    string
	detail  any // JSON-encoded; nil is {}
	actor   string
}

// write stores the transition from → to (to's version and timestamps are
// ignored) with its log entries, guarded by from's version and status.
// ErrVersionConflict when the guard fails.
func write(ctx context.Context, q *dbsqlc.Queries, at time.Time, from, to Instance, entries ...entry) (Instance, error) {
	inst, _, err := writeStep(ctx, q, at, from, to, nil, entries...)
	return inst, err
}

// inboxRow is a step's inbox row, written with the transition that
// completes the step.
type inboxRow struct {
	key, step string
	result    []byte
}

// writeStep is write with the step's inbox row (box nil: none). recorded
// false: the row was there, the step applied before (the caller rolls
// back).
func writeStep(ctx context.Context, q *dbsqlc.Queries, at time.Time, from, to Instance, box *inboxRow, entries ...entry) (inst Instance, recorded bool, err error) {
	data := to.Data
	if len(data) == 0 {
		data = []byte("{}")
	}
	p := dbsqlc.UpdateInstanceParams{
		ProcessID: from.ID, Version: from.Version, ExpectedStatus: string(from.Status),
		Status: string(to.Status), CurrentStep: to.Step, Data: data, Retries: int32(to.Retries),
		ResumeStatus: string(to.ResumeStatus), FailedStep: to.FailedStep, ErrorCode: to.ErrorCode,
		ErrorMessage: to.ErrorMessage, CompensationErrorCode: to.CompensationErrorCode,
		CompensationErrorMessage: to.CompensationErrorMessage, WorkflowID: to.WorkflowID,
	}
	if box != nil {
		p.InboxKey, p.InboxStep, p.InboxResult = &box.key, box.step, box.result
	}
	for _, e := range entries {
		detail, err := e.detailJSON(from.ID)
		if err != nil {
			return Instance{}, false, err
		}
		when := e.at
		if when.IsZero() {
			when = at
		}
		p.Ats = append(p.Ats, when)
		p.Events = append(p.Events, string(e.event))
		p.Steps = append(p.Steps, e.step)
		p.Attempts = append(p.Attempts, int32(e.attempt))
		p.ErrorCodes = append(p.ErrorCodes, e.code)
		p.Details = append(p.Details, string(detail))
		p.Actors = append(p.Actors, e.actorName())
	}
	row, err := q.UpdateInstance(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return Instance{}, false, fmt.Errorf("%w: %s changed since version %d", ErrVersionConflict, from.ID, from.Version)
	}
	if err != nil {
		return Instance{}, false, fmt.Errorf("process %s: update: %w", from.ID, err)
	}
	inst = fromRow(dbsqlc.ProcessInstance{
		ProcessID: row.ProcessID, ProcessType: row.ProcessType, BusinessKey: row.BusinessKey, Status: row.Status,
		CurrentStep: row.CurrentStep, Data: row.Data, Retries: row.Retries, Version: row.Version,
		ResumeStatus: row.ResumeStatus, FailedStep: row.FailedStep, ErrorCode: row.ErrorCode, ErrorMessage: row.ErrorMessage,
		CompensationErrorCode: row.CompensationErrorCode, CompensationErrorMessage: row.CompensationErrorMessage,
		WorkflowID: row.WorkflowID, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	})
	return inst, row.InboxRecorded, nil
}

// detailJSON is the entry's detail as the log stores it.
func (e entry) detailJSON(id uuid.UUID) ([]byte, error) {
	if e.detail == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(e.detail)
	if err != nil {
		return nil, fmt.Errorf("process %s: encode %s detail: %w", id, e.event, err)
	}
	return b, nil
}

func (e entry) actorName() string {
	if e.actor == "" {
		return SystemActor
	}
	return e.actor
}

// completedSteps reads which steps and compensations have committed.
func completedSteps(ctx context.Context, q *dbsqlc.Queries, id uuid.UUID) ([]completed, error) {
	rows, err := q.CompletedSteps(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("process %s: completed steps: %w", id, err)
	}
	out := make([]completed, len(rows))
	for i, r := range rows {
		out[i] = completed{step: r.Step, compensation: r.Event == string(EventCompensationCompleted)}
	}
	return out, nil
}
