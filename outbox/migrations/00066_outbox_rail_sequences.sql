-- A participant's numbers are counted per rail: each rail is its own
-- network and sees a gap-free sequence of the participant's instructions
-- on it. A participant's counter over every rail (the one row it had)
-- goes on for each rail it has used, so no rail ever sees a number again
-- (only one jump, at this migration); a rail it has not used starts at 1.
-- Rows with rail_type '' are the counters of the numbers taken before.

-- +goose Up
ALTER TABLE participant_outbox_sequences ADD COLUMN rail_type text NOT NULL DEFAULT '';
ALTER TABLE participant_outbox_sequences DROP CONSTRAINT participant_outbox_sequences_pkey;
ALTER TABLE participant_outbox_sequences ADD PRIMARY KEY (participant_id, rail_type);
INSERT INTO participant_outbox_sequences (participant_id, rail_type, next_sequence_id)
SELECT s.participant_id, k.rail_type, s.next_sequence_id
FROM participant_outbox_sequences s
JOIN (SELECT DISTINCT participant_id, rail_type FROM payment_outbox_keys) k ON k.participant_id = s.participant_id
WHERE s.rail_type = '' AND k.rail_type <> '';
-- A number is unique on its rail; the participant's lowest pending
-- number (the strict head) is still the index's first entry.
ALTER TABLE payment_outbox_pending DROP CONSTRAINT payment_outbox_pending_participant_id_sequence_id_key;
ALTER TABLE payment_outbox_pending ADD CONSTRAINT payment_outbox_pending_participant_seq_rail_key UNIQUE (participant_id, sequence_id, rail_type);

-- +goose Down
-- Fails if two rails' pending rows of a participant share a number.
ALTER TABLE payment_outbox_pending DROP CONSTRAINT payment_outbox_pending_participant_seq_rail_key;
ALTER TABLE payment_outbox_pending ADD CONSTRAINT payment_outbox_pending_participant_id_sequence_id_key UNIQUE (participant_id, sequence_id);
-- One counter a participant again, past every number any rail took.
CREATE TEMP TABLE outbox_seq_down ON COMMIT DROP AS
SELECT participant_id, max(next_sequence_id) AS next_sequence_id FROM participant_outbox_sequences GROUP BY 1;
DELETE FROM participant_outbox_sequences;
ALTER TABLE participant_outbox_sequences DROP CONSTRAINT participant_outbox_sequences_pkey;
ALTER TABLE participant_outbox_sequences DROP COLUMN rail_type;
ALTER TABLE participant_outbox_sequences ADD PRIMARY KEY (participant_id);
INSERT INTO participant_outbox_sequences (participant_id, next_sequence_id) SELECT participant_id, next_sequence_id FROM outbox_seq_down;
