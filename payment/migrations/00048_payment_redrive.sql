-- A RETURNED payment whose rail instruction an operator requeues is
-- debited again before it is sent (payment.Redrive): redrives counts
-- those debits, each referenced '<processId>:Redrive:<n>', and
-- debit_transaction_id names the debit that stands. A return reverses
-- that one. verify checks that an executed payment has exactly one debit
-- standing, a returned one none.

-- +goose Up
ALTER TABLE payment_booking ADD COLUMN redrives integer NOT NULL DEFAULT 0 CHECK (redrives >= 0);

-- +goose Down
ALTER TABLE payment_booking DROP COLUMN redrives;
