-- An account's id is its tenant's: the same id in two tenants names two
-- accounts. account_id stays the account's key in the ledger (postings,
-- limits, FX contracts, bookings); for an account created from now on it
-- is derived from the tenant and the tenant's id (account.Key), for one
-- created before it is that id itself. external_id is the id the tenant
-- chose, unique within the tenant. No posting changes it, so the index
-- leaves the balance's updates HOT.

-- +goose Up
ALTER TABLE account ADD COLUMN external_id text;
UPDATE account SET external_id = account_id;
ALTER TABLE account ALTER COLUMN external_id SET NOT NULL;
ALTER TABLE account ADD CONSTRAINT account_external_id_check CHECK (external_id ~ '^[A-Za-z0-9._-]{1,64}$');
-- external_id first: it also finds an id in every tenant, for an operator.
CREATE UNIQUE INDEX account_external_key ON account (external_id, tenant_id);

-- +goose Down
DROP INDEX account_external_key;
ALTER TABLE account DROP CONSTRAINT account_external_id_check;
ALTER TABLE account DROP COLUMN external_id;
