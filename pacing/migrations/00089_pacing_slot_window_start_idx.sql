-- pacing_slot's second index, (config_name, window_start), served only
-- retention's walk of old slots, a config at a time. Every slot paid for
-- it: a text key and a second column read at every comparison, nearly
-- half of what placing a file's payments spent on slot index entries.
-- Retention reads old slots by their time alone, each config's window
-- length looked up beside (DeleteSlots); a window's slots share one
-- deduplicated entry's key.

-- +goose Up
CREATE INDEX pacing_slot_window_start_idx ON pacing_slot (window_start);
DROP INDEX pacing_slot_window_idx;

-- +goose Down
CREATE INDEX pacing_slot_window_idx ON pacing_slot (config_name, window_start);
DROP INDEX pacing_slot_window_start_idx;
