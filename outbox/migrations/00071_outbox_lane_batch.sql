-- A strict participant's consecutive messages claimed together (a lane's
-- batch, sent in one call by a BatchSender): the head's in-flight row is
-- the participant's marker, as before; the messages claimed behind it are
-- followers, strict too (a requeue keeps them strict) but outside the
-- unique marker. The claims' "no strict row in flight" test still counts
-- followers, through the plain index, so nothing of a lane is claimed
-- while any part of its batch is in flight.

-- +goose Up
ALTER TABLE payment_outbox_inflight ADD COLUMN follower boolean NOT NULL DEFAULT false;

DROP INDEX ix_inflight_strict;
CREATE INDEX ix_inflight_strict
    ON payment_outbox_inflight (participant_id)
    WHERE strict;
CREATE UNIQUE INDEX ix_inflight_strict_head
    ON payment_outbox_inflight (participant_id)
    WHERE strict AND NOT follower;

-- +goose Down
DROP INDEX ix_inflight_strict_head;
DROP INDEX ix_inflight_strict;
CREATE UNIQUE INDEX ix_inflight_strict
    ON payment_outbox_inflight (participant_id)
    WHERE strict;
ALTER TABLE payment_outbox_inflight DROP COLUMN follower;
