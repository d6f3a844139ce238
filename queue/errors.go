package queue

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConflict: an item with this id exists with a different context,
// schedule or tenant. Nothing was changed.
var ErrConflict = errors.New("queue: item exists with different content")

// ErrTransitionRejected: a transition's guard did not match (the item is not
// in the expected status or batch, or does not exist). Nothing was changed.
var ErrTransitionRejected = errors.New("queue: transition rejected")

// ErrNotFound: no such item or config.
var ErrNotFound = errors.New("queue: not found")

// Rejection is an item a transition left alone, and where it actually is.
type Rejection struct {
	ItemID string
	// Actual is the item's status, empty when it does not exist.
	Actual Status
	// ActualBatchID is the item's current claim batch, when it has one.
	ActualBatchID string
}

// TransitionError reports the items whose guard did not match. It wraps
// ErrTransitionRejected. The other items of the call did move.
type TransitionError struct {
	Op       string
	Expected Status
	Rejected []Rejection
}

func (e *TransitionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "queue: %s: %d item(s) not in %s:", e.Op, len(e.Rejected), e.Expected)
	for i, r := range e.Rejected {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(e.Rejected)-i)
			break
		}
		actual := string(r.Actual)
		if actual == "" {
			actual = "missing"
		}
		fmt.Fprintf(&b, " %s (%s)", r.ItemID, actual)
	}
	return b.String()
}

func (e *TransitionError) Unwrap() error { return ErrTransitionRejected }
