-- name: KeepHits :exec
-- The first answer kept for a payment stays: a second run's is dropped.
INSERT INTO screening_hits (payment_key, list, reason)
SELECT unnest(@payment_keys::text[]), unnest(@lists::text[]), unnest(@reasons::text[])
ON CONFLICT (payment_key) DO NOTHING;

-- name: Hits :many
SELECT payment_key, list, reason FROM screening_hits WHERE payment_key = ANY(@payment_keys::text[]);
