-- Approval rules (four eyes): a tenant's ordered rules, each naming what
-- it matches (NULL: anything) and how many approvals a matched payment
-- needs. The first matching rule decides, at intake, and its requirement
-- is stored with the payment in the transaction that claims its id, so
-- no payment is ever taken in without it. Approvals and denials are kept
-- one per principal and payment: a principal counts once.

-- +goose Up
CREATE TABLE approval_rules (
    tenant_id      text    NOT NULL,
    position       int     NOT NULL CHECK (position >= 0),
    name           text    NOT NULL,
    min_amount     numeric CHECK (min_amount >= 0),
    currency       text,
    source         text    CHECK (source IN ('API', 'FILE', 'KAFKA')),
    debtor_account text,
    rail           text,
    file_min_total numeric CHECK (file_min_total >= 0),
    file_min_count int     CHECK (file_min_count >= 1),
    approvals      int     NOT NULL CHECK (approvals BETWEEN 1 AND 10),
    PRIMARY KEY (tenant_id, position)
);

CREATE TABLE payment_approval_requirements (
    payment_id text        PRIMARY KEY,
    tenant_id  text        NOT NULL,
    rule       text        NOT NULL,
    approvals  int         NOT NULL CHECK (approvals >= 1),
    -- The principal that submitted it ('' for none: Kafka, no auth),
    -- who may never approve it.
    submitter  text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE payment_approvals (
    payment_id text        NOT NULL,
    principal  text        NOT NULL,
    decision   text        NOT NULL CHECK (decision IN ('APPROVE', 'DENY')),
    actor      text        NOT NULL,
    reason     text,
    decided_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (payment_id, principal)
);

-- +goose Down
DROP TABLE payment_approvals;
DROP TABLE payment_approval_requirements;
DROP TABLE approval_rules;
