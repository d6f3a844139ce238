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

-- ledger_post_many writes a group's DEBITs or CREDITs (p_kind), one entry
-- a payment, in one round trip: what ledger_post does for each, with
-- each account locked once (in account_id order, so that two groups
-- sharing accounts never deadlock), the balance carried from one entry
-- to the next, one UPDATE an account and one INSERT for them all. An
-- entry refused (ACCOUNT_NOT_FOUND, CURRENCY_MISMATCH,
-- INSUFFICIENT_FUNDS, REFERENCE_CONFLICT) or replayed (REPLAY) changes
-- nothing and leaves the others be: an account short of money refuses
-- the entries it cannot pay, in the order given, and posts the rest.
-- Returns one row an entry, ord its 1-based place in the arrays. The
-- references are distinct (the caller checks).
CREATE OR REPLACE FUNCTION ledger_post_many(
    p_kind            text,
    p_account_ids     text[],
    p_currencies      text[],
    p_amounts         numeric[],
    p_charge_fees     boolean[],
    p_transaction_ids uuid[],
    p_references      text[],
    p_descriptions    text[],
    p_value_dates     date[]
) RETURNS TABLE (
    ord            int,
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
    e        record;
    a        account%ROWTYPE;
    t        account_transaction%ROWTYPE;
    v_have   boolean := false;
    v_dirty  boolean := false;
    v_amount numeric;
    v_fee    numeric;
    v_delta  numeric;
    -- the entries posted, inserted together at the end
    i_ids    uuid[] := '{}';
    i_accts  text[] := '{}';
    i_seqs   bigint[] := '{}';
    i_amts   numeric[] := '{}';
    i_fees   numeric[] := '{}';
    i_bals   numeric[] := '{}';
    i_refs   text[] := '{}';
    i_descs  text[] := '{}';
    i_dates  date[] := '{}';
    i_ords   int[] := '{}';
BEGIN
    -- Every account of the group, locked in one statement and in one order.
    PERFORM FROM account x WHERE x.account_id = ANY (p_account_ids) ORDER BY x.account_id FOR UPDATE;

    FOR e IN
        SELECT u.* FROM unnest(p_account_ids, p_currencies, p_amounts, p_charge_fees, p_transaction_ids,
                               p_references, p_descriptions, p_value_dates)
                        WITH ORDINALITY AS u(account_id, currency, amount, charge_fee, transaction_id,
                                             reference, description, value_date, ord)
        ORDER BY u.account_id, u.ord
    LOOP
        IF NOT v_have OR a.account_id <> e.account_id THEN
            IF v_dirty THEN
                UPDATE account x SET balance = a.balance, txn_seq = a.txn_seq, updated_at = now()
                WHERE x.account_id = a.account_id;
            END IF;
            v_dirty := false;
            SELECT * INTO a FROM account x WHERE x.account_id = e.account_id;
            v_have := FOUND;
        END IF;
        ord := e.ord::int;
        status := NULL; transaction_id := NULL; account_id := NULL; seq := NULL; type := NULL;
        amount := NULL; fee := NULL; balance_after := NULL; reverses := NULL; reference := NULL;
        description := NULL; value_date := NULL; created_at := NULL; balance := NULL;
        IF NOT v_have THEN
            status := 'ACCOUNT_NOT_FOUND';
            RETURN NEXT;
            CONTINUE;
        END IF;
        balance := a.balance;
        v_fee := CASE WHEN p_kind = 'DEBIT' AND e.charge_fee THEN a.fee ELSE 0 END;

        SELECT * INTO t FROM account_transaction x WHERE x.reference = e.reference;
        IF FOUND THEN
            status := CASE WHEN t.account_id = a.account_id AND t.type = p_kind AND t.amount = e.amount + v_fee
                           THEN 'REPLAY' ELSE 'REFERENCE_CONFLICT' END;
            transaction_id := t.transaction_id; account_id := t.account_id; seq := t.seq;
            type := t.type; amount := t.amount; fee := t.fee; balance_after := t.balance_after;
            reverses := t.reverses; reference := t.reference; description := t.description;
            value_date := t.value_date; created_at := t.created_at;
            RETURN NEXT;
            CONTINUE;
        END IF;

        IF a.currency <> e.currency THEN
            status := 'CURRENCY_MISMATCH';
            RETURN NEXT;
            CONTINUE;
        END IF;
        v_amount := e.amount + v_fee;
        v_delta := CASE WHEN p_kind = 'DEBIT' THEN -v_amount ELSE v_amount END;
        IF v_delta < 0 AND NOT a.limit_based AND a.balance + v_delta < 0 THEN
            status := 'INSUFFICIENT_FUNDS';
            amount := v_amount;
            RETURN NEXT;
            CONTINUE;
        END IF;

        a.balance := a.balance + v_delta;
        a.txn_seq := a.txn_seq + 1;
        v_dirty := true;
        i_ids := i_ids || e.transaction_id; i_accts := i_accts || a.account_id; i_seqs := i_seqs || a.txn_seq;
        i_amts := i_amts || v_amount; i_fees := i_fees || v_fee; i_bals := i_bals || a.balance;
        i_refs := i_refs || e.reference; i_descs := i_descs || e.description; i_dates := i_dates || e.value_date;
        i_ords := i_ords || e.ord::int;
    END LOOP;
    IF v_dirty THEN
        UPDATE account x SET balance = a.balance, txn_seq = a.txn_seq, updated_at = now()
        WHERE x.account_id = a.account_id;
    END IF;

    RETURN QUERY
    WITH ins AS (
        INSERT INTO account_transaction AS x (transaction_id, account_id, seq, type, amount, fee, balance_after,
                                              reference, description, value_date)
        SELECT u.id, u.acct, u.seq, p_kind, u.amt, u.fee, u.bal, u.ref, u.descr, u.vd
        FROM unnest(i_ids, i_accts, i_seqs, i_amts, i_fees, i_bals, i_refs, i_descs, i_dates)
             AS u(id, acct, seq, amt, fee, bal, ref, descr, vd)
        RETURNING x.*
    )
    SELECT o.o::int, 'POSTED'::text, ins.transaction_id, ins.account_id, ins.seq, ins.type, ins.amount, ins.fee,
           ins.balance_after, ins.reverses, ins.reference, ins.description, ins.value_date, ins.created_at,
           (SELECT x.balance FROM account x WHERE x.account_id = ins.account_id)
    FROM ins JOIN unnest(i_ids, i_ords) AS o(id, o) ON o.id = ins.transaction_id;
END;
$$;
