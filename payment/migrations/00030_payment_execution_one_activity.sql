-- PAYMENT's execution workflow becomes PaymentExecution (an execution
-- that goes through is one local activity, and its history has no version
-- markers). An item type still on the product's former default moves to
-- it; PaymentExecWorkflow stays registered, for its open runs and for an
-- operator who sets it back.
-- +goose Up
UPDATE exec_rate_config SET exec_workflow_type = 'PaymentExecution'
WHERE item_type = 'PAYMENT' AND exec_workflow_type = 'PaymentExecWorkflow';

-- +goose Down
UPDATE exec_rate_config SET exec_workflow_type = 'PaymentExecWorkflow'
WHERE item_type = 'PAYMENT' AND exec_workflow_type = 'PaymentExecution';
