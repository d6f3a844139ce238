-- The ledger: accounts and their transactions, period limits, FX rates and
-- contracts (packages ledger/account, ledger/limit, ledger/fx).
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
-- account's payments are serialized. The ledger's own code writes only
-- through ledger_post, which reads the account it posts to, and
-- ledger.Verify finds any orphan. Same reasoning as the queue tables.

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

-- The configured limit of an account per period, in the account currency.
CREATE TABLE account_limit (
    account_id  text          NOT NULL,
    period      text          NOT NULL CHECK (period IN ('MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH')),
    currency    char(3)       NOT NULL,
    amount      numeric(24,4) NOT NULL CHECK (amount > 0),
    updated_at  timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, period)
);

-- One window of one period of one account (UTC boundaries; a WEEK starts
-- on Monday), created by the first booking that falls into it.
CREATE TABLE limit_window (
    account_id    text          NOT NULL,
    period        text          NOT NULL,
    window_start  timestamptz   NOT NULL,
    window_end    timestamptz   NOT NULL,
    currency      char(3)       NOT NULL,
    limit_amount  numeric(24,4) NOT NULL CHECK (limit_amount > 0),
    utilized      numeric(24,4) NOT NULL DEFAULT 0,
    created_at    timestamptz   NOT NULL DEFAULT now(),
    updated_at    timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, period, window_start),
    CHECK (window_end > window_start),
    CONSTRAINT limit_window_within_limit CHECK (utilized >= 0 AND utilized <= limit_amount)
) WITH (fillfactor = 70);

-- What one booking put into which window, so that its reversal takes it out
-- of exactly those windows, whenever it runs.
CREATE TABLE limit_booking (
    reference     text          NOT NULL,
    period        text          NOT NULL,
    account_id    text          NOT NULL,
    window_start  timestamptz   NOT NULL,
    amount        numeric(24,4) NOT NULL CONSTRAINT limit_booking_amount_positive CHECK (amount > 0),
    booked_at     timestamptz   NOT NULL DEFAULT now(),
    reversed_at   timestamptz,
    PRIMARY KEY (reference, period)
);

CREATE INDEX limit_booking_window_idx ON limit_booking (account_id, period, window_start);

-- 1 base = rate quote.
CREATE TABLE fx_rate (
    base        char(3)       NOT NULL CHECK (base ~ '^[A-Z]{3}$'),
    quote       char(3)       NOT NULL CHECK (quote ~ '^[A-Z]{3}$'),
    rate        numeric(28,12) NOT NULL CHECK (rate > 0),
    updated_at  timestamptz   NOT NULL DEFAULT now(),
    set_by      text          NOT NULL,
    PRIMARY KEY (base, quote),
    CHECK (base <> quote)
);

CREATE TABLE fx_contract (
    contract_id      uuid          PRIMARY KEY,
    -- '<processId>:BookFx': one contract per step, however often delivered.
    reference        text          NOT NULL CONSTRAINT fx_contract_reference_key UNIQUE,
    account_id       text          NOT NULL,
    debit_currency   char(3)       NOT NULL,
    debit_amount     numeric(24,4) NOT NULL CONSTRAINT fx_contract_debit_positive CHECK (debit_amount > 0),
    credit_currency  char(3)       NOT NULL,
    credit_amount    numeric(24,4) NOT NULL CONSTRAINT fx_contract_credit_positive CHECK (credit_amount > 0),
    -- The rate as quoted: 1 rate_base = rate rate_quote, where the pair is
    -- (debit, credit) or, for an inverse quote, (credit, debit).
    rate             numeric(28,12) NOT NULL CHECK (rate > 0),
    rate_base        char(3)       NOT NULL,
    rate_quote       char(3)       NOT NULL,
    value_date       date          NOT NULL,
    status           text          NOT NULL CHECK (status IN ('BOOKED', 'UNWOUND')),
    unwind_reason    text,
    unwound_at       timestamptz,
    created_at       timestamptz   NOT NULL DEFAULT now(),
    CHECK (debit_currency <> credit_currency),
    CONSTRAINT fx_contract_unwind_record CHECK ((status = 'UNWOUND') = (unwound_at IS NOT NULL AND unwind_reason IS NOT NULL))
);

CREATE INDEX fx_contract_account_idx ON fx_contract (account_id, created_at);

