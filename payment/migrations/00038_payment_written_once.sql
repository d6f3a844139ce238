-- A payment's row is written once, by Phase A, in the status it reached
-- (SCHEDULED or REJECTED). Until then the payments taken in wait in their
-- Phase A workflow's intake row, a chunk's 2,500 requests in one row of
-- column arrays, written and read in one statement each. A payment used to
-- be stored RECEIVED and rewritten by Phase A: the rewrite found room on
-- its page one time in four, so it wrote the row's index entries again,
-- and Phase A read every row back before.
--
-- payment_keys holds the ids tenants have used, one row each, claimed
-- when the payment is taken in: a replay or a conflict is found at once,
-- as before, also while the payment waits for Phase A. It is also how a
-- tenant's id finds the payment's key (and, before Phase A, its intake
-- row), so payments no longer needs its own index on the pair.

-- +goose Up
CREATE TABLE payment_keys (
    external_id      text NOT NULL,
    tenant_id        text NOT NULL,
    payment_id       text NOT NULL,
    -- The Phase A workflow the payment was given to, whose intake row
    -- holds it until Phase A stores it (NULL: stored before there were
    -- intake rows).
    init_workflow_id text,
    -- external_id first: it also finds an id in every tenant, for an operator.
    PRIMARY KEY (external_id, tenant_id)
);

ALTER TABLE payment_intake
    ADD COLUMN external_ids              text[],
    ADD COLUMN tenant_ids                text[],
    ADD COLUMN debtor_accounts           text[],
    ADD COLUMN amounts                   numeric[],
    ADD COLUMN currencies                text[],
    ADD COLUMN creditor_names            text[],
    ADD COLUMN creditor_ibans            text[],
    ADD COLUMN creditor_bics             text[],
    ADD COLUMN remittance_infos          text[],
    ADD COLUMN requested_execution_times timestamptz[];

-- The payments still RECEIVED move into their intake rows (each intake
-- row's keys unnested once, then joined). A RECEIVED payment no intake
-- row lists stays as it is: nothing is lost.
CREATE TEMPORARY TABLE staged_keys ON COMMIT DROP AS
SELECT i.init_workflow_id, k.payment_id
FROM payment_intake i
CROSS JOIN LATERAL unnest(i.payment_ids) AS k (payment_id)
JOIN payments p ON p.payment_id = k.payment_id AND p.status = 'RECEIVED';

UPDATE payment_intake i
SET payment_ids = r.payment_ids, external_ids = r.external_ids, tenant_ids = r.tenant_ids,
    debtor_accounts = r.debtor_accounts, amounts = r.amounts, currencies = r.currencies,
    creditor_names = r.creditor_names, creditor_ibans = r.creditor_ibans, creditor_bics = r.creditor_bics,
    remittance_infos = r.remittance_infos, requested_execution_times = r.requested_execution_times
FROM (
    SELECT s.init_workflow_id,
           array_agg(p.payment_id ORDER BY p.payment_id) AS payment_ids,
           array_agg(p.external_id ORDER BY p.payment_id) AS external_ids,
           array_agg(p.tenant_id ORDER BY p.payment_id) AS tenant_ids,
           array_agg(p.debtor_account ORDER BY p.payment_id) AS debtor_accounts,
           array_agg(p.amount ORDER BY p.payment_id) AS amounts,
           array_agg(p.currency::text ORDER BY p.payment_id) AS currencies,
           array_agg(p.creditor_name ORDER BY p.payment_id) AS creditor_names,
           array_agg(coalesce(p.creditor_iban, '') ORDER BY p.payment_id) AS creditor_ibans,
           array_agg(coalesce(p.creditor_bic, '') ORDER BY p.payment_id) AS creditor_bics,
           array_agg(coalesce(p.remittance_info, '') ORDER BY p.payment_id) AS remittance_infos,
           array_agg(p.requested_execution_time ORDER BY p.payment_id) AS requested_execution_times
    FROM staged_keys s
    JOIN payments p ON p.payment_id = s.payment_id
    GROUP BY s.init_workflow_id
) r
WHERE i.init_workflow_id = r.init_workflow_id;
DELETE FROM payment_intake WHERE external_ids IS NULL;

INSERT INTO payment_keys (external_id, tenant_id, payment_id, init_workflow_id)
SELECT p.external_id, p.tenant_id, p.payment_id, s.init_workflow_id
FROM payments p
LEFT JOIN staged_keys s ON s.payment_id = p.payment_id
ON CONFLICT DO NOTHING;
DELETE FROM payments p USING staged_keys s WHERE p.payment_id = s.payment_id;

ALTER TABLE payment_intake
    ALTER COLUMN external_ids SET NOT NULL, ALTER COLUMN tenant_ids SET NOT NULL,
    ALTER COLUMN debtor_accounts SET NOT NULL, ALTER COLUMN amounts SET NOT NULL,
    ALTER COLUMN currencies SET NOT NULL, ALTER COLUMN creditor_names SET NOT NULL,
    ALTER COLUMN creditor_ibans SET NOT NULL, ALTER COLUMN creditor_bics SET NOT NULL,
    ALTER COLUMN remittance_infos SET NOT NULL, ALTER COLUMN requested_execution_times SET NOT NULL;

DROP INDEX payments_external_key;

-- +goose Down
CREATE UNIQUE INDEX payments_external_key ON payments (external_id, tenant_id);
INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
                      creditor_iban, creditor_bic, remittance_info, requested_execution_time, status)
SELECT r.*, 'RECEIVED'
FROM payment_intake i,
     unnest(i.payment_ids, i.external_ids, i.tenant_ids, i.debtor_accounts, i.amounts, i.currencies,
            i.creditor_names, i.creditor_ibans, i.creditor_bics, i.remittance_infos,
            i.requested_execution_times)
         AS r (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
               creditor_iban, creditor_bic, remittance_info, requested_execution_time)
ON CONFLICT DO NOTHING;
UPDATE payments SET creditor_iban = nullif(creditor_iban, ''), creditor_bic = nullif(creditor_bic, ''),
                    remittance_info = nullif(remittance_info, '')
WHERE status = 'RECEIVED';
ALTER TABLE payment_intake
    DROP COLUMN external_ids, DROP COLUMN tenant_ids, DROP COLUMN debtor_accounts, DROP COLUMN amounts,
    DROP COLUMN currencies, DROP COLUMN creditor_names, DROP COLUMN creditor_ibans, DROP COLUMN creditor_bics,
    DROP COLUMN remittance_infos, DROP COLUMN requested_execution_times;
DROP TABLE payment_keys;
