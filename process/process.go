package process

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/google/uuid"
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
	// {"result": ..., "next": next step or ""}.
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

// Data is a process's accumulated working data: a JSON object, into which
// every step's result is merged (top-level keys, later steps win). Numbers
// decode as json.Number, so they round-trip exactly; money belongs in
// decimal strings all the same.
type Data map[string]any

// UnmarshalJSON decodes with UseNumber: a float64 would round amounts and
// large identifiers. The Temporal data converter comes through here too.
func (d *Data) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	*d = m
	return nil
}

// String is key's value as text: a string as it is, a number in its exact
// decimal form; "" when key is absent or holds something else.
func (d Data) String(key string) string {
	switch v := d[key].(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

// Bool is key's value when it is a boolean, else false.
func (d Data) Bool(key string) bool {
	b, _ := d[key].(bool)
	return b
}

func decodeData(b []byte) (Data, error) {
	if len(b) == 0 {
		return Data{}, nil
	}
	var d Data
	if err := d.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("process: decode data: %w", err)
	}
	if d == nil {
		d = Data{}
	}
	return d, nil
}

func encodeData(d Data) ([]byte, error) {
	if d == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("process: encode data: %w", err)
	}
	return b, nil
}

// merged returns a copy of d with r's keys set over it.
func (d Data) merged(r Data) Data {
	out := make(Data, len(d)+len(r))
	maps.Copy(out, d)
	maps.Copy(out, r)
	return out
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
