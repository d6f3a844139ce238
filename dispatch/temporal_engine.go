package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// TemporalEngine is the Engine on a Temporal client.
type TemporalEngine struct {
	Client    client.Client
	Namespace string
	// EagerStart asks the engine to hand a started workflow's first task
	// straight back to a worker of Client's process on its task queue
	// (Temporal's eager workflow start), saving the matching service's
	// round trip, when the start has no delay. Without such a worker the
	// start is an ordinary one.
	EagerStart bool
}

// Start starts the workflow with policies that make a second execution of
// a completed item impossible:
//
//   - ID reuse ALLOW_DUPLICATE_FAILED_ONLY: a new run with the same id is
//     allowed only when the last run failed, timed out, was terminated or
//     cancelled (a retry); after a completed run every start is refused.
//   - ID conflict FAIL: while a run is open (including one still waiting out
//     its StartDelay) a second start is refused rather than attached to.
//
// Both refusals come back as WorkflowExecutionAlreadyStarted, reported as
// ErrAlreadyStarted: the item is already in the engine's hands.
func (e TemporalEngine) Start(ctx context.Context, s StartRequest) error {
	opts := client.StartWorkflowOptions{
		ID:                                       s.WorkflowID,
		TaskQueue:                                s.TaskQueue,
		StartDelay:                               s.Delay,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		EnableEagerStart:                         e.EagerStart && s.Delay == 0,
	}
	if !s.NotBefore.IsZero() {
		// In the memo, not the arguments: execution workflows keep their
		// two-argument signature, and read it with NotBefore.
		opts.Memo = map[string]any{NotBeforeMemo: s.NotBefore.UTC().Format(time.RFC3339Nano)}
		opts.WorkflowTaskTimeout = holdingTaskTimeout(time.Until(s.NotBefore) - s.Delay)
	}
	args := []any{s.ItemID, s.Context}
	if s.Input != nil {
		args = []any{s.Input}
	}
	_, err := e.Client.ExecuteWorkflow(ctx, opts, s.WorkflowType, args...)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return ErrAlreadyStarted
	}
	return err
}

// defaultTaskTimeout is Temporal's default workflow task timeout.
const defaultTaskTimeout = 10 * time.Second

// holdingTaskTimeout is the workflow task timeout of an execution workflow
// that holds its item for up to hold in its first task (Hold, in a local
// activity). At 80 % of the task timeout the SDK heartbeats a task busy
// with a local activity, which costs the engine a task more per item; the
// default 10 s would do so for any lead over 8 s.
func holdingTaskTimeout(hold time.Duration) time.Duration {
	return max(defaultTaskTimeout, hold+defaultTaskTimeout)
}

// Exists describes the workflow; NotFound means no run exists.
func (e TemporalEngine) Exists(ctx context.Context, workflowID string) (bool, error) {
	_, err := e.Client.DescribeWorkflowExecution(ctx, workflowID, "")
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &nf):
		return false, nil
	default:
		return false, err
	}
}

// Closed asks visibility about all of ids in one query per 100 ids, and
// keeps each id's latest run: an item retried after a failure has an old
// failed run beside its current one.
func (e TemporalEngine) Closed(ctx context.Context, ids []string) (map[string]Closure, error) {
	out := make(map[string]Closure, len(ids))
	for start := 0; start < len(ids); start += 100 {
		chunk := ids[start:min(start+100, len(ids))]
		quoted := make([]string, len(chunk))
		for i, id := range chunk {
			quoted[i] = "'" + strings.ReplaceAll(id, "'", "\\'") + "'"
		}
		query := "WorkflowId IN (" + strings.Join(quoted, ",") + ")"
		latest := map[string]latestRun{}
		var token []byte
		for {
			resp, err := e.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: e.Namespace, Query: query, NextPageToken: token, PageSize: 1000,
			})
			if err != nil {
				return nil, fmt.Errorf("dispatch: list executions: %w", err)
			}
			for _, info := range resp.Executions {
				id := info.GetExecution().GetWorkflowId()
				started := info.GetStartTime().AsTime()
				if cur, ok := latest[id]; ok && !started.After(cur.started) {
					continue
				}
				latest[id] = latestRun{started: started, status: info.GetStatus()}
			}
			token = resp.NextPageToken
			if len(token) == 0 {
				break
			}
		}
		for id, run := range latest {
			if run.status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || run.status == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
				continue
			}
			out[id] = Closure{
				Completed: run.status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
				Status:    run.status.String(),
			}
		}
	}
	return out, nil
}

type latestRun struct {
	started time.Time
	status  enumspb.WorkflowExecutionStatus
}
