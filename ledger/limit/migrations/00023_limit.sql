-- Period limits of the ledger's accounts (package ledger/limit): the
-- configured amount per period, the windows created as bookings fall into
-- them, and each booking, so a reversal takes it out of exactly the
-- windows it went into. Amounts as in the accounts' migration. No foreign
-- keys (the bookings are written inside a payment's step transaction).

-- +goose Up
-- The configured limit of an account per period, in the account currency.
CREATE TABLE account_limit (
    account_id  text          NOT NULL,
    period      text          NOT NULL CHECK (period IN ('MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH')),
    currency    char(3)       NOT NULL,
    amount      numeric(24,4) NOT NULL CHECK (amount > 0),
    updated_at  timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, period)
);

-- One window of one period of one account (UTC boundaries; a WEEK starts
-- on Monday), created by the first booking that falls into it.
CREATE TABLE limit_window (
    account_id    text          NOT NULL,
    period        text          NOT NULL,
    window_start  timestamptz   NOT NULL,
    window_end    timestamptz   NOT NULL,
    currency      char(3)       NOT NULL,
    limit_amount  numeric(24,4) NOT NULL CHECK (limit_amount > 0),
    utilized      numeric(24,4) NOT NULL DEFAULT 0,
    created_at    timestamptz   NOT NULL DEFAULT now(),
    updated_at    timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, period, window_start),
    CHECK (window_end > window_start),
    CONSTRAINT limit_window_within_limit CHECK (utilized >= 0 AND utilized <= limit_amount)
) WITH (fillfactor = 70);

-- What one booking put into which window, so that its reversal takes it out
-- of exactly those windows, whenever it runs.
CREATE TABLE limit_booking (
    reference     text          NOT NULL,
    period        text          NOT NULL,
    account_id    text          NOT NULL,
    window_start  timestamptz   NOT NULL,
    amount        numeric(24,4) NOT NULL CONSTRAINT limit_booking_amount_positive CHECK (amount > 0),
    booked_at     timestamptz   NOT NULL DEFAULT now(),
    reversed_at   timestamptz,
    PRIMARY KEY (reference, period)
);

CREATE INDEX limit_booking_window_idx ON limit_booking (account_id, period, window_start);

-- +goose Down
DROP TABLE limit_booking;
DROP TABLE limit_window;
DROP TABLE account_limit;
