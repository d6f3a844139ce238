package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/dispatch"
)

// TestBatchExecutionGroups drives the batch workflow with its local
// activity mocked: items go in groups of the next span, in time order and
// each once; a run continues as new with the items left after its groups;
// a group that fails fails the run (the reconcile retries its items).
func TestBatchExecutionGroups(t *testing.T) {
	t.Parallel()
	var r *dispatch.BatchRunner
	start := time.Date(2030, 1, 1, 16, 0, 0, 0, time.UTC)
	items := func(n int, step time.Duration) []dispatch.BatchItem {
		out := make([]dispatch.BatchItem, n)
		for i := range out {
			out[i] = dispatch.BatchItem{ID: fmt.Sprintf("i%03d", i), At: start.Add(time.Duration(i) * step), Paced: true}
		}
		return out
	}
	tests := []struct {
		name         string
		items        []dispatch.BatchItem
		groupsPerRun int
		failGroup    int // 1-based: it fails from then on; 0: none
		wantGroups   int // local activity calls, retries included
		wantContinue int // items left to the next run; 0: none
		wantErr      bool
	}{
		{"one span, one group", items(20, 10*time.Millisecond), 0, 0, 1, 0, false},
		{"two seconds of slots, 250 ms groups", items(200, 10*time.Millisecond), 0, 0, 8, 0, false},
		{"a backlog due at once, groups of at most 100", items(250, 0), 0, 0, 3, 0, false},
		{"continue as new after the run's groups", items(200, 10*time.Millisecond), 3, 0, 3, 125, false},
		{"a failed group fails the run after its 20 attempts", items(200, 10*time.Millisecond), 0, 2, 1 + 20, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.SetStartTime(start.Add(-10 * time.Second))
			env.RegisterWorkflowWithOptions(dispatch.BatchExecution, workflow.RegisterOptions{Name: dispatch.BatchWorkflowName})
			env.RegisterActivity(&dispatch.BatchRunner{})
			var groups int
			seen := map[string]int{}
			var last time.Time
			env.OnActivity(r.RunGroup, mock.Anything, mock.Anything).Return(func(_ context.Context, g dispatch.Group) (dispatch.GroupResult, error) {
				groups++
				if tt.failGroup > 0 && groups >= tt.failGroup {
					return dispatch.GroupResult{}, errors.New("the database is gone")
				}
				if g.Items[len(g.Items)-1].At.Sub(g.Items[0].At) >= 250*time.Millisecond || len(g.Items) > 100 {
					return dispatch.GroupResult{}, fmt.Errorf("group %d spans %v with %d items", groups, g.Items[len(g.Items)-1].At.Sub(g.Items[0].At), len(g.Items))
				}
				for _, it := range g.Items {
					if it.At.Before(last) {
						return dispatch.GroupResult{}, fmt.Errorf("%s out of order", it.ID)
					}
					last = it.At
					seen[it.ID]++
				}
				return dispatch.GroupResult{BatchSummary: dispatch.BatchSummary{Completed: len(g.Items)}, Finished: g.Items[len(g.Items)-1].At}, nil
			})
			env.ExecuteWorkflow(dispatch.BatchWorkflowName, dispatch.BatchInput{
				ItemType: "T", BatchID: "B", Items: tt.items, Lead: time.Second, GroupsPerRun: tt.groupsPerRun,
			})
			err := env.GetWorkflowError()
			var can *workflow.ContinueAsNewError
			switch {
			case tt.wantErr && err == nil:
				t.Fatal("the run did not fail")
			case tt.wantContinue > 0 && !errors.As(err, &can):
				t.Fatalf("the run did not continue as new: %v", err)
			case !tt.wantErr && tt.wantContinue == 0 && err != nil:
				t.Fatal(err)
			}
			if groups != tt.wantGroups {
				t.Fatalf("%d groups, want %d", groups, tt.wantGroups)
			}
			if tt.wantErr {
				return
			}
			for id, n := range seen {
				if n != 1 {
					t.Fatalf("%s in %d groups", id, n)
				}
			}
			if got := len(tt.items) - len(seen); got != tt.wantContinue {
				t.Fatalf("%d items left to the next run, want %d", got, tt.wantContinue)
			}
		})
	}
}
