-- Suspected duplicates (a Phase A control) and the tenants' control
-- settings.
--
-- payment_fingerprint: one row a tenant's fingerprint (its debtor
-- account, creditor IBAN, amount, currency and execution date, hashed),
-- owned by the first payment that had it until expires_at, the end of
-- the duplicate window in force when that payment was taken in. A later
-- payment with the fingerprint finds its owner through the primary key;
-- one after expires_at takes the row over. Deleted by the retention
-- cleaner once expired, which changes no answer. No foreign keys: a
-- payment's row is never deleted before its fingerprint matters.
--
-- tenant_control_settings: what a tenant's controls do; a tenant without
-- a row has the defaults (payment.DefaultControlSettings).

-- +goose Up
CREATE TABLE payment_fingerprint (
    tenant_id   text        NOT NULL,
    fingerprint bytea       NOT NULL,
    payment_id  text        NOT NULL,
    external_id text        NOT NULL,
    received_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, fingerprint)
);
CREATE INDEX payment_fingerprint_expires_idx ON payment_fingerprint (expires_at);

CREATE TABLE tenant_control_settings (
    tenant_id             text        PRIMARY KEY,
    duplicate_action      text        NOT NULL CHECK (duplicate_action IN ('WARN', 'HOLD', 'REJECT', 'OFF')),
    duplicate_window_days integer     NOT NULL CHECK (duplicate_window_days BETWEEN 1 AND 90),
    screening_on_error    text        NOT NULL CHECK (screening_on_error IN ('HOLD', 'REJECT', 'ALLOW')),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE tenant_control_settings;
DROP TABLE payment_fingerprint;
