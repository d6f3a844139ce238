-- An intake row holds a chunk's payments as arrays of their columns,
-- written once and read once by Phase A, seconds later, then deleted.
-- Compressing them (pglz) cost a few percent of PostgreSQL's CPU during a
-- file's intake for bytes that live seconds: they are stored out of line
-- as they are.

-- +goose Up
ALTER TABLE payment_intake
    ALTER COLUMN payment_ids SET STORAGE EXTERNAL,
    ALTER COLUMN external_ids SET STORAGE EXTERNAL,
    ALTER COLUMN tenant_ids SET STORAGE EXTERNAL,
    ALTER COLUMN debtor_accounts SET STORAGE EXTERNAL,
    ALTER COLUMN amounts SET STORAGE EXTERNAL,
    ALTER COLUMN currencies SET STORAGE EXTERNAL,
    ALTER COLUMN creditor_names SET STORAGE EXTERNAL,
    ALTER COLUMN creditor_ibans SET STORAGE EXTERNAL,
    ALTER COLUMN creditor_bics SET STORAGE EXTERNAL,
    ALTER COLUMN remittance_infos SET STORAGE EXTERNAL,
    ALTER COLUMN requested_execution_times SET STORAGE EXTERNAL,
    ALTER COLUMN rails SET STORAGE EXTERNAL,
    ALTER COLUMN priorities SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE payment_intake
    ALTER COLUMN payment_ids SET STORAGE EXTENDED,
    ALTER COLUMN external_ids SET STORAGE EXTENDED,
    ALTER COLUMN tenant_ids SET STORAGE EXTENDED,
    ALTER COLUMN debtor_accounts SET STORAGE EXTENDED,
    ALTER COLUMN amounts SET STORAGE EXTENDED,
    ALTER COLUMN currencies SET STORAGE EXTENDED,
    ALTER COLUMN creditor_names SET STORAGE EXTENDED,
    ALTER COLUMN creditor_ibans SET STORAGE EXTENDED,
    ALTER COLUMN creditor_bics SET STORAGE EXTENDED,
    ALTER COLUMN remittance_infos SET STORAGE EXTENDED,
    ALTER COLUMN requested_execution_times SET STORAGE EXTENDED,
    ALTER COLUMN rails SET STORAGE EXTENDED,
    ALTER COLUMN priorities SET STORAGE EXTENDED;
