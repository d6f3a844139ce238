-- Each query checks one rule in one statement (one snapshot), so Verify
-- can run on a live database without seeing a posting half done. Each
-- returns the offending rows: which row, and what is wrong.

-- name: BalanceEquation :many
-- opening balance + credits - debits (reversals the other way than what
-- they reverse) = balance, and txn_seq counts the transactions.
WITH d AS (
    SELECT t.account_id,
           CASE WHEN t.type = 'CREDIT' OR (t.type = 'REVERSAL' AND o.type = 'DEBIT') THEN t.amount ELSE -t.amount END AS delta,
           t.seq
    FROM account_transaction t
    LEFT JOIN account_transaction o ON o.transaction_id = t.reverses
), s AS (
    SELECT d.account_id, sum(d.delta) AS moved, count(*) AS n, max(d.seq) AS last_seq
    FROM d GROUP BY d.account_id
)
SELECT format('account_id=%s', a.account_id)::text AS row_ref,
       format('opening %s + postings %s = %s, but the balance is %s; txn_seq %s, %s transactions, last seq %s',
              a.opening_balance, coalesce(s.moved, 0), a.opening_balance + coalesce(s.moved, 0), a.balance,
              a.txn_seq, coalesce(s.n, 0), coalesce(s.last_seq, 0))::text AS detail
FROM account a
LEFT JOIN s ON s.account_id = a.account_id
WHERE a.opening_balance + coalesce(s.moved, 0) <> a.balance
   OR a.txn_seq <> coalesce(s.n, 0)
   OR a.txn_seq <> coalesce(s.last_seq, 0);

-- name: BalanceChain :many
-- Each transaction's balance_after = the previous one's (by seq; the
-- opening balance before the first) + its amount, and seq goes 1, 2, 3.
WITH d AS (
    SELECT t.account_id, t.transaction_id, t.seq, t.balance_after,
           CASE WHEN t.type = 'CREDIT' OR (t.type = 'REVERSAL' AND o.type = 'DEBIT') THEN t.amount ELSE -t.amount END AS delta
    FROM account_transaction t
    LEFT JOIN account_transaction o ON o.transaction_id = t.reverses
), c AS (
    SELECT d.*, lag(d.balance_after) OVER w AS prev_balance, lag(d.seq) OVER w AS prev_seq
    FROM d WINDOW w AS (PARTITION BY d.account_id ORDER BY d.seq)
)
SELECT format('transaction_id=%s (account_id=%s seq=%s)', c.transaction_id, c.account_id, c.seq)::text AS row_ref,
       CASE WHEN a.account_id IS NULL THEN 'no such account'
            WHEN c.seq <> coalesce(c.prev_seq, 0) + 1 THEN format('seq %s follows seq %s', c.seq, coalesce(c.prev_seq, 0))
            ELSE format('balance_after %s, but the balance before (%s) %s %s makes %s',
                        c.balance_after, coalesce(c.prev_balance, a.opening_balance),
                        CASE WHEN c.delta < 0 THEN '-' ELSE '+' END, abs(c.delta),
                        coalesce(c.prev_balance, a.opening_balance) + c.delta)
       END::text AS detail
FROM c
LEFT JOIN account a ON a.account_id = c.account_id
WHERE a.account_id IS NULL
   OR c.seq <> coalesce(c.prev_seq, 0) + 1
   OR c.balance_after <> coalesce(c.prev_balance, a.opening_balance) + c.delta;

-- name: NegativeBalances :many
-- An account that is not limit-based is never below zero, nor was it
-- after any of its transactions.
SELECT format('account_id=%s', a.account_id)::text AS row_ref,
       format('balance %s of an account that is not limit-based', a.balance)::text AS detail
FROM account a
WHERE NOT a.limit_based AND a.balance < 0
UNION ALL
SELECT format('transaction_id=%s (account_id=%s seq=%s)', t.transaction_id, t.account_id, t.seq)::text,
       format('balance_after %s of an account that is not limit-based', t.balance_after)::text
