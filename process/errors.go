package process

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Failure is a step's business failure. Its Code alone decides whether
// the step is retried (Step.Retryable): the message is for people. A
// handler returns it, wrapped or not; any other error is an infrastructure
// failure that Temporal retries without the process noticing.
type Failure struct {
	Code    string
	Message string
}

func (e *Failure) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// Failf returns a business failure with code and a formatted message.
func Failf(code, format string, args ...any) error {
	return &Failure{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Codes the process manager gives failures itself.
const (
	// CodeTimeout: a step's handler ran past its deadline. Retryable,
	// within the step's MaxRetries.
	CodeTimeout = "TIMEOUT"
	// CodeUnknownStep: the definition's Next named a step it does not
	// have, or the instance points at one it no longer has. Permanent.
	CodeUnknownStep = "UNKNOWN_STEP"
	// CodeOperator is the failure code of a process an operator
	// compensated while nothing had failed.
	CodeOperator = "OPERATOR_COMPENSATED"
)

var (
	// ErrNotFound: no process has the id.
	ErrNotFound = errors.New("process: not found")
	// ErrWrongStatus is what a *StatusError is: the action does not apply
	// to the process in its status (HTTP 409).
	ErrWrongStatus = errors.New("process: wrong status for the action")
	// ErrVersionConflict: an update found the process changed since it
	// was read — its version guard failed — and wrote nothing (HTTP 409).
	ErrVersionConflict = errors.New("process: version conflict")
	// ErrNotListed: List was asked for a status it does not list (see
	// Status.Listed).
	ErrNotListed = errors.New("process: not a listed status (FAILED, COMPENSATING, COMPENSATED, PAUSED, COMPENSATION_FAILED)")
	// ErrInvalidCursor: a List cursor this package did not produce.
	ErrInvalidCursor = errors.New("process: invalid cursor")
)

// StatusError says an operator action does not apply to a process in its
// status. errors.Is(err, ErrWrongStatus) holds.
type StatusError struct {
	ProcessID uuid.UUID
	Action    string
	Status    Status
	Allowed   []Status
}

func (e *StatusError) Error() string {
	allowed := make([]string, len(e.Allowed))
	for i, s := range e.Allowed {
		allowed[i] = string(s)
	}
	return fmt.Sprintf("process %s: cannot %s a %s process (only %s)", e.ProcessID, e.Action, e.Status, strings.Join(allowed, ", "))
}

// Is makes errors.Is(err, ErrWrongStatus) true.
func (e *StatusError) Is(target error) bool { return target == ErrWrongStatus }

func checkStatus(inst Instance, action string, allowed ...Status) error {
	if slices.Contains(allowed, inst.Status) {
		return nil
	}
	return &StatusError{ProcessID: inst.ID, Action: action, Status: inst.Status, Allowed: allowed}
}
