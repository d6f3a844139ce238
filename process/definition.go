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
// records the step, and leaves in *data what the process's data is after
// it. A *Failure (Failf) is a business failure; any other error an
// infrastructure failure. Either way tx is rolled back and the changes to
// *data dropped: the effect happens exactly when the step is recorded as
// completed.
//
// The handler edits the data rather than returning a patch to merge: a
// patch of a typed D cannot tell a field the step sets to its zero value
// (false, 0, "") from one it leaves alone, so merging it would lose the
// first. *data is the attempt's own copy, decoded from the stored data
// for it; what the handler leaves there is stored whole.
type Handler[D any] func(ctx context.Context, tx pgx.Tx, in StepInput, data *D) error

// StepInput is what a handler knows of the step it runs; the data comes
// beside it, typed.
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
	// IdempotencyKey is unique to the step in this process, for calls
	// leaving the database: <processId>:<STEP> or
	// <processId>:COMPENSATE:<STEP>.
	IdempotencyKey string
}

// Step is one step of a definition: a forward step or a compensation step.
type Step[D any] struct {
	Handler Handler[D]
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
	// Group, when set, runs the step for several processes at once
	// (Activities.AdvanceGroup), set-based; Handler still runs it for one.
	// Forward steps only.
	Group GroupHandler[D]
}

// GroupHandler does a forward step's effect for a group of processes of
// one definition inside tx, the transaction that records the step for
// all of them: in[i] and data[i] are the i-th process's, as a Handler's.
// It answers, in errs (nil, or one per process), the processes it could
// not do: the engine then rolls back everything the call did, takes
// those processes out of the group and calls it again for the others, so
// the handler need not undo anything. A process taken out runs the step
// alone, through Handler, where its business failure is recorded as
// usual. err fails the call for the whole group: every process runs the
// step alone.
type GroupHandler[D any] func(ctx context.Context, tx pgx.Tx, in []StepInput, data []*D) (errs []error, err error)

// Definition is a kind of process, written by a domain. D is the
// process's data: a type that encodes to a JSON object (a struct, or a
// map), stored as JSON in process_instance.data and decoded into a D once
// for each step.
type Definition[D any] struct {
	// Type names the process kind, e.g. "PaymentExecution".
	Type string
	// Initial is the first step.
	Initial string
	// Next is the step after step, given the data its handler left; ""
	// when the process is done. It runs inside the step's transaction, so
	// the stored next step is always the one decided from what was
	// applied. A *Failure fails the step like its handler would.
	Next func(step string, data D) (string, error)
	// Steps holds every step by name, forward and compensation alike.
	// Names are unique within a run (a step never runs twice: its inbox
	// key would call it a duplicate) and contain no ':'.
	Steps map[string]Step[D]
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

// AnyDefinition is a Definition of any data type: what a Registry takes.
type AnyDefinition interface {
	erase() (*definition, error)
}

// Registry holds the definitions the activities and operators know.
type Registry struct {
	defs map[string]*definition
}

// definition is a validated Definition with its data type erased: the
// Registry holds definitions of different types, and nothing but a
// step's own run (run, from decode) needs the type.
type definition struct {
	typ, initial string
	steps        map[string]rules
	// compensates maps a compensation step to the forward step it undoes.
	compensates  map[string]string
	onSucceeded  func(ctx context.Context, tx pgx.Tx, inst Instance) error
	onFailed     func(ctx context.Context, tx pgx.Tx, inst Instance, final Status, code string) error
	genericPlans bool
	// decode reads stored data into the definition's D for one step.
	decode func(data []byte) (stepData, error)
	// normalize is initial data as the definition's D encodes it.
	normalize func(data []byte) ([]byte, error)
	// grouped names the forward steps with a GroupHandler; handleGroup
	// runs one (data decoded by decode).
	grouped     map[string]bool
	handleGroup func(ctx context.Context, tx pgx.Tx, step string, in []StepInput, data []stepData) ([]error, error)
}

// rules is a step without its handler.
type rules struct {
	compensation string
	retryable    []string
	maxRetries   int
	timeout      time.Duration
}

func (s rules) isRetryable(code string) bool {
	return code == CodeTimeout || slices.Contains(s.retryable, code)
}

func (s rules) deadline() time.Duration {
	if s.timeout > 0 {
		return s.timeout
	}
	return DefaultStepTimeout
}

// NewRegistry validates the definitions and indexes them by type.
func NewRegistry(defs ...AnyDefinition) (*Registry, error) {
	r := &Registry{defs: make(map[string]*definition, len(defs))}
	for _, d := range defs {
		v, err := d.erase()
		if err != nil {
			return nil, err
		}
		if _, dup := r.defs[v.typ]; dup {
			return nil, fmt.Errorf("process: definition %q registered twice", v.typ)
		}
		r.defs[v.typ] = v
	}
	return r, nil
}

// erase validates d and hides its data type behind closures.
func (d Definition[D]) erase() (*definition, error) {
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
	v := &definition{
		typ: d.Type, initial: d.Initial, steps: make(map[string]rules, len(d.Steps)), compensates: map[string]string{},
		onSucceeded: d.OnSucceeded, onFailed: d.OnFailed, genericPlans: d.GenericPlans,
		decode:    func(b []byte) (stepData, error) { return decodeStep(&d, b) },
		normalize: normalize[D],
		grouped:   map[string]bool{},
		handleGroup: func(ctx context.Context, tx pgx.Tx, step string, in []StepInput, data []stepData) ([]error, error) {
			return handleGroup(ctx, &d, tx, step, in, data)
		},
	}
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
		v.steps[name] = rules{compensation: s.Compensation, retryable: s.Retryable, maxRetries: s.MaxRetries, timeout: s.Timeout}
		if s.Group != nil {
			v.grouped[name] = true
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
		if c.Group != nil {
			return nil, bad("compensation step %q has a group handler: compensations run alone", s.Compensation)
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
		c := d.steps[forward[i]].compensation
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
