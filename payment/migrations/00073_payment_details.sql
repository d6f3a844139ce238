-- A payment's details (package txdetail: the optional fields carried to
-- the rail as they are) as one JSON object, NULL for none, so that a new
-- detail is declared in Go alone and needs no column. An intake row holds
-- its payments' details as an array of those objects' texts ("" for
-- none), out of line as its other arrays; a row staged before has none.

-- +goose Up
ALTER TABLE payments ADD COLUMN details jsonb;
ALTER TABLE payment_intake ADD COLUMN details text[];
ALTER TABLE payment_intake ALTER COLUMN details SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE payment_intake DROP COLUMN details;
ALTER TABLE payments DROP COLUMN details;
