package process

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Status is where a process is in its life (see doc.go for the machine).
type Status string

const (
	StatusNew                Status = "NEW"
	StatusRunning            Status = "RUNNING"
	StatusSucceeded          Status = "SUCCEEDED"
	StatusFailed             Status = "FAILED"
	StatusCompensating       Status = "COMPENSATING"
	StatusCompensated        Status = "COMPENSATED"
	StatusPaused             Status = "PAUSED"
	StatusCompensationFailed Status = "COMPENSATION_FAILED"
)

// Final reports whether a runner has nothing left to do. FAILED and
// COMPENSATION_FAILED are final for a runner, not for an operator, who may
// retry them.
func (s Status) Final() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusCompensated, StatusCompensationFailed:
		return true
	}
	return false
}

func (s Status) in(set ...Status) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// Event names a process_log entry.
type Event string

const (
	// EventProcessStarted: the instance was created, NEW at its initial
	// step (the entry's step); detail {"data": initial data}.
	EventProcessStarted Event = "ProcessStarted"
	// EventStepStarted: an attempt of a step began. Always written in the
	// same transaction as how the attempt ended (StepCompleted, StepFailed,
	// StepTimedOut), so the log never shows an attempt in flight.
	EventStepStarted Event = "StepStarted"
	// EventStepCompleted: the step's effect is committed; detail
	// {"result": the top-level keys of the data the step changed (null:
	// removed), "next": next step or ""}.
	EventStepCompleted Event = "StepCompleted"
	// EventStepFailed: an attempt failed with a business error and was
	// rolled back; detail {"message", "retryable", "retry"} (retry: another
	// attempt follows).
	EventStepFailed Event = "StepFailed"
	// EventStepTimedOut: an attempt ran past the step's deadline and was
	// rolled back; code TIMEOUT, treated as a retryable failure.
	EventStepTimedOut Event = "StepTimedOut"
	// EventCompensationStarted: an attempt of a compensation step began
	// (paired like StepStarted).
	EventCompensationStarted Event = "CompensationStarted"
	// EventCompensationCompleted: a compensation's effect is committed;
	// detail {"result", "compensates": the step undone, "next"}.
	EventCompensationCompleted Event = "CompensationCompleted"
	// EventCompensationFailed: a compensation attempt failed and was
	// rolled back (detail as StepFailed).
	EventCompensationFailed Event = "CompensationFailed"
	// EventProcessCompleted: the last step completed: SUCCEEDED.
	EventProcessCompleted Event = "ProcessCompleted"
	// EventProcessFailed: a step failed for good and nothing completed
	// needs compensation: FAILED at that step.
	EventProcessFailed Event = "ProcessFailed"
	// EventProcessCompensating: compensation begins at the entry's step;
	// detail {"plan": compensation steps in order}.
	EventProcessCompensating Event = "ProcessCompensating"
	// EventProcessCompensated: every completed step that needed it is
	// undone: COMPENSATED.
	EventProcessCompensated Event = "ProcessCompensated"
	// EventProcessCompensationFailed: a compensation failed for good:
	// COMPENSATION_FAILED at that compensation step; an operator must act.
	EventProcessCompensationFailed Event = "ProcessCompensationFailed"
	// EventProcessPaused: an operator paused the process; detail
	// {"resumeStatus"}.
	EventProcessPaused Event = "ProcessPaused"
	// EventProcessResumed: an operator resumed it to the status it had.
	EventProcessResumed Event = "ProcessResumed"
	// EventOperatorRetry: an operator retried a FAILED process at its
	// failed step (RUNNING) or a COMPENSATION_FAILED one at its failed
	// compensation (COMPENSATING); detail {"workflowId"} of the runner.
	EventOperatorRetry Event = "OperatorRetry"
	// EventOperatorCompensate: an operator forced compensation. Followed in
	// the same transaction by ProcessCompensating, or ProcessCompensated
	// when nothing completed needs undoing.
	EventOperatorCompensate Event = "OperatorCompensate"
	// EventRunnerAttached: another workflow now drives the process (a
	// re-run caller, or a runner an operator action started); detail
	// {"workflowId"}. Changes no status.
	EventRunnerAttached Event = "RunnerAttached"
)

// SystemActor is the actor of every entry no operator asked for.
const SystemActor = "system"

// stepData is a process's data decoded into its definition's D for one
// step: the handler edits it, Next reads it, encode gives it back to
// store. It is decoded once; encoded before the handler as well as after,
// since comparing the two is how a step's result is known.
type stepData interface {
	handle(ctx context.Context, tx pgx.Tx, in StepInput) error
	next(step string) (string, error)
	// encode is the data to store, and the step's result: the top-level
	// keys whose value the step changed, null for one it removed.
	encode() (data, result []byte, err error)
}