FROM account_transaction t
JOIN account a ON a.account_id = t.account_id
WHERE NOT a.limit_based AND t.balance_after < 0;

-- name: Reversals :many
-- A reversal reverses an existing DEBIT or CREDIT of the same account and
-- amount, and a transaction is reversed at most once.
SELECT format('transaction_id=%s (account_id=%s seq=%s)', r.transaction_id, r.account_id, r.seq)::text AS row_ref,
       CASE WHEN r.type <> 'REVERSAL' THEN format('a %s that names %s as reversed', r.type, r.reverses)
            WHEN o.transaction_id IS NULL THEN format('reverses %s, which does not exist', coalesce(r.reverses::text, 'nothing'))
            WHEN o.account_id <> r.account_id THEN format('reverses %s of account %s', o.transaction_id, o.account_id)
            WHEN o.type = 'REVERSAL' THEN format('reverses %s, itself a reversal', o.transaction_id)
            WHEN o.amount <> r.amount THEN format('amount %s, but %s moved %s', r.amount, o.transaction_id, o.amount)
            ELSE format('%s is reversed %s times', o.transaction_id, r.times)
       END::text AS detail
FROM (SELECT t.*, count(*) OVER (PARTITION BY t.reverses) AS times
      FROM account_transaction t
      WHERE t.type = 'REVERSAL' OR t.reverses IS NOT NULL) r
LEFT JOIN account_transaction o ON o.transaction_id = r.reverses
WHERE r.type <> 'REVERSAL' OR o.transaction_id IS NULL OR o.account_id <> r.account_id
   OR o.type = 'REVERSAL' OR o.amount <> r.amount OR r.times > 1;

-- name: LimitUtilization :many
-- A window's utilization is the sum of its bookings not reversed, and
-- every booking is in a window that exists.
WITH b AS (
    SELECT account_id, period, window_start, sum(amount) AS booked
    FROM limit_booking WHERE reversed_at IS NULL
    GROUP BY account_id, period, window_start
)
SELECT format('limit_window account_id=%s period=%s window_start=%s', w.account_id, w.period, w.window_start)::text AS row_ref,
       format('utilized %s, but its bookings not reversed add up to %s', w.utilized, coalesce(b.booked, 0))::text AS detail
FROM limit_window w
LEFT JOIN b ON b.account_id = w.account_id AND b.period = w.period AND b.window_start = w.window_start
WHERE w.utilized <> coalesce(b.booked, 0)
UNION ALL
SELECT format('limit_booking reference=%s period=%s', k.reference, k.period)::text,
       format('booked into window %s of account %s, which does not exist', k.window_start, k.account_id)::text
FROM limit_booking k
LEFT JOIN limit_window w ON w.account_id = k.account_id AND w.period = k.period AND w.window_start = k.window_start
WHERE w.account_id IS NULL;

-- name: LimitWithin :many
-- No window is used beyond its limit (or below zero).
SELECT format('limit_window account_id=%s period=%s window_start=%s', w.account_id, w.period, w.window_start)::text AS row_ref,
       format('utilized %s of a limit of %s', w.utilized, w.limit_amount)::text AS detail
FROM limit_window w
WHERE w.utilized > w.limit_amount OR w.utilized < 0;

-- name: FXUnwindRecord :many
-- An UNWOUND contract has its unwind record (time and reason); a BOOKED
-- one has none.
SELECT format('fx_contract contract_id=%s reference=%s', c.contract_id, c.reference)::text AS row_ref,
       format('%s with unwound_at %s and unwind_reason %s', c.status,
              coalesce(c.unwound_at::text, 'none'), coalesce(quote_literal(c.unwind_reason), 'none'))::text AS detail
