-- The ledger's posting function: its current source, applied after the
-- migrations and again whenever this file changes (see pacing/migrations/functions.sql
-- for the rule). CREATE OR REPLACE; a changed signature needs a DROP of
-- the old one here first.

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
CREATE OR REPLACE FUNCTION ledger_post(
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
