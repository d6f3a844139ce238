package process

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DefaultStepTimeout is a step's deadline when its definition sets none.
// It must stay below the activity timeout (ExecOptions.Timeout), or
// Temporal gives up on the attempt before the step can time out.
const DefaultStepTimeout = 30 * time.Second

// Handler does a step's effect inside tx, the transaction that also
// records the step, and returns what to merge into the process's data. A
// *Error (Failf) is a business failure; any other error an infrastructure
// failure. Either way tx is rolled back: the effect happens exactly when
// the step is recorded as completed.
type Handler func(ctx context.Context, tx pgx.Tx, in StepInput) (Data, error)

// StepInput is what a handler knows of the step it runs.
type StepInput struct {
	ProcessID   uuid.UUID
	ProcessType string
	BusinessKey string
	Step        string
	// Compensates is, for a compensation step, the step it undoes.
	Compensates string
	// Attempt counts the business attempts of this step, from 1. An
	// attempt Temporal retries after an infrastructure failure (rolled
	// back, so never seen) keeps its number.
	Attempt int
	// Data is the process's data so far; the handler's copy.
	Data Data
	// IdempotencyKey is unique to the step in this process, for calls
	// leaving the database: <processId>:<STEP> or
	// <processId>:COMPENSATE:<STEP>.
	IdempotencyKey string
}

// Step is one step of a definition: a forward step or a compensation step.
type Step struct {
	Handler Handler
	// Compensation names the step that undoes this one when a later step
	// fails for good; empty: nothing to undo.
	Compensation string
	// Retryable lists the error codes worth another attempt. TIMEOUT is
	// always retryable.
	Retryable []string
	// MaxRetries caps the attempts after the first that a retryable
	// failure gets.
	MaxRetries int
	// Timeout is the handler's deadline (DefaultStepTimeout when zero).
	Timeout time.Duration
}

func (s Step) retryable(code string) bool {
	return code == CodeTimeout || slices.Contains(s.Retryable, code)
}

func (s Step) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultStepTimeout
}

// Definition is a kind of process, written by a domain.
type Definition struct {
	// Type names the process kind, e.g. "PaymentExecution".
	Type string
	// Initial is the first step.
	Initial string
	// Next is the step after step, given the data with step's result
	// merged; "" when the process is done. It runs inside the step's
	// transaction, so the stored next step is always the one decided from
	// what was applied. A *Error fails the step like its handler would.
	Next func(step string, data Data) (string, error)
	// Steps holds every step by name, forward and compensation alike.
	// Names are unique within a run (a step never runs twice: its inbox
	// key would call it a duplicate) and contain no ':'.
	Steps map[string]Step
	// OnSucceeded runs in the transaction that makes the process
	// SUCCEEDED, whoever drove it there (the caller, or an operator's
	// runner long after), so the domain's own status follows.
	OnSucceeded func(ctx context.Context, tx pgx.Tx, inst Instance) error
	// OnFailed runs in the transaction that makes the process FAILED,
	// COMPENSATED or COMPENSATION_FAILED; code is the failure's
	// (inst.ErrorCode, or the compensation's for COMPENSATION_FAILED).
	OnFailed func(ctx context.Context, tx pgx.Tx, inst Instance, final Status, code string) error
	// GenericPlans runs the handlers' and hooks' statements on plans
	// PostgreSQL keeps for the connection instead of planning each
	// execution (plan_cache_mode force_generic_plan, for the step's
	// transaction); without it they are planned for their values
	// (force_custom_plan). Planning was a fifth of PostgreSQL's CPU a
	// payment. Set it only when every such statement has an index-backed
	// generic plan, checked with EXPLAIN (explain.Options.Generic): a
	// generic plan cannot use the values it runs with to choose.
	GenericPlans bool
}

// Registry holds the definitions the activities and operators know.
type Registry struct {
	defs map[string]*definition
}

// definition is a validated Definition with its reverse index.
type definition struct {
	Definition
	// compensates maps a compensation step to the forward step it undoes.
	compensates map[string]string
}

// NewRegistry validates the definitions and indexes them by type.
func NewRegistry(defs ...Definition) (*Registry, error) {
	r := &Registry{defs: make(map[string]*definition, len(defs))}
	for _, d := range defs {
		v, err := validate(d)
		if err != nil {
			return nil, err
		}
		if _, dup := r.defs[d.Type]; dup {
			return nil, fmt.Errorf("process: definition %q registered twice", d.Type)
		}
		r.defs[d.Type] = v
	}
	return r, nil
}

func validate(d Definition) (*definition, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("process: definition %q: %s", d.Type, fmt.Sprintf(format, args...))
	}
	switch {
	case d.Type == "" || strings.ContainsRune(d.Type, 0):
		return nil, bad("type must be a non-empty string without NUL")
	case d.Next == nil:
		return nil, bad("no Next")
	}
	if _, ok := d.Steps[d.Initial]; !ok {
		return nil, bad("initial step %q is not among its steps", d.Initial)
	}
	v := &definition{Definition: d, compensates: map[string]string{}}
	for name, s := range d.Steps {
		if name == "" || strings.Contains(name, ":") {
			return nil, bad("step name %q: must be non-empty without ':'", name)
		}
		if s.Handler == nil {
			return nil, bad("step %q has no handler", name)
		}
		if s.MaxRetries < 0 {
			return nil, bad("step %q: negative MaxRetries", name)
		}
		if s.Compensation == "" {
			continue
		}
		c, ok := d.Steps[s.Compensation]
		if !ok {
			return nil, bad("step %q: compensation %q is not among its steps", name, s.Compensation)
		}
		if c.Compensation != "" {
			return nil, bad("compensation step %q has a compensation of its own", s.Compensation)
		}
		if other, dup := v.compensates[s.Compensation]; dup {
			return nil, bad("compensation step %q undoes both %q and %q", s.Compensation, other, name)
		}
		v.compensates[s.Compensation] = name
	}
	return v, nil
}

var errUnknownType = errors.New("process: unknown process type")

func (r *Registry) lookup(processType string) (*definition, error) {
	if r != nil {
		if d, ok := r.defs[processType]; ok {
			return d, nil
		}
	}
	return nil, fmt.Errorf("%w %q", errUnknownType, processType)
}

// compensationPlan lists, in the order to run them, the compensation steps
// of the completed forward steps not yet compensated: the reverse of
// completion order. done is the process's StepCompleted and
// CompensationCompleted entries in log order.
func (d *definition) compensationPlan(done []completed) []string {
	undone := map[string]bool{}
	var forward []string
	for _, c := range done {
		if c.compensation {
			undone[c.step] = true
		} else {
			forward = append(forward, c.step)
		}
	}
	var plan []string
	for i := len(forward) - 1; i >= 0; i-- {
		c := d.Steps[forward[i]].Compensation
		if c != "" && !undone[c] {
			plan = append(plan, c)
		}
	}
	return plan
}

// completed is a step whose effect is committed.
type completed struct {
	step         string
	compensation bool
}
