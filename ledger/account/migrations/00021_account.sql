-- The ledger's accounts and their transactions (package ledger/account;
-- limits and FX are ledger/limit's and ledger/fx's). Postings go through
-- ledger_post (functions.sql, beside it), which reads and locks the account it
-- posts to.
--
-- Money is numeric(24,4): four decimals hold every ISO 4217 currency's
-- minor units (CLF and UYW have four), twenty integer digits keep sums far
-- from overflow. Each amount must also fit its own currency's minor units
-- (JPY none, BHD three); Go checks that before writing and ledger.Verify
-- checks it on the stored rows, since SQL does not know the table of
-- minor units.
--
-- No foreign keys. The hot path is one debit: it locks one account row and
-- inserts one transaction row; a foreign key from account_transaction to
-- account would add a KEY SHARE lock and an index probe of the account for
-- every insert, inside the window in which the account row is held and the
-- account's payments are serialized. ledger.Verify finds any orphan.

-- +goose Up
CREATE TABLE account (
    account_id       text          PRIMARY KEY CHECK (account_id ~ '^[A-Za-z0-9._-]{1,64}$'),
    tenant_id        text          NOT NULL,
    currency         char(3)       NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    opening_balance  numeric(24,4) NOT NULL,
    -- The available balance; only ledger_post changes it.
    balance          numeric(24,4) NOT NULL,
    -- A limit-based account may go below zero: its control is its limits.
    limit_based      boolean       NOT NULL,
    -- Flat fee per payment, in the account currency, charged by a debit
    -- that asks for it.
    fee              numeric(24,4) NOT NULL DEFAULT 0 CHECK (fee >= 0),
    -- The sequence number of the account's last transaction.
    txn_seq          bigint        NOT NULL DEFAULT 0 CHECK (txn_seq >= 0),
    created_at       timestamptz   NOT NULL DEFAULT now(),
    updated_at       timestamptz   NOT NULL DEFAULT now(),
    CONSTRAINT account_not_overdrawn CHECK (limit_based OR balance >= 0)
)
-- Room for HOT updates: every posting rewrites the row.
WITH (fillfactor = 70);

CREATE TABLE account_transaction (
    transaction_id  uuid          PRIMARY KEY,
    account_id      text          NOT NULL,
    -- 1, 2, 3, ... per account, no gaps: balance_after of seq n follows
    -- from that of n - 1 (or the opening balance) and this amount.
    seq             bigint        NOT NULL CHECK (seq > 0),
    type            text          NOT NULL CHECK (type IN ('DEBIT', 'CREDIT', 'REVERSAL')),
    -- The whole amount moved, fee included; a reversal moves the amount of
    -- the transaction it reverses, the other way.
    amount          numeric(24,4) NOT NULL CONSTRAINT account_transaction_amount_positive CHECK (amount > 0),
    -- The part of a DEBIT's amount that is the account's fee.
    fee             numeric(24,4) NOT NULL DEFAULT 0 CONSTRAINT account_transaction_fee_within CHECK (fee >= 0 AND fee < amount),
    balance_after   numeric(24,4) NOT NULL,
    reverses        uuid,
    -- Who wrote it: '<processId>:<step>'. Unique, so a step delivered twice
    -- posts once even outside the process manager's inbox.
    reference       text          NOT NULL,
    description     text,
    value_date      date          NOT NULL,
    created_at      timestamptz   NOT NULL DEFAULT now(),
    CONSTRAINT account_transaction_seq_key UNIQUE (account_id, seq),
    CONSTRAINT account_transaction_reference_key UNIQUE (reference),
    CONSTRAINT account_transaction_reversal_ref CHECK ((type = 'REVERSAL') = (reverses IS NOT NULL))
);

-- A transaction is reversed at most once.
CREATE UNIQUE INDEX account_transaction_reverses_key ON account_transaction (reverses) WHERE reverses IS NOT NULL;

-- +goose Down
DROP TABLE account_transaction;
DROP TABLE account;
