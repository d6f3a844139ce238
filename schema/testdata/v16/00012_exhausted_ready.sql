-- READY rows whose retries are already used up. The claim takes only rows
-- with retry_count below max_dispatch_retries, and the transitions that
-- count a retry dead-letter a row that reaches the max; but lowering the
-- max (config set) below a READY row's retry_count, or a dispatcher still
-- on the old max releasing a row, leaves a row that nothing would ever
-- touch again. Each cycle's recovery dead-letters them through this index:
-- partial on rows already retried, so it holds only a handful of rows and
-- first attempts never maintain it.

-- +goose Up
CREATE INDEX exec_queue_retried_ready_idx
    ON exec_queue (item_type, retry_count)
    WHERE queue_status = 'READY' AND retry_count > 0;

-- +goose Down
DROP INDEX exec_queue_retried_ready_idx;
