-- The hits the screening service answered (package screening), kept by
-- payment key before Phase A goes on: a retried Phase A reads a payment's
-- hit back instead of asking again, so a hit never turns into a clear
-- because a list changed or the service answered otherwise between two
-- attempts. Only hits are kept: a clear or an unanswered payment is asked
-- again on a retry, which can only make it a hit (a payment already
-- committed is never screened again), and hits are rare, so the table
-- stays small without a retention policy of its own.

-- +goose Up
CREATE TABLE screening_hits (
    -- payment.Key(tenant, id): the payment's row may not exist yet.
    payment_key  text        PRIMARY KEY,
    list         text        NOT NULL,
    reason       text        NOT NULL,
    screened_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE screening_hits;
