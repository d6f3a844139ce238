-- The executions each window of a config has let go (pacing_execute, in
-- functions.sql): the limit held on executions, not only on the slots
-- handed out. A slot counts in its window only; an execution that comes
-- after its window ended (a backlog catching up) takes its place here, in
-- the window it runs in, or waits for one with room. A row a config and
-- window, rewritten by each execution: room on its page keeps the updates
-- HOT. Rows older than an hour are pruned as new windows start.

-- +goose Up
CREATE TABLE pacing_execution (
    config_name   text        NOT NULL,
    window_start  timestamptz NOT NULL,
    executed      integer     NOT NULL CHECK (executed > 0),
    PRIMARY KEY (config_name, window_start)
) WITH (fillfactor = 50);

-- +goose Down
DROP TABLE pacing_execution;
