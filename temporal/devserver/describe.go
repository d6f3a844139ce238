package devserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
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

// setRetention sets each namespace's retention through the frontend,
// where it differs: a store created before keeps its namespaces.
func (s *Server) setRetention(ctx context.Context, namespaces []string, d time.Duration) error {
	c, err := client.Dial(client.Options{HostPort: s.hostPort, Namespace: namespaces[0]})
	if err != nil {
		return fmt.Errorf("temporal: set retention: %w", err)
	}
	defer c.Close()
	for _, ns := range namespaces {
		desc, err := c.WorkflowService().DescribeNamespace(ctx, describeNamespace(ns))
		if err != nil {
			return fmt.Errorf("temporal: namespace %s: %w", ns, err)
		}
		if desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() == d {
			continue
		}
		if _, err := c.WorkflowService().UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
			Namespace: ns,
			Config:    &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(d)},
		}); err != nil {
			return fmt.Errorf("temporal: set retention of namespace %s to %v: %w", ns, d, err)
		}
	}
	return nil
}
