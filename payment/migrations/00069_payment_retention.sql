-- Retention (payment.DeleteNotifications): the records that a payment's
-- parties were told of a status, found oldest first by when they were
-- written; only a settled payment's go.

-- +goose Up
CREATE INDEX payment_notifications_created_idx ON payment_notifications (created_at);

-- +goose Down
DROP INDEX payment_notifications_created_idx;
