-- +goose Up
-- When execution began (SCHEDULED → ACCEPTED): what pacing is judged by,
-- and what an operator asks first about a payment at a cut-off.
ALTER TABLE payments ADD COLUMN accepted_at timestamptz;

-- +goose Down
ALTER TABLE payments DROP COLUMN accepted_at;
