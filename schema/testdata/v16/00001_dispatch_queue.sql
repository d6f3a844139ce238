-- The dispatch queue (seed 000), translated from Oracle to PostgreSQL.
--
-- No foreign keys between these tables: the claim path updates hundreds of
-- rows per statement, and FK checks would take row locks on the parent rows
-- and serialize concurrent dispatchers. The application keeps integrity
-- through single guarded statements.

-- +goose Up
CREATE TABLE exec_rate_config (
    item_type                     text        PRIMARY KEY,
    enabled                       boolean     NOT NULL DEFAULT true,
    batch_size                    integer     NOT NULL DEFAULT 500
        CHECK (batch_size BETWEEN 1 AND 10000),
    dispatch_interval_secs        integer     NOT NULL DEFAULT 5
        CHECK (dispatch_interval_secs BETWEEN 1 AND 3600),
    jitter_window_ms              integer     NOT NULL DEFAULT 4000
        CHECK (jitter_window_ms BETWEEN 0 AND 3600000),
    pre_start_buffer_secs         integer     NOT NULL DEFAULT 30
        CHECK (pre_start_buffer_secs BETWEEN 0 AND 86400),
    max_dispatch_retries          integer     NOT NULL DEFAULT 3
        CHECK (max_dispatch_retries BETWEEN 1 AND 1000),
    stale_claim_threshold_secs    integer     NOT NULL DEFAULT 120
        CHECK (stale_claim_threshold_secs BETWEEN 1 AND 86400),
    max_stale_recovery_per_cycle  integer     NOT NULL DEFAULT 100
        CHECK (max_stale_recovery_per_cycle BETWEEN 0 AND 100000),
    exec_workflow_type            text        NOT NULL CHECK (exec_workflow_type <> ''),
    exec_task_queue               text        NOT NULL CHECK (exec_task_queue <> ''),
    created_at                    timestamptz NOT NULL DEFAULT now(),
    updated_at                    timestamptz NOT NULL DEFAULT now()
);

INSERT INTO exec_rate_config (item_type, exec_workflow_type, exec_task_queue)
VALUES ('PAYMENT', 'PaymentExecWorkflow', 'payment-exec-task-queue');

CREATE TABLE exec_queue (
    item_type            text        NOT NULL,
    item_id              text        NOT NULL,
    tenant_id            text        NOT NULL DEFAULT '',
    queue_status         text        NOT NULL DEFAULT 'READY'
        CHECK (queue_status IN ('READY', 'CLAIMED', 'DISPATCHED', 'COMPLETED', 'FAILED', 'DEAD_LETTER')),
    scheduled_exec_time  timestamptz NOT NULL,
    init_workflow_id     text,
    dispatch_batch_id    text,
    exec_workflow_id     text,
    claimed_at           timestamptz,
    dispatched_at        timestamptz,
    completed_at         timestamptz,
    retry_count          integer     NOT NULL DEFAULT 0 CHECK (retry_count >= 0),
    last_error           text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_type, item_id)
);

-- Claim: partial on READY so the index holds only claimable rows and the
-- claim's LIMIT stops after the first batch_size entries whatever the depth.
CREATE INDEX exec_queue_claim_idx
    ON exec_queue (item_type, scheduled_exec_time)
    WHERE queue_status = 'READY';

-- Stale-claim recovery: only CLAIMED rows, oldest claim first.
CREATE INDEX exec_queue_stale_claims_idx
    ON exec_queue (item_type, claimed_at)
    WHERE queue_status = 'CLAIMED';

-- Post-claim batch lookup: the rows a batch still holds. Partial on
-- CLAIMED so that later transitions do not maintain it.
CREATE INDEX exec_queue_batch_idx
    ON exec_queue (dispatch_batch_id)
    WHERE queue_status = 'CLAIMED';

CREATE TABLE exec_context (
    item_type        text        NOT NULL,
    item_id          text        NOT NULL,
    context          jsonb       NOT NULL,
    context_version  integer     NOT NULL DEFAULT 1 CHECK (context_version >= 1),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_type, item_id)
);

CREATE TABLE dispatch_audit_log (
    audit_id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    batch_id       text,
    item_type      text        NOT NULL,
    item_id        text,
    action         text        NOT NULL,
    status_before  text,
    status_after   text,
    detail         text,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- An item's history, in order.
CREATE INDEX dispatch_audit_log_item_idx
    ON dispatch_audit_log (item_type, item_id, audit_id);

-- The audit log is insert-only: rewriting history is refused by the database
-- itself, not just by convention. (Retention may still DELETE old rows.)
-- +goose StatementBegin
CREATE FUNCTION dispatch_audit_log_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'dispatch_audit_log is insert-only'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER dispatch_audit_log_no_update
    BEFORE UPDATE ON dispatch_audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION dispatch_audit_log_immutable();

-- +goose Down
DROP TABLE dispatch_audit_log;
DROP FUNCTION dispatch_audit_log_immutable();
DROP TABLE exec_context;
DROP TABLE exec_queue;
DROP TABLE exec_rate_config;