FROM fx_contract c
WHERE (c.status = 'UNWOUND' AND (c.unwound_at IS NULL OR c.unwind_reason IS NULL))
   OR (c.status = 'BOOKED' AND (c.unwound_at IS NOT NULL OR c.unwind_reason IS NOT NULL));

-- name: Currencies :many
-- Every currency an amount is kept in (Go knows their minor units).
SELECT DISTINCT x.currency::text AS currency FROM (
    SELECT a.currency FROM account a
    UNION SELECT l.currency FROM account_limit l
    UNION SELECT w.currency FROM limit_window w
    UNION SELECT c.debit_currency FROM fx_contract c
    UNION SELECT c.credit_currency FROM fx_contract c
) x ORDER BY 1;

-- name: Amounts :many
-- Amounts are positive (balances and utilization: any sign the other
-- rules allow) and within their currency's minor units. A currency Go
-- does not know has digits -1: everything in it is reported.
WITH cur AS (
    SELECT unnest(@currencies::text[]) AS currency, unnest(@digits::int[]) AS digits
), amounts AS (
    SELECT format('account account_id=%s', a.account_id) AS row_ref, a.currency::text AS currency,
           'opening_balance' AS field, a.opening_balance AS amount, false AS positive FROM account a
    UNION ALL SELECT format('account account_id=%s', a.account_id), a.currency, 'balance', a.balance, false FROM account a
    UNION ALL SELECT format('account account_id=%s', a.account_id), a.currency, 'fee', a.fee, false FROM account a
    UNION ALL SELECT format('transaction_id=%s (account_id=%s seq=%s)', t.transaction_id, t.account_id, t.seq),
                     a.currency, 'amount', t.amount, true
              FROM account_transaction t JOIN account a ON a.account_id = t.account_id
    UNION ALL SELECT format('transaction_id=%s (account_id=%s seq=%s)', t.transaction_id, t.account_id, t.seq),
                     a.currency, 'balance_after', t.balance_after, false
              FROM account_transaction t JOIN account a ON a.account_id = t.account_id
    UNION ALL SELECT format('account_limit account_id=%s period=%s', l.account_id, l.period), l.currency, 'amount', l.amount, true
              FROM account_limit l
    UNION ALL SELECT format('limit_window account_id=%s period=%s window_start=%s', w.account_id, w.period, w.window_start),
                     w.currency, 'limit_amount', w.limit_amount, true FROM limit_window w
    UNION ALL SELECT format('limit_window account_id=%s period=%s window_start=%s', w.account_id, w.period, w.window_start),
                     w.currency, 'utilized', w.utilized, false FROM limit_window w
    UNION ALL SELECT format('limit_booking reference=%s period=%s', k.reference, k.period), w.currency, 'amount', k.amount, true
              FROM limit_booking k
              JOIN limit_window w ON w.account_id = k.account_id AND w.period = k.period AND w.window_start = k.window_start
    UNION ALL SELECT format('fx_contract contract_id=%s reference=%s', c.contract_id, c.reference), c.debit_currency,
                     'debit_amount', c.debit_amount, true FROM fx_contract c
    UNION ALL SELECT format('fx_contract contract_id=%s reference=%s', c.contract_id, c.reference), c.credit_currency,
                     'credit_amount', c.credit_amount, true FROM fx_contract c
)
SELECT m.row_ref::text AS row_ref,
       (m.amount > 0 OR NOT m.positive)::boolean AS positive_ok,
       (cur.digits >= 0 AND m.amount = round(m.amount, cur.digits))::boolean AS minor_units_ok,
       format('%s %s %s%s', m.field, m.amount, m.currency,
              CASE WHEN cur.digits < 0 THEN ' (not a currency the ledger knows)'
                   ELSE format(' (%s decimals)', cur.digits) END)::text AS detail
FROM amounts m
JOIN cur ON cur.currency = m.currency
WHERE (m.positive AND m.amount <= 0) OR cur.digits < 0 OR m.amount <> round(m.amount, cur.digits);
