-- GET /v1/payments lists a tenant's payments newest first: by requested
-- execution time, then by when they were stored, then by key, latest
-- first. Each filter has an index that gives its rows in that order, so
-- a page reads what it shows and no more:
--
--   payments_list_idx         a tenant's payments (and a requested-time range)
--   payments_list_status_idx  in one status
--   payments_list_debtor_idx  from one debtor account
--
-- (A file's payments are read through payment_batch_parts.)
-- payments_list_idx replaces payments_tenant_idx, which no query used.
--
-- The status index costs: a status change writes index entries (it can
-- no longer be a HOT update), three of them per executed payment.
-- docs/performance.md has what that costs.

-- +goose Up
DROP INDEX payments_tenant_idx;
CREATE INDEX payments_list_idx ON payments (tenant_id, requested_execution_time, created_at, payment_id);
CREATE INDEX payments_list_status_idx ON payments (tenant_id, status, requested_execution_time, created_at, payment_id);
CREATE INDEX payments_list_debtor_idx ON payments (tenant_id, debtor_account, requested_execution_time, created_at, payment_id);

-- +goose Down
DROP INDEX payments_list_debtor_idx;
DROP INDEX payments_list_status_idx;
DROP INDEX payments_list_idx;
CREATE INDEX payments_tenant_idx ON payments (tenant_id, created_at);
