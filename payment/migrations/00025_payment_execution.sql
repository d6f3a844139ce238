-- Execution moves money: a payment's booking (what SubmitPayment debited,
-- converted and charged, and where it goes), and the statuses after
-- execution: DELIVERED (the rail took it) and RETURNED (the rail refused
-- it for good; the debit was given back).

-- +goose Up
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('SCHEDULED', 'ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED', 'REJECTED', 'FAILED'));

-- One row per executed payment, written by SubmitPayment's last step in
-- the transaction that makes the payment ACCEPTED and enqueues its rail
-- instruction. Amounts in their own currencies: the debit in the
-- account's, the credit in the payment's, the fee in the account's.
CREATE TABLE payment_booking (
    payment_id            text          PRIMARY KEY,
    process_id            uuid          NOT NULL,
    debit_account_id      text          NOT NULL,
    debit_transaction_id  uuid          NOT NULL,
    fx_contract_id        uuid,
    debit_currency        char(3)       NOT NULL,
    debit_amount          numeric(24,4) NOT NULL CHECK (debit_amount > 0),
    credit_currency       char(3)       NOT NULL,
    credit_amount         numeric(24,4) NOT NULL CHECK (credit_amount > 0),
    fee_currency          char(3)       NOT NULL,
    fee_amount            numeric(24,4) NOT NULL CHECK (fee_amount >= 0),
    value_date            date          NOT NULL,
    beneficiary_name      text          NOT NULL,
    beneficiary_iban      text,
    beneficiary_bic       text,
    -- The rail instruction enqueued with the booking (package outbox).
    outbox_id             uuid,
    -- When the rail refused it for good: the reversal that gave the money
    -- back, and the rail's code.
    return_transaction_id uuid,
    return_code           text,
    created_at            timestamptz   NOT NULL DEFAULT now()
);

CREATE INDEX payment_booking_account_idx ON payment_booking (debit_account_id, created_at);

-- +goose Down
DROP TABLE payment_booking;
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('SCHEDULED', 'ACCEPTED', 'PROCESSING', 'REJECTED', 'FAILED'));
