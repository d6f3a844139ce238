-- PAYMENT executes in BATCH mode (one workflow a claimed batch, see
-- dispatch.BatchExecution), with a dispatcher cycle every second: the
-- claim then keeps a batch execution's span short. An item type still on
-- the product's former defaults moves to them; PER_ITEM stays a setting.
-- +goose Up
UPDATE exec_rate_config SET exec_mode = 'BATCH',
    dispatch_interval_secs = CASE WHEN dispatch_interval_secs = 5 THEN 1 ELSE dispatch_interval_secs END
WHERE item_type = 'PAYMENT' AND exec_mode = 'PER_ITEM';

-- +goose Down
UPDATE exec_rate_config SET exec_mode = 'PER_ITEM',
    dispatch_interval_secs = CASE WHEN dispatch_interval_secs = 1 THEN 5 ELSE dispatch_interval_secs END
WHERE item_type = 'PAYMENT' AND exec_mode = 'BATCH';
