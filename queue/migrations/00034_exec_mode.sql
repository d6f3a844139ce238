-- How an item type's items are executed: PER_ITEM, one execution workflow
-- an item (the seeds' design), or BATCH, one workflow a claimed batch that
-- executes each item at its slot (dispatch.BatchExecution). Read by the
-- dispatcher every cycle, like every setting here.

-- +goose Up
ALTER TABLE exec_rate_config
    ADD COLUMN exec_mode text NOT NULL DEFAULT 'PER_ITEM' CHECK (exec_mode IN ('PER_ITEM', 'BATCH'));

-- +goose Down
ALTER TABLE exec_rate_config DROP COLUMN exec_mode;
