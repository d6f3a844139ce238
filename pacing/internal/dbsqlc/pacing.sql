-- name: PutConfig :one
-- Creates a config or changes it; a change bumps its version. Window
-- counters are kept: they count across versions.
INSERT INTO pacing_config AS c (config_name, max_per_window, window_ms, headroom_windows, active)
VALUES (@config_name, @max_per_window, @window_ms, @headroom_windows, true)
ON CONFLICT (config_name) DO UPDATE
SET max_per_window = excluded.max_per_window,
    window_ms = excluded.window_ms,
    headroom_windows = excluded.headroom_windows,
    active = true,
    version = c.version + 1,
    updated_at = now()
RETURNING *;

-- name: GetConfig :one
SELECT * FROM pacing_config WHERE config_name = @config_name;

-- name: ListConfigs :many
SELECT * FROM pacing_config ORDER BY config_name;

-- name: DeactivateConfig :one
UPDATE pacing_config SET active = false, version = version + 1, updated_at = now()
WHERE config_name = @config_name
RETURNING *;

-- name: Assign :many
-- One round trip for any number of events requesting the same instant,
-- before a deadline (NULL: none); @fresh: none of them has a slot, else
-- the call fails on the key (pacing_assign's p_fresh). EXHAUSTED and LATE
-- rows carry no slot: epoch and -1 stand in for it.
SELECT a.event_id::text AS event_id, a.status::text AS status,
       coalesce(a.window_start, 'epoch')::timestamptz AS window_start,
       coalesce(a.scheduled_time, 'epoch')::timestamptz AS scheduled_time,
       coalesce(a.slot_index, -1)::int AS slot_index
FROM pacing_assign(@config_name::text, @window_ms::bigint, @max_per_window::int, @headroom::int,
                   @requested_time::timestamptz, @event_ids::text[], @jitter::float8[],
                   sqlc.narg(deadline)::timestamptz, @fresh::boolean) a;

-- name: WindowCounts :many
-- Each window's counter beside the slots it holds (tests, checks).
SELECT w.window_start, w.slot_count, w.status,
       (SELECT count(*) FROM pacing_slot s WHERE s.config_name = w.config_name AND s.window_start = w.window_start)::int AS slots
FROM pacing_window w
WHERE w.config_name = @config_name
ORDER BY w.window_start;

-- name: SetTenantConfig :one
INSERT INTO pacing_tenant_config (item_type, tenant_id, config_name)
VALUES (@item_type, @tenant_id, @config_name)
ON CONFLICT (item_type, tenant_id) DO UPDATE
SET config_name = EXCLUDED.config_name, updated_at = now()
RETURNING item_type, tenant_id, config_name, updated_at;

-- name: DeleteTenantConfig :execrows
DELETE FROM pacing_tenant_config WHERE item_type = @item_type AND tenant_id = @tenant_id;

-- name: ListTenantConfigs :many
SELECT item_type, tenant_id, config_name, updated_at
FROM pacing_tenant_config WHERE item_type = @item_type ORDER BY tenant_id;

-- name: TenantConfigsFor :many
SELECT tenant_id, config_name
FROM pacing_tenant_config
WHERE item_type = @item_type AND tenant_id = ANY(@tenant_ids::text[]);

-- name: ExecuteMany :many
-- Executions let go under a config, counted together in one statement and
-- one commit: one pacing_execute each (see pacing/migrations/functions.sql),
-- in their order, each with the time it would go and whether it is spread
-- in its window. run_at is the epoch for one with no window within the
-- headroom with room. The limit is the config's as it is now, read in the
-- statement: a limit an operator lowers binds the next count in every
-- process, whatever their caches hold (the caller's, @max_per_window,
-- stands only when the config's window has changed or it is gone).
WITH cfg AS (
    SELECT coalesce((SELECT c.max_per_window FROM pacing_config c
                     WHERE c.config_name = @config_name::text AND c.window_ms = @window_ms::bigint),
                    @max_per_window::integer) AS max_per_window
)
SELECT n.i::int AS i,
       coalesce(pacing_execute(@config_name::text, @window_ms::bigint, cfg.max_per_window, @headroom::integer,
                               @guard_ms::bigint, n.at, n.spread), 'epoch')::timestamptz AS run_at
FROM (SELECT a.at, s.spread, a.i
      FROM unnest(@nows::timestamptz[]) WITH ORDINALITY AS a (at, i)
      JOIN unnest(@spreads::boolean[]) WITH ORDINALITY AS s (spread, i) USING (i)) n
CROSS JOIN cfg
ORDER BY n.i;

-- name: ReleaseSlots :many
-- Gives events' slots back: each slot is deleted, and its window's
-- counter given the unit back when the window has not begun (one that
-- has begun keeps its count: an execution may have gone at the slot).
-- Returns the released events.
WITH gone AS (
    DELETE FROM pacing_slot s
    WHERE s.config_name = @config_name AND s.event_id = ANY(@event_ids::text[])
    RETURNING s.event_id, s.window_start
), back AS (
    UPDATE pacing_window w
    SET slot_count = greatest(w.slot_count - g.n, 0),
        status = CASE WHEN greatest(w.slot_count - g.n, 0) >= @max_per_window::int THEN 'CLOSED' ELSE 'OPEN' END,
        updated_at = now()
    FROM (SELECT gone.window_start, count(*)::int AS n FROM gone GROUP BY gone.window_start) g
    WHERE w.config_name = @config_name AND w.window_start = g.window_start AND w.window_start > @now::timestamptz
)
SELECT gone.event_id::text FROM gone;

-- name: WindowsFrom :many
-- A config's windows from a time on, for a projection: their counters,
-- in time order, up to a bound.
SELECT w.window_start, w.slot_count
FROM pacing_window w
WHERE w.config_name = @config_name AND w.window_start >= @from_time::timestamptz
  AND w.window_start < @until_time::timestamptz
ORDER BY w.window_start
LIMIT @max_rows::int;

-- name: ReleaseEvents :many
-- Gives events' slots back whatever their configs (ReleaseSlots by
-- config, for callers that know the events, not their configs): each
-- slot deleted, its window's counter given the unit back when the window
-- has not begun. Returns the released events.
WITH gone AS (
    DELETE FROM pacing_slot s
    WHERE s.event_id = ANY(@event_ids::text[])
    RETURNING s.event_id, s.config_name, s.window_start
), back AS (
    UPDATE pacing_window w
    SET slot_count = greatest(w.slot_count - g.n, 0),
        status = CASE WHEN greatest(w.slot_count - g.n, 0) >= c.max_per_window THEN 'CLOSED' ELSE 'OPEN' END,
        updated_at = now()
    FROM (SELECT gone.config_name, gone.window_start, count(*)::int AS n FROM gone GROUP BY 1, 2) g
    JOIN pacing_config c ON c.config_name = g.config_name
    WHERE w.config_name = g.config_name AND w.window_start = g.window_start AND w.window_start > @now::timestamptz
)
SELECT gone.event_id::text FROM gone;

-- name: LockConfigMoves :exec
-- Serialises the moves of a config's events (Reslot) to the caller's
-- commit; pacing_assign takes the same lock shared, so an assignment
-- waits for a move rather than finding its windows held.
SELECT pg_advisory_xact_lock(hashtext('pacing_config_moves'), hashtext(@config_name::text));

-- name: DeleteSlots :one
-- Retention: up to @max_rows slots of windows that began before @before
-- and have ended (by their config's window; a day, the longest, when the
-- config is gone), oldest first, read in pacing_slot_window_start_idx's
-- order with each config's window length looked up by its key. The
-- slots of a window still under way (one window's at most, a config) are
-- passed over. The index is on the time alone: every slot's insert pays
-- for its entry, and one without a text key costs less than half (0.4 s
-- against 0.9 s of PostgreSQL's CPU for a 500,000-payment file).
WITH gone AS (
    DELETE FROM pacing_slot d
    WHERE d.event_id = ANY(ARRAY(
        SELECT s.event_id
        FROM pacing_slot s
        LEFT JOIN pacing_config pc ON pc.config_name = s.config_name
        WHERE s.window_start < @before::timestamptz
          AND s.window_start < now() - coalesce(pc.window_ms, 86400000) * interval '1 millisecond'
        ORDER BY s.window_start
        LIMIT @max_rows::int))
    RETURNING 1
)
SELECT count(*)::bigint AS deleted FROM gone;

-- name: DeleteWindows :one
-- Retention: up to @max_rows windows that began before @before and have
-- ended, oldest first within each config, by a skip scan of the primary
-- key as DeleteSlots does, and deleted by their rows' addresses (a TID
-- scan). A config's oldest windows go first, so a CLOSED window's
-- successor never goes before it.
WITH RECURSIVE configs AS (
    (SELECT w.config_name FROM pacing_window w ORDER BY w.config_name LIMIT 1)
    UNION ALL
    SELECT (SELECT w.config_name FROM pacing_window w WHERE w.config_name > c.config_name ORDER BY w.config_name LIMIT 1)
    FROM configs c
    WHERE c.config_name IS NOT NULL
), gone AS (
    DELETE FROM pacing_window d
    WHERE d.ctid = ANY(ARRAY(
        SELECT o.ctid
        FROM configs c
        LEFT JOIN pacing_config pc ON pc.config_name = c.config_name
        CROSS JOIN LATERAL (
            SELECT w.ctid, w.window_start FROM pacing_window w
            WHERE w.config_name = c.config_name
              AND w.window_start < least(@before::timestamptz, now() - coalesce(pc.window_ms, 86400000) * interval '1 millisecond')
            ORDER BY w.window_start
            LIMIT @max_rows::int) o
        WHERE c.config_name IS NOT NULL
        LIMIT @max_rows::int))
    RETURNING 1
)
SELECT count(*)::bigint AS deleted FROM gone;
