-- The bulk files a tenant sent, by fingerprint (payment.Service.Take):
-- a file that matches one its tenant sent within the duplicate window is
-- refused. A row is written once its file was accepted, one per tenant
-- of the file; expires_at is when its window closes, after which the
-- retention cleaner deletes it (payment.DeleteFileFingerprints).

-- +goose Up
CREATE TABLE payment_file_fingerprints (
    tenant_id   text        NOT NULL,
    fingerprint text        NOT NULL,
    batch_id    text        NOT NULL,
    received_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX payment_file_fingerprints_lookup_idx ON payment_file_fingerprints (fingerprint, tenant_id, received_at DESC);
CREATE INDEX payment_file_fingerprints_expires_idx ON payment_file_fingerprints (expires_at);

-- +goose Down
DROP TABLE payment_file_fingerprints;
