-- name: UpsertRate :one
INSERT INTO fx_rate (base, quote, rate, set_by, dealable)
VALUES (@base, @quote, @rate, @set_by, @dealable)
ON CONFLICT (base, quote) DO UPDATE
SET rate = excluded.rate, set_by = excluded.set_by, dealable = excluded.dealable, updated_at = now()
RETURNING *;

-- name: RateDealable :one
-- Whether the rate a quote used can still be dealt at (no row: removed).
SELECT dealable FROM fx_rate WHERE base = @base AND quote = @quote;

-- name: ListRates :many
SELECT * FROM fx_rate ORDER BY base, quote;

-- name: RatePair :many
-- Both directions of a pair: the direct rate wins, the inverse is the
-- fallback (see Quote).
SELECT * FROM fx_rate
WHERE (base = @debit_currency AND quote = @credit_currency)
   OR (base = @credit_currency AND quote = @debit_currency);

-- name: AccountCurrency :one
SELECT currency FROM account WHERE account_id = @account_id;

-- name: InsertContract :one
-- Insert-first; a reference already used inserts nothing.
INSERT INTO fx_contract (contract_id, reference, account_id, debit_currency, debit_amount,
                         credit_currency, credit_amount, rate, rate_base, rate_quote, value_date, status)
VALUES (@contract_id, @reference, @account_id, @debit_currency, @debit_amount,
        @credit_currency, @credit_amount, @rate, @rate_base, @rate_quote, @value_date, 'BOOKED')
ON CONFLICT (reference) DO NOTHING
RETURNING *;

-- name: GetContract :one
SELECT * FROM fx_contract WHERE contract_id = @contract_id;

-- name: GetContractByReference :one
SELECT * FROM fx_contract WHERE reference = @reference;

-- name: UnwindContract :one
UPDATE fx_contract
SET status = 'UNWOUND', unwind_reason = @unwind_reason, unwound_at = now()
WHERE contract_id = @contract_id AND status = 'BOOKED'
RETURNING *;

-- name: UnwindContractByReference :one
UPDATE fx_contract
SET status = 'UNWOUND', unwind_reason = @unwind_reason, unwound_at = now()
WHERE reference = @reference AND status = 'BOOKED'
RETURNING *;
