-- A file's part lists its 10,000 payments' keys: random UUIDs, which pglz
-- cannot compress by the quarter it asks, so every part's insert paid for
-- a compression it then threw away (a tenth of a second of PostgreSQL's
-- CPU for every 100,000 payments of a bulk file). Stored out of line as
-- they are: the same size.

-- +goose Up
ALTER TABLE payment_batch_parts ALTER COLUMN payment_ids SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE payment_batch_parts ALTER COLUMN payment_ids SET STORAGE EXTENDED;
