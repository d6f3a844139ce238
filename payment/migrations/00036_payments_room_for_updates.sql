-- A payment taken in is stored with its request in its columns alone
-- (payment.Store.Receive): the JSON copy beside them doubled the row. It
-- is kept for payments stored before, and for payments refused before
-- they were received, whose columns may not hold what was sent.
--
-- Phase A then adds its context (about 250 bytes) to every payment it
-- schedules, in one statement for a chunk of thousands, and the execution
-- rewrites the row three or four times more. An update stays on its page
-- (HOT: no index entry written) only when the page has room for the new
-- version beside the old one, which a statement cannot prune; at
-- fillfactor 80 one in five did. Two fifths of a page kept free lets
-- most of them.

-- +goose Up
ALTER TABLE payments ALTER COLUMN request DROP NOT NULL;
ALTER TABLE payments SET (fillfactor = 60);

-- +goose Down
ALTER TABLE payments SET (fillfactor = 80);
UPDATE payments
SET request = jsonb_strip_nulls(jsonb_build_object(
        'paymentId', external_id, 'tenantId', tenant_id, 'debtorAccount', debtor_account,
        'amount', amount::text, 'currency', currency,
        'creditor', jsonb_build_object('name', creditor_name, 'iban', creditor_iban, 'bic', creditor_bic),
        'requestedExecutionTime', requested_execution_time, 'remittanceInfo', remittance_info))
WHERE request IS NULL;
ALTER TABLE payments ALTER COLUMN request SET NOT NULL;
