-- Statistics refreshed as the ledger's transactions double, not at every
-- tenth: a posting finds its rows by account, reference or id, and verify
-- reads the whole table, so no plan depends on fresher statistics; at the
-- default the table was analyzed every autovacuum visit while a drain ran
-- (docs/performance.md, Autovacuum).

-- +goose Up
ALTER TABLE account_transaction SET (autovacuum_analyze_scale_factor = 1.0);

-- +goose Down
ALTER TABLE account_transaction RESET (autovacuum_analyze_scale_factor);