type typedData[D any] struct {
	def    *Definition[D]
	data   D
	before []byte
}

func decodeStep[D any](def *Definition[D], b []byte) (stepData, error) {
	t := &typedData[D]{def: def}
	if err := decodeData(b, &t.data, false); err != nil {
		return nil, err
	}
	var err error
	if t.before, err = encodeData(t.data); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *typedData[D]) handle(ctx context.Context, tx pgx.Tx, in StepInput) error {
	return t.def.Steps[in.Step].Handler(ctx, tx, in, &t.data)
}

// handleGroup runs def's group handler of step on data, each a
// *typedData[D] of def's.
func handleGroup[D any](ctx context.Context, def *Definition[D], tx pgx.Tx, step string, in []StepInput, data []stepData) ([]error, error) {
	typed := make([]*D, len(data))
	for i, d := range data {
		t, ok := d.(*typedData[D])
		if !ok {
			return nil, fmt.Errorf("process %s: step %s: data of another definition", def.Type, step)
		}
		typed[i] = &t.data
	}
	errs, err := def.Steps[step].Group(ctx, tx, in, typed)
	if err == nil && errs != nil && len(errs) != len(in) {
		err = fmt.Errorf("process %s: step %s: the group handler answered %d errors for %d processes", def.Type, step, len(errs), len(in))
	}
	return errs, err
}

func (t *typedData[D]) next(step string) (string, error) { return t.def.Next(step, t.data) }

func (t *typedData[D]) encode() ([]byte, []byte, error) {
	after, err := encodeData(t.data)
	if err != nil {
		return nil, nil, err
	}
	result, err := changes(t.before, after)
	return after, result, err
}

// normalize is initial data as D encodes it. It refuses keys D has no
// field for: they would be lost without a word.
func normalize[D any](b []byte) ([]byte, error) {
	var d D
	if err := decodeData(b, &d, true); err != nil {
		return nil, err
	}
	return encodeData(d)
}

// decodeData decodes stored data into d with UseNumber: a number in an
// untyped field (any, a map) stays exact, where a float64 would round
// amounts and large identifiers. Empty is {}. Keys d has no field for are
// ignored, unless strict.
func decodeData(b []byte, d any, strict bool) error {
	if len(b) == 0 {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(d); err != nil {
		return fmt.Errorf("process: decode data into %T: %w", d, err)
	}
	return nil
}

// encodeData encodes d, which must come out a JSON object (a nil map is {}).
func encodeData(d any) ([]byte, error) {
	b, err := json.Marshal(d)
	switch {
	case err != nil:
		return nil, fmt.Errorf("process: encode data: %w", err)
	case string(b) == "null":
		return []byte("{}"), nil
	case b[0] != '{':
		return nil, fmt.Errorf("process: data of type %T encodes to %.20s, not a JSON object", d, b)
	}
	return b, nil
}

// changes lists the top-level keys of after whose value differs from
// before's, and those after lacks as null: a step's result, for its inbox
// row and its log entry.
func changes(before, after []byte) ([]byte, error) {
	var b, a map[string]json.RawMessage
	if err := json.Unmarshal(before, &b); err != nil {
		return nil, fmt.Errorf("process: data: %w", err)
	}
	if err := json.Unmarshal(after, &a); err != nil {
		return nil, fmt.Errorf("process: data: %w", err)
	}
	out := map[string]json.RawMessage{}
	for k, v := range a {
		if !bytes.Equal(b[k], v) {
			out[k] = v
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out[k] = json.RawMessage("null")
		}
	}
	return json.Marshal(out)
}

// idNamespace is the fixed UUID v5 namespace of process ids.
var idNamespace = uuid.UUID{0x4c, 0xcd, 0x20, 0xe7, 0xe2, 0xa6, 0x4e, 0x5d, 0xbf, 0xe6, 0xec, 0x74, 0x43, 0xdd, 0xc9, 0xab}

// ID is the process id of a type and business key: a UUID v5, the same on
// every call, so a re-run of the caller's workflow finds its process.
func ID(processType, businessKey string) uuid.UUID {
	return uuid.NewSHA1(idNamespace, []byte(processType+"\x00"+businessKey))
}

// idempotencyKey is a step's inbox key: <processId>:<STEP>, or
// <processId>:COMPENSATE:<STEP> for a compensation step.
func idempotencyKey(id uuid.UUID, step string, compensation bool) string {
	if compensation {
		return id.String() + ":COMPENSATE:" + step
	}
	return id.String() + ":" + step
}
