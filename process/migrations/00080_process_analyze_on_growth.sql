-- Statistics refreshed as a process table doubles, not at every tenth of
-- it: processes, their log and their inbox are only ever found by key
-- (or, for the retention, by the partial index on final events), so no
-- plan depends on fresher statistics, and at the default each of them was
-- analyzed every autovacuum visit while a drain ran (a sample of 30,000
-- rows each time; docs/performance.md, Autovacuum). Row counts stay
-- current without ANALYZE: the planner scales them by the table's pages.

-- +goose Up
ALTER TABLE process_instance SET (autovacuum_analyze_scale_factor = 1.0);
ALTER TABLE process_log SET (autovacuum_analyze_scale_factor = 1.0);
ALTER TABLE process_inbox SET (autovacuum_analyze_scale_factor = 1.0);

-- +goose Down
ALTER TABLE process_instance RESET (autovacuum_analyze_scale_factor);
ALTER TABLE process_log RESET (autovacuum_analyze_scale_factor);
ALTER TABLE process_inbox RESET (autovacuum_analyze_scale_factor);
