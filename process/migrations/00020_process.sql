-- Package process: a generic process manager (saga). Self-contained: no
-- foreign keys to other packages' tables, so it can move to a directory
-- of its own. See process/doc.go for the state machine and the events.

-- +goose Up
CREATE TABLE process_instance (
    -- Deterministic: UUID v5 of (process_type, business_key), so a re-run
    -- of the caller finds the same process.
    process_id                  uuid        PRIMARY KEY,
    process_type                text        NOT NULL,
    business_key                text        NOT NULL,
    status                      text        NOT NULL
        CHECK (status IN ('NEW', 'RUNNING', 'SUCCEEDED', 'FAILED', 'COMPENSATING',
                          'COMPENSATED', 'PAUSED', 'COMPENSATION_FAILED')),
    -- The step to run next (RUNNING, COMPENSATING), the last one run
    -- (SUCCEEDED, COMPENSATED) or the one that failed.
    current_step                text        NOT NULL,
    data                        jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(data) = 'object'),
    -- Failed attempts of the current step.
    retries                     integer     NOT NULL DEFAULT 0 CHECK (retries >= 0),
    -- Optimistic concurrency: every update is guarded by the version read.
    version                     bigint      NOT NULL DEFAULT 1,
    -- The status a paused process resumes to; '' unless PAUSED.
    resume_status               text        NOT NULL DEFAULT ''
        CHECK (resume_status IN ('', 'NEW', 'RUNNING', 'COMPENSATING')),
    -- What made the process fail or compensate (shown by the domain).
    failed_step                 text        NOT NULL DEFAULT '',
    error_code                  text        NOT NULL DEFAULT '',
    error_message               text        NOT NULL DEFAULT '',
    -- A compensation that failed for good (COMPENSATION_FAILED).
    compensation_error_code     text        NOT NULL DEFAULT '',
    compensation_error_message  text        NOT NULL DEFAULT '',
    -- The workflow driving the process: the one a resume signal goes to.
    workflow_id                 text        NOT NULL DEFAULT '',
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (process_type, business_key),
    CHECK ((status = 'PAUSED') = (resume_status <> ''))
);

-- Operator listings: a status, oldest change first, keyset-paginated.
CREATE INDEX process_instance_status_idx ON process_instance (status, updated_at, process_id);

-- The process's history, append-only. seq orders a process's entries.
CREATE TABLE process_log (
    process_id  uuid        NOT NULL,
    seq         bigint      GENERATED ALWAYS AS IDENTITY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    event       text        NOT NULL
        CHECK (event IN ('ProcessStarted', 'StepStarted', 'StepCompleted', 'StepFailed',
                         'StepTimedOut', 'CompensationStarted', 'CompensationCompleted',
                         'CompensationFailed', 'ProcessCompleted', 'ProcessFailed',
                         'ProcessCompensating', 'ProcessCompensated',
                         'ProcessCompensationFailed', 'ProcessPaused', 'ProcessResumed',
                         'OperatorRetry', 'OperatorCompensate', 'RunnerAttached')),
    step        text        NOT NULL DEFAULT '',
    attempt     integer     NOT NULL DEFAULT 0,
    error_code  text        NOT NULL DEFAULT '',
    detail      jsonb       NOT NULL DEFAULT '{}',
    -- Who asked: an operator's name, or 'system'.
    actor       text        NOT NULL DEFAULT 'system',
    -- A process's entries in order: the log read and the replay.
    PRIMARY KEY (process_id, seq)
);

-- +goose StatementBegin
CREATE FUNCTION process_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'process_log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER process_log_no_change BEFORE UPDATE OR DELETE ON process_log
    FOR EACH ROW EXECUTE FUNCTION process_log_append_only();
CREATE TRIGGER process_log_no_truncate BEFORE TRUNCATE ON process_log
    FOR EACH STATEMENT EXECUTE FUNCTION process_log_append_only();

-- One row per applied step: '<processId>:<STEP>' or
-- '<processId>:COMPENSATE:<STEP>'. Written in the step's own transaction,
-- so a row exists exactly when the step's effect does.
CREATE TABLE process_inbox (
    key         text        PRIMARY KEY,
    process_id  uuid        NOT NULL,
    step        text        NOT NULL,
    result      jsonb,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE process_inbox;
DROP TABLE process_log;
DROP FUNCTION process_log_append_only();
DROP TABLE process_instance;
