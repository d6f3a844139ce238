-- Rails as configuration: each rail a payment can leave by (its type, its
-- endpoint, the rate-limit config that is its connection's limit, its
-- business day: opening, cut-off, time zone, calendar), the ordered rules
-- that choose one, and each tenant's rule for a payment that cannot make
-- its cut-off. Read by every intake and Phase A through a cache; written
-- by operators, each change with its audit row.
--
-- A fresh database has one rail, DEFAULT (the JSON rail at the process's
-- rail endpoint, PAYMENT's rate-limit config, no cut-off, every day open),
-- and one rule sending every payment to it: what paydispatch did before
-- rails were configuration.

-- +goose Up
CREATE TABLE rail (
    rail_name      text        PRIMARY KEY,
    rail_type      text        NOT NULL,
    -- '' : the process's rail endpoint (PAYDISPATCH_RAIL_URL, or the
    -- embedded simulator).
    endpoint       text        NOT NULL DEFAULT '',
    -- '' : PAYMENT's rate-limit config (exec_rate_config.pacing_config).
    pacing_config  text        NOT NULL DEFAULT '',
    time_zone      text        NOT NULL DEFAULT 'UTC',
    -- Times of day in the rail's zone, as clocks read them.
    opens_at       time        NOT NULL DEFAULT '00:00',
    cutoff_at      time,       -- NULL: no cut-off
    calendar_name  text        NOT NULL DEFAULT '', -- '' : every day open
    active         boolean     NOT NULL DEFAULT true,
    version        integer     NOT NULL DEFAULT 1,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (cutoff_at IS NULL OR cutoff_at > opens_at)
);

-- The rules in order: the first that matches a payment names its rail.
-- Empty matchers match anything; amounts are in the payment's currency,
-- both bounds included.
CREATE TABLE routing_rule (
    position    integer     PRIMARY KEY CHECK (position > 0),
    tenant_id   text        NOT NULL DEFAULT '',
    currency    text        NOT NULL DEFAULT '',
    min_amount  numeric,
    max_amount  numeric,
    source      text        NOT NULL DEFAULT '' CHECK (source IN ('', 'API', 'FILE', 'KAFKA')),
    rail_name   text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tenant_cutoff_rule (
    tenant_id   text        PRIMARY KEY,
    cutoff_rule text        NOT NULL CHECK (cutoff_rule IN ('ROLL', 'HOLD', 'REJECT')),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

INSERT INTO rail (rail_name, rail_type) VALUES ('DEFAULT', 'SEPA_JSON');
INSERT INTO routing_rule (position, rail_name) VALUES (1, 'DEFAULT');

-- +goose Down
DROP TABLE tenant_cutoff_rule;
DROP TABLE routing_rule;
DROP TABLE rail;
