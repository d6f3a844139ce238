-- A payment's request, context and details are JSON no query filters on
-- (context->>'pacingConfig' is read, never compared): their statistics
-- served no plan. ANALYZE sorted a sample of each with jsonb's
-- comparison, a container walk per pair: autovacuum's analyze of
-- payments during a 500,000-payment file's intake spent 0.3 of its 0.9 s
-- of CPU there. Without a target ANALYZE skips them; the planner takes
-- jsonb's default width.

-- +goose Up
ALTER TABLE payments
    ALTER COLUMN request SET STATISTICS 0,
    ALTER COLUMN context SET STATISTICS 0,
    ALTER COLUMN details SET STATISTICS 0;

-- +goose Down
ALTER TABLE payments
    ALTER COLUMN request SET STATISTICS -1,
    ALTER COLUMN context SET STATISTICS -1,
    ALTER COLUMN details SET STATISTICS -1;
