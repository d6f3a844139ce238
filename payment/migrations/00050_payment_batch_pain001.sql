-- A bulk file taken in as a pain.001 keeps what its status report
-- (pain.002, GET /v1/payment-batches/{id}/status-report) names: the
-- message's id, version and figures, and each payment-information block
-- with its transactions' InstrId and EndToEndId, their number in the file
-- (a rejection's line) and the key of the payment each became. One row
-- per file, apart from payment_batches, so that a file's progress never
-- reads it.

-- +goose Up
CREATE TABLE payment_batch_pain001 (
    batch_id   text        PRIMARY KEY,
    msg_id     text        NOT NULL,
    namespace  text        NOT NULL,
    document   jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE payment_batch_pain001;
