-- The payments domain: one row per payment, its business status, and the
-- notifications sent for it. (The queue tables stay generic.)

-- +goose Up
CREATE TABLE payments (
    payment_id                text          PRIMARY KEY,
    tenant_id                 text          NOT NULL,
    debtor_account            text          NOT NULL,
    -- Empty only on a payment rejected because they were invalid.
    amount                    numeric(19,4) CHECK (amount > 0),
    currency                  char(3),
    creditor_name             text          NOT NULL,
    creditor_iban             text,
    creditor_bic              text,
    remittance_info           text,
    requested_execution_time  timestamptz   NOT NULL,
    scheduled_execution_time  timestamptz,
    status                    text          NOT NULL
        CHECK (status IN ('SCHEDULED', 'ACCEPTED', 'PROCESSING', 'REJECTED', 'FAILED')),
    status_reason             text,
    -- The request as received: a replay with the same id must match it.
    request                   jsonb         NOT NULL,
    execution_ref             text,
    created_at                timestamptz   NOT NULL DEFAULT now(),
    updated_at                timestamptz   NOT NULL DEFAULT now(),
    CHECK (status = 'REJECTED' OR (amount IS NOT NULL AND currency IS NOT NULL))
);

CREATE INDEX payments_tenant_idx ON payments (tenant_id, created_at);

CREATE TABLE payment_notifications (
    payment_id  text        NOT NULL,
    party       text        NOT NULL CHECK (party IN ('DEBTOR', 'CREDITOR')),
    status      text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (payment_id, party, status)
);

-- +goose Down
DROP TABLE payment_notifications;
DROP TABLE payments;
