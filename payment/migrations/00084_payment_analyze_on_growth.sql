-- Statistics refreshed as a payment's bookings and notifications double:
-- both are appended to and read by payment, so no plan depends on fresher
-- statistics (docs/performance.md, Autovacuum). payments itself keeps the
-- default: its lists filter on status and time.

-- +goose Up
ALTER TABLE payment_booking SET (autovacuum_analyze_scale_factor = 1.0);
ALTER TABLE payment_notifications SET (autovacuum_analyze_scale_factor = 1.0);

-- +goose Down
ALTER TABLE payment_booking RESET (autovacuum_analyze_scale_factor);
ALTER TABLE payment_notifications RESET (autovacuum_analyze_scale_factor);
