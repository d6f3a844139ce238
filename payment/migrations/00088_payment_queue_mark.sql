-- The queue's mark for payments: every SCHEDULED payment not paused whose
-- slot is before the mark has its queue item. Phase A writes the queue
-- items of the slots before it only; the dispatcher's feeder
-- (payment.Feeder, every cycle) enqueues the payments whose slots come
-- within its horizon and moves the mark up. A file due tomorrow is
-- stored without queue items, and they are written as it comes due.
--
-- No mark (NULL) until a feeder first runs: every payment is enqueued at
-- once, as where no dispatcher runs. A mark may always come down (the
-- rule is weaker), so the first feed sets one without writing anything;
-- it goes up only with the items between.

-- +goose Up
CREATE TABLE payment_queue_mark (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    mark timestamptz
);
INSERT INTO payment_queue_mark (mark) VALUES (NULL);

-- +goose Down
DROP TABLE payment_queue_mark;
