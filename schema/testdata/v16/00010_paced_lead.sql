-- +goose Up
-- How far ahead of its slot a paced item's execution workflow starts. The
-- workflow engine's timers fire late under load (hundreds of milliseconds
-- to seconds on the embedded engine), so the workflow starts this much
-- early and holds the item in the worker, on the worker's own clock, until
-- its slot: execution follows the slots unless the engine is later than
-- the lead. 0: start at the slot (the engine's timer is the only clock).
-- Capped by the pre-start buffer: an item is claimed no earlier than that.
ALTER TABLE exec_rate_config
    ADD COLUMN paced_lead_ms integer NOT NULL DEFAULT 0
        CHECK (paced_lead_ms BETWEEN 0 AND 60000);

UPDATE exec_rate_config SET paced_lead_ms = 2000 WHERE item_type = 'PAYMENT';

-- +goose Down
ALTER TABLE exec_rate_config DROP COLUMN paced_lead_ms;
