-- Statistics refreshed as the outbox's keys and attempts double: both are
-- appended to and read by key, so no plan depends on fresher statistics
-- (docs/performance.md, Autovacuum).

-- +goose Up
ALTER TABLE payment_outbox_keys SET (autovacuum_analyze_scale_factor = 1.0);
ALTER TABLE payment_outbox_attempts SET (autovacuum_analyze_scale_factor = 1.0);

-- +goose Down
ALTER TABLE payment_outbox_keys RESET (autovacuum_analyze_scale_factor);
ALTER TABLE payment_outbox_attempts RESET (autovacuum_analyze_scale_factor);
