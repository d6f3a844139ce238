-- Bulk files as the API took them: one row per file (its payments'
-- tenants, how many payments started and which were rejected in the
-- file), and which payments it holds, for the progress of a file.
-- +goose Up
CREATE TABLE payment_batches (
    batch_id   text PRIMARY KEY,
    tenants    text[] NOT NULL,
    payments   integer NOT NULL,
    chunks     integer NOT NULL,
    rejected   integer NOT NULL DEFAULT 0,
    rejections jsonb NOT NULL DEFAULT '[]',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE payment_batch_items (
    batch_id   text NOT NULL,
    payment_id text NOT NULL,
    PRIMARY KEY (batch_id, payment_id)
);

-- +goose Down
DROP TABLE payment_batch_items;
DROP TABLE payment_batches;
