package payment

import (
	"context"
	"fmt"

	"github.com/paydispatch/paydispatch/dispatch"
)

// BatchExecutor executes a payment inside a batch execution (PAYMENT's
// exec_mode BATCH): the Execution a PaymentExecution workflow would run,
// with the batch execution recorded as the payment's execution. A payment
// whose process has to wait, or whose execution failed, is handed to its
// own PaymentExecution, which goes on from the step it reached.
func BatchExecutor(a *ExecActivities) dispatch.Executor {
	return func(ctx context.Context, it dispatch.BatchItem, run dispatch.Run) (bool, error) {
		pc, err := execContext(it.Context)
		if err != nil {
			return false, fmt.Errorf("payment %s: unreadable context: %w", it.ID, err)
		}
		return a.Execution(ctx, ExecutionInput{
			PaymentID: it.ID, Context: pc, NotBefore: it.At, WorkflowID: run.WorkflowID, Ref: run.String(),
		})
	}
}
