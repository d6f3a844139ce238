-- name: InsertAccount :one
-- Insert-first; an existing key, or tenant's id, inserts nothing (the
-- caller compares specs).
INSERT INTO account (account_id, external_id, tenant_id, currency, opening_balance, balance, limit_based, fee)
VALUES (@account_id, @external_id, @tenant_id, @currency, @opening_balance, @opening_balance, @limit_based, @fee)
ON CONFLICT DO NOTHING
RETURNING *;

-- name: GetAccount :one
SELECT * FROM account WHERE account_id = @account_id;

-- name: FindAccounts :many
-- The accounts with this tenant's id: the tenant's one, or, for no
-- tenant (an operator), every tenant's.
SELECT * FROM account
WHERE external_id = @external_id AND (sqlc.narg('tenant_id')::text IS NULL OR tenant_id = sqlc.narg('tenant_id'))
ORDER BY tenant_id
LIMIT 10;

-- name: LookupAccounts :many
-- Phase A's bulk lookup: one round trip for a whole file's debtor
-- accounts, by their tenants' ids (pairs: external_ids[i], tenant_ids[i]).
SELECT account_id, external_id, tenant_id, currency, limit_based, fee
FROM account
WHERE (external_id, tenant_id) IN (SELECT unnest(@external_ids::text[]), unnest(@tenant_ids::text[]));

-- name: RecentTransactions :many
SELECT * FROM account_transaction
WHERE account_id = @account_id
ORDER BY seq DESC
LIMIT @max_rows;

-- name: GetTransaction :one
SELECT * FROM account_transaction WHERE transaction_id = @transaction_id;

-- name: GetTransactionByReference :one
SELECT * FROM account_transaction WHERE reference = @reference;

-- name: Post :one
-- One posting, one round trip: see ledger_post in ledger/account/migrations/functions.sql.
SELECT p.status::text AS status,
       coalesce(p.transaction_id, '00000000-0000-0000-0000-000000000000')::uuid AS transaction_id,
       coalesce(p.account_id, '')::text AS account_id,
       coalesce(p.seq, 0)::bigint AS seq,
       coalesce(p.type, '')::text AS type,
       coalesce(p.amount, 0)::numeric AS amount,
       coalesce(p.fee, 0)::numeric AS fee,
       coalesce(p.balance_after, 0)::numeric AS balance_after,
       coalesce(p.reverses, '00000000-0000-0000-0000-000000000000')::uuid AS reverses,
       coalesce(p.reference, '')::text AS reference,
       coalesce(p.description, '')::text AS description,
       coalesce(p.value_date, 'epoch')::date AS value_date,
       coalesce(p.created_at, 'epoch')::timestamptz AS created_at,
       coalesce(p.balance, 0)::numeric AS balance
FROM ledger_post(@kind::text, sqlc.narg('account_id')::text, sqlc.narg('currency')::text,
                 sqlc.narg('amount')::numeric, @charge_fee::boolean, sqlc.narg('reverses')::uuid,
                 @new_transaction_id::uuid, @reference::text, sqlc.narg('description')::text,
                 @value_date::date) p;

-- name: TenantsWithAccounts :many
-- Which of the tenants have an account (account_tenant_idx).
SELECT DISTINCT a.tenant_id::text AS tenant_id
FROM account a
WHERE a.tenant_id = ANY(@tenant_ids::text[]);

-- name: PostMany :many
-- A group's postings, one round trip: see ledger_post_many in ledger/account/migrations/functions.sql.
SELECT p.ord::int AS ord,
       p.status::text AS status,
       coalesce(p.transaction_id, '00000000-0000-0000-0000-000000000000')::uuid AS transaction_id,
       coalesce(p.account_id, '')::text AS account_id,
       coalesce(p.seq, 0)::bigint AS seq,
       coalesce(p.type, '')::text AS type,
       coalesce(p.amount, 0)::numeric AS amount,
       coalesce(p.fee, 0)::numeric AS fee,
       coalesce(p.balance_after, 0)::numeric AS balance_after,
       coalesce(p.reverses, '00000000-0000-0000-0000-000000000000')::uuid AS reverses,
       coalesce(p.reference, '')::text AS reference,
       coalesce(p.description, '')::text AS description,
       coalesce(p.value_date, 'epoch')::date AS value_date,
       coalesce(p.created_at, 'epoch')::timestamptz AS created_at,
       coalesce(p.balance, 0)::numeric AS balance
FROM ledger_post_many(@kind::text, @account_ids::text[], @currencies::text[], @amounts::numeric[],
                      @charge_fees::boolean[], @transaction_ids::uuid[], @refs::text[],
                      @descriptions::text[], @value_dates::date[]) p;

-- name: GetAccounts :many
-- A group's accounts, in one query (a group's debits).
SELECT * FROM account WHERE account_id = ANY(@account_ids::text[]);
