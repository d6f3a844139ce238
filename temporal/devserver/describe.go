package devserver

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

func describeNamespace(ns string) *workflowservice.DescribeNamespaceRequest {
	return &workflowservice.DescribeNamespaceRequest{Namespace: ns}
}

// probeServices asks matching (describe a task queue) and history (describe
// a workflow that does not exist: NotFound means history answered).
func probeServices(ctx context.Context, c client.Client, ns string) error {
	if _, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
		Namespace: ns, TaskQueue: &taskqueuepb.TaskQueue{Name: "paydispatch-readiness-probe"},
		TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW,
	}); err != nil {
		return err
	}
	_, err := c.DescribeWorkflowExecution(ctx, "paydispatch-readiness-probe", "")
	var nf *serviceerror.NotFound
	if err == nil || errors.As(err, &nf) {
		return nil
	}
	return err
}
