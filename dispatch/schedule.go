package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// ScheduleID names an item type's dispatch schedule.
func ScheduleID(itemType string) string { return "dispatch-" + itemType }

// Schedules keeps each item type's Temporal Schedule in step with its
// configured dispatch interval.
type Schedules struct {
	client client.Client

	mu      sync.Mutex
	applied map[string]time.Duration
}

// NewSchedules returns the schedules kept through c.
func NewSchedules(c client.Client) *Schedules { return &Schedules{client: c} }

// Ensure creates the item type's schedule, or updates its interval (or
// the workflow it starts), so that DispatchCycle runs every interval with
// overlap SKIP: a cycle still
// running when the next is due makes that one skip, never run beside it.
// It is idempotent, and a no-op when the interval is already applied.
func (s *Schedules) Ensure(ctx context.Context, itemType string, interval time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.applied[itemType] == interval {
		return nil
	}
	id := ScheduleID(itemType)
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: interval}}}
	action := &client.ScheduleWorkflowAction{
		ID:        "dispatcher-" + itemType,
		Workflow:  CycleWorkflowName,
		Args:      []any{itemType},
		TaskQueue: TaskQueue,
		// A cycle is seconds long; one that hangs must not hold the schedule.
		WorkflowRunTimeout: 5 * time.Minute,
	}
	_, err := s.client.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID: id, Spec: spec, Action: action, Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		err = s.client.ScheduleClient().GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
			DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
				sched := in.Description.Schedule
				if sched.Spec != nil && len(sched.Spec.Intervals) == 1 && sched.Spec.Intervals[0].Every == interval &&
					sched.Policy != nil && sched.Policy.Overlap == enumspb.SCHEDULE_OVERLAP_POLICY_SKIP && startsCycle(sched.Action) {
					return nil, temporal.ErrSkipScheduleUpdate
				}
				sched.Spec = &spec
				sched.Action = action
				if sched.Policy == nil {
					sched.Policy = &client.SchedulePolicies{}
				}
				sched.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
				return &client.ScheduleUpdate{Schedule: &sched}, nil
			},
		})
	}
	if err != nil {
		return fmt.Errorf("dispatch: ensure schedule %s: %w", id, err)
	}
	if s.applied == nil {
		s.applied = map[string]time.Duration{}
	}
	s.applied[itemType] = interval
	return nil
}

// startsCycle tells whether a schedule's action starts DispatchCycle (a
// schedule made by an earlier build starts DispatcherWorkflow).
func startsCycle(a client.ScheduleAction) bool {
	w, ok := a.(*client.ScheduleWorkflowAction)
	if !ok {
		return false
	}
	name, _ := w.Workflow.(string)
	return name == CycleWorkflowName
}

// Register puts the dispatcher workflows and activities on a worker of
// TaskQueue.
func Register(r worker.Registry, a *Activities) {
	r.RegisterWorkflowWithOptions(DispatchCycle, workflow.RegisterOptions{Name: CycleWorkflowName})
	r.RegisterWorkflowWithOptions(DispatcherWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterActivity(a)
}

// Remove deletes the item type's schedule if there is one (lease mode
// dispatches without it; a leftover schedule would start cycles nobody runs).
func (s *Schedules) Remove(ctx context.Context, itemType string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.applied, itemType)
	err := s.client.ScheduleClient().GetHandle(ctx, ScheduleID(itemType)).Delete(ctx)
	var nf *serviceerror.NotFound
	if err == nil || errors.As(err, &nf) {
		return nil
	}
	return fmt.Errorf("dispatch: remove schedule %s: %w", ScheduleID(itemType), err)
}
