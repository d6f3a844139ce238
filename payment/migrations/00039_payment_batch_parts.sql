-- A file's payments are listed a chunk to a row (part is the chunk's
-- number, its Phase A workflow init-<batch>-<part>), not a row each: a
-- file of 500,000 payments wrote 500,000 rows and index entries in one
-- COPY, a seventh of the intake's CPU. Its progress reads them back with
-- the payments, once per question. (Files listed before are cut in
-- parts of 2,500.)

-- +goose Up
CREATE TABLE payment_batch_parts (
    batch_id    text    NOT NULL,
    part        integer NOT NULL,
    payment_ids text[]  NOT NULL,
    PRIMARY KEY (batch_id, part)
);

INSERT INTO payment_batch_parts (batch_id, part, payment_ids)
SELECT batch_id, n / 2500, array_agg(payment_id ORDER BY payment_id)
FROM (SELECT batch_id, payment_id, (row_number() OVER (PARTITION BY batch_id ORDER BY payment_id) - 1) AS n
      FROM payment_batch_items) i
GROUP BY batch_id, n / 2500;

DROP TABLE payment_batch_items;

-- +goose Down
CREATE TABLE payment_batch_items (
    batch_id   text NOT NULL,
    payment_id text NOT NULL,
    PRIMARY KEY (batch_id, payment_id)
);
INSERT INTO payment_batch_items (batch_id, payment_id)
SELECT p.batch_id, unnest(p.payment_ids) FROM payment_batch_parts p
ON CONFLICT DO NOTHING;
DROP TABLE payment_batch_parts;
