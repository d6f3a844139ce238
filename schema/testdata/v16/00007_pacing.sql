-- +goose Up
-- Pacing (seed 003): time cut into fixed windows per rate-limit config,
-- each window taking at most max_per_window events, each event a slot
-- inside a window. No foreign keys: the slot path is hot.

CREATE TABLE pacing_config (
    config_name       text        PRIMARY KEY CHECK (config_name ~ '^[A-Za-z0-9_.:-]{1,100}$'),
    max_per_window    integer     NOT NULL CHECK (max_per_window BETWEEN 1 AND 1000000),
    window_ms         bigint      NOT NULL CHECK (window_ms BETWEEN 1 AND 86400000),
    -- how many windows past the first open one a request searches
    headroom_windows  integer     NOT NULL DEFAULT 100 CHECK (headroom_windows BETWEEN 0 AND 100000),
    active            boolean     NOT NULL DEFAULT true,
    version           integer     NOT NULL DEFAULT 1,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- One counter per config and window. Counters do not depend on the config
-- version: changing max_per_window does not reset a window's count.
-- Invariant kept by the functions below: a CLOSED window's successor
-- exists (created OPEN when the window closes), so the first OPEN window
-- at or after a CLOSED one is the end of that run of full windows, found
-- with one index descent instead of a walk.
CREATE TABLE pacing_window (
    config_name   text        NOT NULL,
    window_start  timestamptz NOT NULL,
    slot_count    integer     NOT NULL CHECK (slot_count >= 0),
    status        text        NOT NULL CHECK (status IN ('OPEN', 'CLOSED')),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (config_name, window_start)
) WITH (fillfactor = 10);
-- fillfactor 10: a few windows per page. Concurrent requests for one
-- instant all work the same handful of rows; packed into one page they
-- queue on that page's buffer lock even when they lock different rows.
-- The skip query: first OPEN window after a given one.
CREATE INDEX pacing_window_status_idx ON pacing_window (config_name, status, window_start);

-- One slot per event id (idempotency). No uniqueness on the time: many
-- slots can share a millisecond; the rate is enforced by the counters.
CREATE TABLE pacing_slot (
    event_id        text        PRIMARY KEY,
    config_name     text        NOT NULL,
    window_start    timestamptz NOT NULL,
    slot_index      integer     NOT NULL,
    scheduled_time  timestamptz NOT NULL,
    requested_time  timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pacing_slot_window_idx ON pacing_slot (config_name, window_start);

-- Wiring into the dispatch queue: an item type may name the rate-limit
-- config that paces it, and an item enqueued at a paced slot is started at
-- exactly that time (no jitter on top).
ALTER TABLE exec_rate_config ADD COLUMN pacing_config text CHECK (pacing_config <> '');
ALTER TABLE exec_queue ADD COLUMN paced boolean NOT NULL DEFAULT false;

-- +goose StatementBegin
-- pacing_ms is epoch milliseconds as a timestamp, exactly.
CREATE FUNCTION pacing_ms(ms bigint) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 'epoch'::timestamptz + ms * interval '1 millisecond'
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pacing_may_create is a try-lock (never waits, held to commit) on creating
-- a config's window. Every creator takes it, so two transactions never
-- insert the same window at once: an INSERT ... ON CONFLICT against
-- another's uncommitted insert would wait for it, and two bulk calls
-- creating overlapping ranges would deadlock.
CREATE FUNCTION pacing_may_create(p_config text, p_window timestamptz) RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    SELECT pg_try_advisory_xact_lock(hashtextextended('pacing_window/' || p_config || '/' || p_window::text, 0))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pacing_take takes up to p_want slots in one window, at most up to
-- p_cap slots in all (p_cap <= p_max), skipping the window when another
-- transaction holds it. It returns the first slot index taken and how
-- many (0 when locked, full, or at p_cap). The counter and the status
-- change in one statement; a window created here is created by its first
-- slot (insert first; a conflict means another transaction created it).
-- A window reaching p_max is CLOSED and its successor created OPEN.
CREATE FUNCTION pacing_take(p_config text, p_window timestamptz, p_window_ms bigint,
                            p_cap integer, p_max integer, p_want integer,
                            OUT o_first integer, OUT o_taken integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_old   integer;
    v_count integer;
BEGIN
    o_first := 0;
    o_taken := 0;
    IF p_cap < 1 OR p_want < 1 THEN
        RETURN;
    END IF;
    WITH l AS (
        SELECT x.config_name, x.window_start, x.slot_count FROM pacing_window x
        WHERE x.config_name = p_config AND x.window_start = p_window
        FOR UPDATE SKIP LOCKED
    )
    UPDATE pacing_window w
    SET slot_count = l.slot_count + least(p_want, p_cap - l.slot_count),
        status = CASE WHEN l.slot_count + least(p_want, p_cap - l.slot_count) >= p_max THEN 'CLOSED' ELSE 'OPEN' END,
        updated_at = now()
    FROM l
    WHERE w.config_name = l.config_name AND w.window_start = l.window_start AND l.slot_count < p_cap
    RETURNING l.slot_count, w.slot_count INTO v_old, v_count;
    IF NOT FOUND THEN
        -- Locked by another transaction, full, or missing. Only a missing
        -- window is created here, by its first slots. The existence check
        -- comes first and takes no lock: an INSERT ... ON CONFLICT against
        -- a row another transaction is updating waits for that transaction,
        -- which would queue every request behind the window's holder.
        PERFORM 1 FROM pacing_window x WHERE x.config_name = p_config AND x.window_start = p_window;
        IF FOUND OR NOT pacing_may_create(p_config, p_window) THEN
            RETURN;
        END IF;
        INSERT INTO pacing_window (config_name, window_start, slot_count, status)
        VALUES (p_config, p_window, least(p_want, p_cap),
                CASE WHEN least(p_want, p_cap) >= p_max THEN 'CLOSED' ELSE 'OPEN' END)
        ON CONFLICT DO NOTHING
        RETURNING 0, slot_count INTO v_old, v_count;
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    o_first := v_old;
    o_taken := v_count - v_old;
    IF v_count >= p_max AND pacing_may_create(p_config, p_window + p_window_ms * interval '1 millisecond') THEN
        INSERT INTO pacing_window (config_name, window_start, slot_count, status)
        VALUES (p_config, p_window + p_window_ms * interval '1 millisecond', 0, 'OPEN')
        ON CONFLICT DO NOTHING;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pacing_place inserts slots p_first.. of a window for the given events,
-- stratified: the k-th slot of a window with capacity p_cap over its part
-- from p_elapsed_ms falls in the k-th of p_cap equal sub-intervals of that
-- part, at the point p_u (0 <= u < 1, drawn by the caller) inside it. An
-- event another transaction assigned meanwhile keeps its slot (EXISTING)
-- and gives its counter unit back.
CREATE FUNCTION pacing_place(p_config text, p_window_ms bigint, p_start_ms bigint, p_elapsed_ms bigint,
                             p_cap integer, p_first integer, p_requested timestamptz,
                             p_ids text[], p_us double precision[])
RETURNS TABLE (event_id text, status text, window_start timestamptz, scheduled_time timestamptz, slot_index integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_inserted text[] := '{}';
    r record;
BEGIN
    FOR r IN
        INSERT INTO pacing_slot AS s (event_id, config_name, window_start, slot_index, scheduled_time, requested_time)
        SELECT t.id, p_config, pacing_ms(p_start_ms), p_first + t.ord::integer - 1,
               pacing_ms(p_start_ms + p_elapsed_ms
                         + floor((p_first + t.ord - 1 + t.u) * (p_window_ms - p_elapsed_ms) / p_cap)::bigint),
               p_requested
        FROM unnest(p_ids, p_us) WITH ORDINALITY AS t(id, u, ord)
        ON CONFLICT ON CONSTRAINT pacing_slot_pkey DO NOTHING
        RETURNING s.event_id, s.window_start, s.scheduled_time, s.slot_index
    LOOP
        event_id := r.event_id; status := 'NEW'; window_start := r.window_start;
        scheduled_time := r.scheduled_time; slot_index := r.slot_index;
        v_inserted := v_inserted || r.event_id;
        RETURN NEXT;
    END LOOP;
    IF cardinality(v_inserted) < cardinality(p_ids) THEN
        UPDATE pacing_window w
        SET slot_count = w.slot_count - (cardinality(p_ids) - cardinality(v_inserted)), status = 'OPEN', updated_at = now()
        WHERE w.config_name = p_config AND w.window_start = pacing_ms(p_start_ms);
        RETURN QUERY
        SELECT s.event_id, 'EXISTING'::text, s.window_start, s.scheduled_time, s.slot_index
        FROM pacing_slot s WHERE s.event_id = ANY(p_ids) AND NOT s.event_id = ANY(v_inserted);
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pacing_assign gives each event (all requesting p_requested) a slot, in
-- one call, as seed 003's algorithm does:
--   idempotency: an event that has a slot gets it back (EXISTING);
--   phase 1: the requested window, with capacity in proportion to what is
--     left of it (floor(max * remaining / window)), slots at or after the
--     requested time;
--   phase 2: the first window after it that is not full (one index
--     descent past a run of CLOSED windows), then on, skipping windows
--     another transaction holds, until p_headroom windows in a row gave
--     nothing;
--   events left over are EXHAUSTED, and nothing is written for them.
-- p_us holds one uniform random number in [0, 1) per event (the jitter,
-- drawn by the caller).
CREATE FUNCTION pacing_assign(p_config text, p_window_ms bigint, p_max integer, p_headroom integer,
                              p_requested timestamptz, p_event_ids text[], p_us double precision[])
RETURNS TABLE (event_id text, status text, window_start timestamptz, scheduled_time timestamptz, slot_index integer)
LANGUAGE plpgsql
-- paydispatch's pools force custom plans (see postgres.NewPool); here the
-- statements are fixed-shape lookups by key, and re-planning each one on
-- every call would cost more than the work.
SET plan_cache_mode = auto
AS $$
DECLARE
    v_req_ms  bigint := floor(extract(epoch FROM p_requested) * 1000)::bigint;
    v_w0_ms   bigint;
    v_elapsed bigint;
    v_eff     integer;
    v_ids     text[];
    v_us      double precision[];
    v_n       integer;
    v_done    integer := 0;
    v_first   integer;
    v_taken   integer;
    v_w_ms    bigint;
    v_next_ms bigint;
    v_status  text;
    v_misses  integer := 0;
    v_k       integer;
    v_ws      timestamptz[];
    v_cs      integer[];
    v_takes   integer[];
    v_offs    integer[];
BEGIN
    v_w0_ms := v_req_ms - ((v_req_ms % p_window_ms) + p_window_ms) % p_window_ms;
    v_elapsed := v_req_ms - v_w0_ms;
    v_eff := floor(p_max::numeric * (p_window_ms - v_elapsed) / p_window_ms)::integer;

    RETURN QUERY
    SELECT s.event_id, 'EXISTING'::text, s.window_start, s.scheduled_time, s.slot_index
    FROM pacing_slot s WHERE s.event_id = ANY(p_event_ids);

    -- The new events, each once, in the order given.
    SELECT array_agg(x.id ORDER BY x.ord), array_agg(x.u ORDER BY x.ord) INTO v_ids, v_us
    FROM (SELECT DISTINCT ON (t.id) t.id, t.u, t.ord
          FROM unnest(p_event_ids, p_us) WITH ORDINALITY AS t(id, u, ord)
          WHERE NOT EXISTS (SELECT 1 FROM pacing_slot s WHERE s.event_id = t.id)
          ORDER BY t.id, t.ord) x;
    v_n := coalesce(cardinality(v_ids), 0);
    IF v_n = 0 THEN
        RETURN;
    END IF;

    -- Phase 1: the requested window, proportionally.
    SELECT t.o_first, t.o_taken INTO v_first, v_taken
    FROM pacing_take(p_config, pacing_ms(v_w0_ms), p_window_ms, v_eff, p_max, v_n) t;
    IF v_taken > 0 THEN
        RETURN QUERY SELECT * FROM pacing_place(p_config, p_window_ms, v_w0_ms, v_elapsed, v_eff, v_first,
                                                p_requested, v_ids[1:v_taken], v_us[1:v_taken]);
        v_done := v_taken;
    END IF;

    -- Phase 2: whole windows after it.
    v_w_ms := v_w0_ms + p_window_ms;
    WHILE v_done < v_n AND v_misses <= p_headroom LOOP
        SELECT w.status INTO v_status FROM pacing_window w
        WHERE w.config_name = p_config AND w.window_start = pacing_ms(v_w_ms);
        IF FOUND AND v_status = 'CLOSED' THEN
            -- Skip the run of full windows in one index descent.
            SELECT floor(extract(epoch FROM min(w.window_start)) * 1000)::bigint INTO v_next_ms
            FROM pacing_window w
            WHERE w.config_name = p_config AND w.status = 'OPEN' AND w.window_start > pacing_ms(v_w_ms);
            v_w_ms := coalesce(v_next_ms, v_w_ms + p_window_ms);
            CONTINUE;
        END IF;
        IF v_n - v_done > p_max THEN
            -- More than a window's worth left: a range of windows per
            -- statement instead of one window per round of statements.
            v_k := least(ceil((v_n - v_done)::numeric / p_max)::integer + 2, greatest(p_headroom, 1));
            -- The range's missing windows, created open and empty (a plain
            -- existence test first: ON CONFLICT would wait on rows others
            -- are updating).
            INSERT INTO pacing_window (config_name, window_start, slot_count, status)
            SELECT p_config, pacing_ms(v_w_ms + g * p_window_ms), 0, 'OPEN'
            FROM generate_series(0, v_k - 1) g
            WHERE NOT EXISTS (SELECT 1 FROM pacing_window x
                              WHERE x.config_name = p_config AND x.window_start = pacing_ms(v_w_ms + g * p_window_ms))
              AND pacing_may_create(p_config, pacing_ms(v_w_ms + g * p_window_ms))
            ON CONFLICT DO NOTHING;
            -- The windows with room that no one else holds, and how many
            -- slots each gives, in time order.
            WITH avail AS (
                SELECT w.window_start, w.slot_count FROM pacing_window w
                WHERE w.config_name = p_config AND w.window_start >= pacing_ms(v_w_ms)
                  AND w.window_start < pacing_ms(v_w_ms + v_k * p_window_ms) AND w.slot_count < p_max
                ORDER BY w.window_start
                -- no more windows than the events need at full room: the
                -- rest stay free for concurrent callers
                LIMIT ceil((v_n - v_done)::numeric / p_max)::integer + 1
                FOR UPDATE SKIP LOCKED
            ), plan AS (
                SELECT a.window_start, a.slot_count AS c,
                       sum(p_max - a.slot_count) OVER (ORDER BY a.window_start) - (p_max - a.slot_count) AS off
                FROM avail a
            )
            SELECT array_agg(p.window_start ORDER BY p.window_start), array_agg(p.c ORDER BY p.window_start),
                   array_agg(least(p_max - p.c, v_n - v_done - p.off)::integer ORDER BY p.window_start),
                   array_agg(p.off::integer ORDER BY p.window_start)
            INTO v_ws, v_cs, v_takes, v_offs
            FROM plan p WHERE p.off < v_n - v_done;
            v_taken := coalesce((SELECT sum(t) FROM unnest(v_takes) t), 0);
            IF v_taken > 0 THEN
                RETURN QUERY
                WITH ins AS (
                    INSERT INTO pacing_slot AS s (event_id, config_name, window_start, slot_index, scheduled_time, requested_time)
                    SELECT v_ids[v_done + p.off + g + 1], p_config, p.ws, p.c + g,
                           p.ws + floor((p.c + g + v_us[v_done + p.off + g + 1]) * p_window_ms / p_max)::bigint * interval '1 millisecond',
                           p_requested
                    FROM unnest(v_ws, v_cs, v_takes, v_offs) AS p(ws, c, take, off)
                    CROSS JOIN LATERAL generate_series(0, p.take - 1) g
                    ON CONFLICT ON CONSTRAINT pacing_slot_pkey DO NOTHING
                    RETURNING s.event_id, s.window_start, s.scheduled_time, s.slot_index
                ), upd AS (
                    -- Counters move by the slots actually inserted.
                    UPDATE pacing_window w
                    SET slot_count = w.slot_count + x.n,
                        status = CASE WHEN w.slot_count + x.n >= p_max THEN 'CLOSED' ELSE 'OPEN' END,
                        updated_at = now()
                    FROM (SELECT i.window_start, count(*)::integer AS n FROM ins i GROUP BY i.window_start) x
                    WHERE w.config_name = p_config AND w.window_start = x.window_start
                    RETURNING w.window_start, w.status
                ), succ AS (
                    INSERT INTO pacing_window (config_name, window_start, slot_count, status)
                    SELECT p_config, u.window_start + p_window_ms * interval '1 millisecond', 0, 'OPEN'
                    FROM upd u
                    WHERE u.status = 'CLOSED'
                      AND NOT EXISTS (SELECT 1 FROM pacing_window x
                                      WHERE x.config_name = p_config AND x.window_start = u.window_start + p_window_ms * interval '1 millisecond')
                      AND pacing_may_create(p_config, u.window_start + p_window_ms * interval '1 millisecond')
                    ON CONFLICT DO NOTHING
                )
                SELECT i.event_id, 'NEW'::text, i.window_start, i.scheduled_time, i.slot_index FROM ins i;
                -- An event another transaction assigned meanwhile is left
                -- out of the answer (the caller sees no result and retries).
                v_done := v_done + v_taken;
                v_misses := 0;
            ELSE
                -- Every window of the range full or held (typically being
                -- filled by a concurrent call): one miss, not one per
                -- window, or two calls filling side by side would give up.
                v_misses := v_misses + 1;
            END IF;
            v_w_ms := v_w_ms + v_k * p_window_ms;
            CONTINUE;
        END IF;
        SELECT t.o_first, t.o_taken INTO v_first, v_taken
        FROM pacing_take(p_config, pacing_ms(v_w_ms), p_window_ms, p_max, p_max, v_n - v_done) t;
        IF v_taken > 0 THEN
            RETURN QUERY SELECT * FROM pacing_place(p_config, p_window_ms, v_w_ms, 0, p_max, v_first, p_requested,
                                                    v_ids[v_done + 1 : v_done + v_taken], v_us[v_done + 1 : v_done + v_taken]);
            v_done := v_done + v_taken;
            v_misses := 0;
        ELSE
            v_misses := v_misses + 1; -- held by another transaction (or full under a lowered max)
        END IF;
        v_w_ms := v_w_ms + p_window_ms;
    END LOOP;

    IF v_done < v_n THEN
        RETURN QUERY
        SELECT t.id, 'EXHAUSTED'::text, NULL::timestamptz, NULL::timestamptz, NULL::integer
        FROM unnest(v_ids[v_done + 1 : v_n]) AS t(id);
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- Helpers later migrations added for these functions' later bodies.
DROP FUNCTION IF EXISTS pacing_existing(text[]);
DROP FUNCTION IF EXISTS pacing_offset_ms(bigint, integer, double precision);
DROP FUNCTION pacing_assign(text, bigint, integer, integer, timestamptz, text[], double precision[]);
DROP FUNCTION pacing_place(text, bigint, bigint, bigint, integer, integer, timestamptz, text[], double precision[]);
DROP FUNCTION pacing_take(text, timestamptz, bigint, integer, integer, integer);
DROP FUNCTION pacing_may_create(text, timestamptz);
DROP FUNCTION pacing_ms(bigint);
DROP TABLE pacing_slot;
DROP TABLE pacing_window;
DROP TABLE pacing_config;
ALTER TABLE exec_queue DROP COLUMN paced;
ALTER TABLE exec_rate_config DROP COLUMN pacing_config;
