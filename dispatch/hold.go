package dispatch

import (
	"context"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/pacing"
)

// NotBeforeMemo is the memo key of a paced item's slot (RFC 3339): the
// engine sets it; a workflow started by other means may too.
const NotBeforeMemo = "paydispatch.notBefore"

// NotBefore is, inside an execution workflow, the slot of the paced item
// it was started for ahead of time (the item type's paced lead), or zero:
// the workflow should hold the item until then, on the worker's clock
// (Hold), before executing it. Deterministic: it reads the start's memo.
func NotBefore(ctx workflow.Context) time.Time {
	memo := workflow.GetInfo(ctx).Memo
	if memo == nil {
		return time.Time{}
	}
	p, ok := memo.GetFields()[NotBeforeMemo]
	if !ok {
		return time.Time{}
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Hold waits, in an activity (typically the local activity that executes
// the item), until t on the process's clock (pacing.Hold); a past or zero
// t returns at once.
func Hold(ctx context.Context, t time.Time) error { return pacing.Hold(ctx, t) }