-- +goose StatementBegin
-- ledger_post writes one transaction: a DEBIT or CREDIT of p_amount on
-- p_account_id, or the REVERSAL of p_reverses. One round trip:
--   1. lock the account row (FOR UPDATE). It serializes the account's
--      postings, so every balance follows from the one before;
--   2. a posting with p_reference already there is a replay: it is
--      returned (REPLAY), or REFERENCE_CONFLICT when it was a different
--      posting. Checked after the lock, by a statement of its own (its own
--      snapshot): a concurrent delivery of the same step to this account
--      has committed by then and is seen;
--   3. refusals leave everything as it was and return a status, so the
--      caller's transaction stays usable: ACCOUNT_NOT_FOUND,
--      CURRENCY_MISMATCH, INSUFFICIENT_FUNDS (a debit beyond the balance
--      of an account that is not limit-based), TRANSACTION_NOT_FOUND,
--      NOT_REVERSIBLE (a reversal), ALREADY_REVERSED;
--   4. else the balance moves, txn_seq + 1, and the row is inserted: POSTED.
CREATE FUNCTION ledger_post(
    p_kind           text,
    p_account_id     text,
    p_currency       text,
    p_amount         numeric,
    p_charge_fee     boolean,
    p_reverses       uuid,
    p_transaction_id uuid,
    p_reference      text,
    p_description    text,
    p_value_date     date
) RETURNS TABLE (
    status         text,
    transaction_id uuid,
    account_id     text,
    seq            bigint,
    type           text,
    amount         numeric,
    fee            numeric,
    balance_after  numeric,
    reverses       uuid,
    reference      text,
    description    text,
    value_date     date,
    created_at     timestamptz,
    balance        numeric
) LANGUAGE plpgsql AS $$
DECLARE
    a        account%ROWTYPE;
    t        account_transaction%ROWTYPE;
    o        account_transaction%ROWTYPE;
    v_amount numeric;
    v_fee    numeric := 0;
    v_delta  numeric;
    v_same   boolean;
BEGIN
    IF p_kind = 'REVERSAL' THEN
        SELECT * INTO o FROM account_transaction x WHERE x.transaction_id = p_reverses;
        IF NOT FOUND THEN
            status := 'TRANSACTION_NOT_FOUND';
            RETURN NEXT;
            RETURN;
        END IF;
        p_account_id := o.account_id;
    END IF;

    SELECT * INTO a FROM account x WHERE x.account_id = p_account_id FOR UPDATE;
    IF NOT FOUND THEN
        status := 'ACCOUNT_NOT_FOUND';
        RETURN NEXT;
        RETURN;
    END IF;
    balance := a.balance;

    IF p_kind = 'DEBIT' AND p_charge_fee THEN
        v_fee := a.fee;
    END IF;

    SELECT * INTO t FROM account_transaction x WHERE x.reference = p_reference;
    IF FOUND THEN
        -- (a CASE inside IF would end the condition at its THEN)
        v_same := t.account_id = a.account_id AND t.type = p_kind AND
                  coalesce(CASE WHEN p_kind = 'REVERSAL' THEN t.reverses = p_reverses
                                ELSE t.amount = p_amount + v_fee END, false);
        status := CASE WHEN v_same THEN 'REPLAY' ELSE 'REFERENCE_CONFLICT' END;
        transaction_id := t.transaction_id; account_id := t.account_id; seq := t.seq;
        type := t.type; amount := t.amount; fee := t.fee; balance_after := t.balance_after;
        reverses := t.reverses; reference := t.reference; description := t.description;
        value_date := t.value_date; created_at := t.created_at;
        RETURN NEXT;
        RETURN;
    END IF;

    IF p_kind = 'REVERSAL' THEN
        IF o.type = 'REVERSAL' THEN
            status := 'NOT_REVERSIBLE';
            RETURN NEXT;
            RETURN;
        END IF;
        SELECT * INTO t FROM account_transaction x WHERE x.reverses = p_reverses;
        IF FOUND THEN
            status := 'ALREADY_REVERSED';
            transaction_id := t.transaction_id; reference := t.reference;
            RETURN NEXT;
            RETURN;
        END IF;
        v_amount := o.amount;
        v_delta := CASE WHEN o.type = 'DEBIT' THEN o.amount ELSE -o.amount END;
    ELSE
        IF a.currency <> p_currency THEN
            status := 'CURRENCY_MISMATCH';
            RETURN NEXT;
            RETURN;
        END IF;
        v_amount := p_amount + v_fee;
        v_delta := CASE WHEN p_kind = 'DEBIT' THEN -v_amount ELSE v_amount END;
    END IF;

    IF v_delta < 0 AND NOT a.limit_based AND a.balance + v_delta < 0 THEN
        status := 'INSUFFICIENT_FUNDS';
        amount := v_amount;
        RETURN NEXT;
        RETURN;
    END IF;

    UPDATE account x
    SET balance = x.balance + v_delta, txn_seq = x.txn_seq + 1, updated_at = now()
    WHERE x.account_id = a.account_id
    RETURNING x.balance, x.txn_seq INTO a.balance, a.txn_seq;

    INSERT INTO account_transaction AS x (transaction_id, account_id, seq, type, amount, fee, balance_after,
                                          reverses, reference, description, value_date)
    VALUES (p_transaction_id, a.account_id, a.txn_seq, p_kind, v_amount, v_fee, a.balance,
            CASE WHEN p_kind = 'REVERSAL' THEN p_reverses END, p_reference, p_description, p_value_date)
    RETURNING x.* INTO t;

    status := 'POSTED';
    transaction_id := t.transaction_id; account_id := t.account_id; seq := t.seq;
    type := t.type; amount := t.amount; fee := t.fee; balance_after := t.balance_after;
    reverses := t.reverses; reference := t.reference; description := t.description;
    value_date := t.value_date; created_at := t.created_at; balance := a.balance;
    RETURN NEXT;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION ledger_post(text, text, text, numeric, boolean, uuid, uuid, text, text, date);
DROP TABLE fx_contract;
DROP TABLE fx_rate;
DROP TABLE limit_booking;
DROP TABLE limit_window;
DROP TABLE account_limit;
DROP TABLE account_transaction;
DROP TABLE account;
