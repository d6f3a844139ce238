-- Leases for schedule-less deployments (--dispatch-mode=lease, seed 001's
-- distributed lock): one row per lease; whoever holds an unexpired lease
-- runs the dispatch cycle, everyone else skips.

-- +goose Up
CREATE TABLE dispatch_lease (
    name         text        PRIMARY KEY,
    holder       text        NOT NULL,
    locked_at    timestamptz NOT NULL,
    lease_until  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE dispatch_lease;
