-- Pacing: time cut into fixed windows per rate-limit config, each window
-- taking at most max_per_window events, each event a slot inside a
-- window. The functions that assign slots are in functions.sql, beside it (applied
-- after the migrations, re-applied whenever that file changes).
-- No foreign keys: the slot path is hot.

-- +goose Up
CREATE TABLE pacing_config (
    config_name       text        PRIMARY KEY CHECK (config_name ~ '^[A-Za-z0-9_.:-]{1,100}$'),
    max_per_window    integer     NOT NULL CHECK (max_per_window BETWEEN 1 AND 1000000),
    window_ms         bigint      NOT NULL CHECK (window_ms BETWEEN 1 AND 86400000),
    -- how many windows past the first open one a request searches
    headroom_windows  integer     NOT NULL DEFAULT 100 CHECK (headroom_windows BETWEEN 0 AND 100000),
    active            boolean     NOT NULL DEFAULT true,
    version           integer     NOT NULL DEFAULT 1,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- One counter per config and window. Counters do not depend on the config
-- version: changing max_per_window does not reset a window's count.
-- Invariant kept by the functions: a CLOSED window's successor exists
-- (created OPEN when the window closes), so the first OPEN window at or
-- after a CLOSED one ends that run of full windows, found with one index
-- descent instead of a walk.
CREATE TABLE pacing_window (
    config_name   text        NOT NULL,
    window_start  timestamptz NOT NULL,
    slot_count    integer     NOT NULL CHECK (slot_count >= 0),
    status        text        NOT NULL CHECK (status IN ('OPEN', 'CLOSED')),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (config_name, window_start)
) WITH (fillfactor = 10);
-- fillfactor 10: a few windows per page. Concurrent requests for one
-- instant all work the same handful of rows; packed into one page they
-- queue on that page's buffer lock even when they lock different rows.
-- The skip query: first OPEN window after a given one.
CREATE INDEX pacing_window_status_idx ON pacing_window (config_name, status, window_start);

-- One slot per event id (idempotency). No uniqueness on the time: many
-- slots can share a millisecond; the rate is enforced by the counters.
CREATE TABLE pacing_slot (
    event_id        text        PRIMARY KEY,
    config_name     text        NOT NULL,
    window_start    timestamptz NOT NULL,
    slot_index      integer     NOT NULL,
    scheduled_time  timestamptz NOT NULL,
    requested_time  timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pacing_slot_window_idx ON pacing_slot (config_name, window_start);

-- A tenant's own rate-limit config for the events of one kind (a dispatch
-- queue item type): its own windows and rate (a bank's rail, a tenant's
-- contract) instead of the kind's default. Read once per chunk of
-- events, not on a hot path. No foreign key to pacing_config: a missing or
-- inactive config falls back to the kind's default, with a warning.
CREATE TABLE tenant_pacing (
    item_type      text        NOT NULL,
    tenant_id      text        NOT NULL,
    pacing_config  text        NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_type, tenant_id)
);

-- +goose Down
DROP TABLE tenant_pacing;
DROP TABLE pacing_slot;
DROP TABLE pacing_window;
DROP TABLE pacing_config;
