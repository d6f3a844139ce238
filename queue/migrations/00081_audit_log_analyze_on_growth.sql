-- Statistics refreshed as the dispatch audit log doubles: it is appended
-- to and read by item or batch key, so no plan depends on fresher
-- statistics (docs/performance.md, Autovacuum).

-- +goose Up
ALTER TABLE dispatch_audit_log SET (autovacuum_analyze_scale_factor = 1.0);

-- +goose Down
ALTER TABLE dispatch_audit_log RESET (autovacuum_analyze_scale_factor);
