-- The pacing algorithm: the current source of every function package
-- pacing calls. The migrator applies this file after the versioned
-- migrations and again whenever its text changes (recorded with a checksum
-- in paydispatch_schema_scripts), so changing the algorithm is an edit of
-- this file. Every function is CREATE OR REPLACE; a function dropped from
-- here needs a DROP FUNCTION IF EXISTS here too, and a changed signature a
-- DROP of the old one first (TestFunctionsMatchTheirFiles checks that a
-- migrated database holds exactly the functions of these files).
--
-- Tables (00007_pacing.sql): pacing_config, pacing_window (one
-- counter and OPEN/CLOSED status per config and window), pacing_slot (one
-- row per event id). A run of full (CLOSED) windows ends in an OPEN
-- window or in a missing one: a call that fills a window creates its
-- successor only when it goes on to fill it. An empty successor held to
-- the commit of a call with nothing left to place would be skipped by
-- concurrent calls (they cannot create it) and stay a hole in the
-- schedule.

-- pacing_ms is epoch milliseconds as a timestamp, exactly.
CREATE OR REPLACE FUNCTION pacing_ms(ms bigint) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 'epoch'::timestamptz + ms * interval '1 millisecond'
$$;

-- pacing_may_create is a try-lock (never waits, held to commit) on creating
-- a config's window. Every creator takes it, so two transactions never
-- insert the same window at once: an INSERT ... ON CONFLICT against
-- another's uncommitted insert would wait for it, and two bulk calls
-- creating overlapping ranges would deadlock.
CREATE OR REPLACE FUNCTION pacing_may_create(p_config text, p_window timestamptz) RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    SELECT pg_try_advisory_xact_lock(hashtextextended('pacing_window/' || p_config || '/' || p_window::text, 0))
$$;

-- pacing_offset_ms is the offset into a span of p_span_ms of the slot at
-- position p_pos (its index k from 0 plus its jitter u, 0 <= u < 1) of
-- p_cap slots spread evenly over it: the first half of the k-th of p_cap
-- equal sub-intervals, at the point u of that half. The second half of
-- every sub-interval is a guard for the lag of the execution that starts
-- at the slot (milliseconds), at a second's edge and a window's alike:
-- when p_cap slots divide into whole seconds (100 per 4 s: 40 ms parts,
-- 25 to a second) each second gets exactly its share, and an execution a
-- little late stays in its own part. Clamped inside the span: k + u can
-- round up to k + 1 in floating point.
CREATE OR REPLACE FUNCTION pacing_offset_ms(p_span_ms bigint, p_cap integer, p_pos double precision)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT least(floor((floor(p_pos) + (p_pos - floor(p_pos)) / 2) * p_span_ms / p_cap), p_span_ms - 1)::bigint
$$;

-- pacing_take takes up to p_want slots in one window, at most up to
-- p_cap slots in all (p_cap <= p_max), skipping the window when another
-- transaction holds it. It returns the first slot index taken and how
-- many (0 when locked, full, or at p_cap). The counter and the status
-- change in one statement; a window created here is created by its first
-- slot (insert first; a conflict means another transaction created it).
-- A window reaching p_max is CLOSED, and its successor created OPEN when
-- the caller has events left for it (p_want more than taken here).
CREATE OR REPLACE FUNCTION pacing_take(p_config text, p_window timestamptz, p_window_ms bigint,
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
    IF v_count >= p_max AND o_taken < p_want
       AND pacing_may_create(p_config, p_window + p_window_ms * interval '1 millisecond') THEN
        INSERT INTO pacing_window (config_name, window_start, slot_count, status)
        VALUES (p_config, p_window + p_window_ms * interval '1 millisecond', 0, 'OPEN')
        ON CONFLICT DO NOTHING;
    END IF;
END
$$;

-- pacing_existing answers the events of p_ids whose slots another
-- transaction gave (EXISTING). A statement of its own, after the insert
-- that conflicted: an insert that waited for another transaction's
-- conflicting row sees it only from the next statement's snapshot. Rows
-- this transaction inserted are its NEW answers already and are left out
-- (by xmin; called inside a caller's savepoint they would come again as
-- EXISTING, after their NEW rows).
CREATE OR REPLACE FUNCTION pacing_existing(p_ids text[])
RETURNS TABLE (event_id text, status text, window_start timestamptz, scheduled_time timestamptz, slot_index integer)
LANGUAGE sql STABLE AS $$
    SELECT s.event_id, 'EXISTING'::text, s.window_start, s.scheduled_time, s.slot_index
    FROM pacing_slot s
    WHERE s.event_id = ANY(p_ids) AND s.xmin <> pg_current_xact_id()::xid
$$;

-- pacing_place inserts slots p_first.. of a window for the given events,
-- stratified: the k-th slot of a window with capacity p_cap over its part
-- from p_elapsed_ms lies in the first half of the k-th of p_cap equal
-- sub-intervals of that part (pacing_offset_ms), at the point p_u
-- (0 <= u < 1, drawn by the caller) of that half. An event that has a slot
-- already (or is given twice) keeps its slot (EXISTING) and gives its
-- counter unit back.
CREATE OR REPLACE FUNCTION pacing_place(p_config text, p_window_ms bigint, p_start_ms bigint, p_elapsed_ms bigint,
                                        p_cap integer, p_first integer, p_requested timestamptz,
                                        p_ids text[], p_us double precision[])
RETURNS TABLE (event_id text, status text, window_start timestamptz, scheduled_time timestamptz, slot_index integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_new bigint;
BEGIN
    RETURN QUERY
    WITH ins AS (
        INSERT INTO pacing_slot AS s (event_id, config_name, window_start, slot_index, scheduled_time, requested_time)
        SELECT t.id, p_config, pacing_ms(p_start_ms), p_first + t.ord::integer - 1,
               pacing_ms(p_start_ms + p_elapsed_ms
                         + pacing_offset_ms(p_window_ms - p_elapsed_ms, p_cap, p_first + t.ord - 1 + t.u)),
               p_requested
        FROM unnest(p_ids, p_us) WITH ORDINALITY AS t(id, u, ord)
        ON CONFLICT ON CONSTRAINT pacing_slot_pkey DO NOTHING
        RETURNING s.event_id, s.window_start, s.scheduled_time, s.slot_index
    ), giveback AS (
        UPDATE pacing_window w
        SET slot_count = w.slot_count - (cardinality(p_ids) - (SELECT count(*) FROM ins)::integer),
            status = 'OPEN', updated_at = now()
        WHERE w.config_name = p_config AND w.window_start = pacing_ms(p_start_ms)
          AND (SELECT count(*) FROM ins) < cardinality(p_ids)
    )
    SELECT i.event_id, 'NEW'::text, i.window_start, i.scheduled_time, i.slot_index FROM ins i;
    GET DIAGNOSTICS v_new = ROW_COUNT;
    IF v_new < cardinality(p_ids) THEN
        RETURN QUERY SELECT * FROM pacing_existing(p_ids);
    END IF;
END
$$;

-- pacing_busy reports whether a window that gave nothing had room under
-- p_cap, or did not exist: another transaction holds it (or is creating
-- it). Before a deadline, events that found no room are LATE only when no
-- window before it was busy; else BUSY, and the caller asks again once
-- the holders have committed.
CREATE OR REPLACE FUNCTION pacing_busy(p_config text, p_window timestamptz, p_cap integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT p_cap > 0 AND coalesce((SELECT w.slot_count < p_cap FROM pacing_window w
                                   WHERE w.config_name = p_config AND w.window_start = p_window), true)
$$;

-- pacing_assign gives each event (all requesting p_requested) a slot, in
-- one call (docs/design.md, "Pacing"):
--   idempotency: an event that has a slot gets it back (EXISTING);
--   phase 1: the requested window, with capacity in proportion to what is
--     left of it (floor(max * remaining / window)), slots at or after the
--     requested time;
--   phase 2: the first window after it that is not full (one index
--     descent past a run of CLOSED windows), then on, skipping windows
--     another transaction holds (they are being filled), until
--     p_headroom windows in a row were full (a lowered max leaves full
--     OPEN windows);
--   events left over are EXHAUSTED, and nothing is written for them.
-- p_us holds one uniform random number in [0, 1) per event (the jitter,
-- drawn by the caller). p_deadline (NULL: none) is a time no slot may
-- reach (a rail's cut-off): the window it falls in takes, in proportion,
-- only the slots that lie before it, no window after it is searched, and
-- the events that found no room before it are LATE, nothing written for
-- them, or BUSY when a window before it that gave nothing had room but
-- was held by another transaction (the caller asks again).
-- p_fresh is the caller's word that none of the events has a slot (a
-- file's first placement): the slots of its ranges of windows are then
-- inserted without ON CONFLICT, whose probe of each key before its insert
-- was a third of the function's cost, and an event that has a slot after
-- all fails the call (unique_violation, nothing written): the caller asks
-- again without it. A replay found at the start (below) clears it.
DROP FUNCTION IF EXISTS pacing_assign(text, bigint, integer, integer, timestamptz, text[], double precision[]);
DROP FUNCTION IF EXISTS pacing_assign(text, bigint, integer, integer, timestamptz, text[], double precision[], timestamptz);
CREATE OR REPLACE FUNCTION pacing_assign(p_config text, p_window_ms bigint, p_max integer, p_headroom integer,
                              p_requested timestamptz, p_event_ids text[], p_us double precision[],
                              p_deadline timestamptz, p_fresh boolean DEFAULT false)
RETURNS TABLE (event_id text, status text, window_start timestamptz, scheduled_time timestamptz, slot_index integer)
LANGUAGE plpgsql
-- Its statements are fixed-shape lookups by key: generic plans, whatever
-- the session's setting, since re-planning each one on every call would
-- cost more than the work.
SET plan_cache_mode = auto
AS $$
DECLARE
    v_req_ms  bigint := floor(extract(epoch FROM p_requested) * 1000)::bigint;
    v_w0_ms   bigint;
    v_elapsed bigint;
    v_eff     integer;
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
    v_est     timestamptz[];
    v_cs      integer[];
    v_takes   integer[];
    v_offs    integer[];
    v_new     bigint;
    v_dl_ms   bigint := floor(extract(epoch FROM p_deadline) * 1000)::bigint;
    v_cap     integer;
    v_busy    boolean := false;
    v_held    boolean;
BEGIN
    v_w0_ms := v_req_ms - ((v_req_ms % p_window_ms) + p_window_ms) % p_window_ms;
    v_elapsed := v_req_ms - v_w0_ms;
    v_eff := floor(p_max::numeric * (p_window_ms - v_elapsed) / p_window_ms)::integer;
    -- A deadline inside the requested window: only the slots k < v_cap,
    -- spread over its part as v_eff are, lie before it.
    v_cap := v_eff;
    IF v_dl_ms IS NOT NULL AND v_dl_ms < v_w0_ms + p_window_ms THEN
        v_cap := greatest(floor(v_eff::numeric * (v_dl_ms - v_req_ms) / (p_window_ms - v_elapsed))::integer, 0);
    END IF;

    -- No probe of the keys first: the slot inserts' ON CONFLICT finds the
    -- events that have slots (and ids given twice), and their answers are
    -- EXISTING. A replayed call therefore walks the windows again, moving
    -- no counter.
    v_n := coalesce(cardinality(p_event_ids), 0);
    IF v_n = 0 THEN
        RETURN;
    END IF;
    -- A replayed call (a step retried after its slots committed) would
    -- walk past its own full windows and create new ones for its events,
    -- to find them conflicting and leave those windows empty: holes. A
    -- call's slots commit together, so its first or last event having one
    -- marks a replay (two key lookups); then those with slots are
    -- answered first and only the rest are placed.
    IF EXISTS (SELECT 1 FROM pacing_slot s WHERE s.event_id = p_event_ids[1] OR s.event_id = p_event_ids[v_n]) THEN
        p_fresh := false;
        RETURN QUERY SELECT s.event_id, 'EXISTING'::text, s.window_start, s.scheduled_time, s.slot_index
                     FROM pacing_slot s WHERE s.event_id = ANY(p_event_ids);
        SELECT array_agg(t.id ORDER BY t.ord), array_agg(t.u ORDER BY t.ord) INTO p_event_ids, p_us
        FROM unnest(p_event_ids, p_us) WITH ORDINALITY AS t(id, u, ord)
        WHERE NOT EXISTS (SELECT 1 FROM pacing_slot s WHERE s.event_id = t.id);
        v_n := coalesce(cardinality(p_event_ids), 0);
        IF v_n = 0 THEN
            RETURN;
        END IF;
    END IF;
    -- A lever moving this config's events (Reslot, LockConfigMoves) holds
    -- their windows to its commit: wait for it, rather than skip them or
    -- answer BUSY until it ends.
    PERFORM pg_advisory_xact_lock_shared(hashtext('pacing_config_moves'), hashtext(p_config));

    -- Phase 1: the requested window, proportionally.
    SELECT t.o_first, t.o_taken INTO v_first, v_taken
    FROM pacing_take(p_config, pacing_ms(v_w0_ms), p_window_ms, v_cap, p_max, v_n) t;
    IF v_taken > 0 THEN
        RETURN QUERY SELECT * FROM pacing_place(p_config, p_window_ms, v_w0_ms, v_elapsed, v_eff, v_first,
                                                p_requested, p_event_ids[1:v_taken], p_us[1:v_taken]);
        v_done := v_taken;
    ELSIF v_dl_ms IS NOT NULL THEN
        v_busy := v_busy OR pacing_busy(p_config, pacing_ms(v_w0_ms), v_cap);
    END IF;

    -- Phase 2: whole windows after it.
    v_w_ms := v_w0_ms + p_window_ms;
    WHILE v_done < v_n AND v_misses <= p_headroom AND (v_dl_ms IS NULL OR v_w_ms < v_dl_ms) LOOP
        SELECT w.status INTO v_status FROM pacing_window w
        WHERE w.config_name = p_config AND w.window_start = pacing_ms(v_w_ms);
        IF FOUND AND v_status = 'CLOSED' THEN
            -- Skip the run of full windows: to the first OPEN window after
            -- it (one index descent), when every window up to that one
            -- exists (an index-only count); else to the run's first
            -- missing window.
            SELECT floor(extract(epoch FROM min(w.window_start)) * 1000)::bigint INTO v_next_ms
            FROM pacing_window w
            WHERE w.config_name = p_config AND w.status = 'OPEN' AND w.window_start > pacing_ms(v_w_ms);
            IF v_next_ms IS NULL OR (SELECT count(*) FROM pacing_window w
                                     WHERE w.config_name = p_config AND w.window_start > pacing_ms(v_w_ms)
                                       AND w.window_start < pacing_ms(v_next_ms)) < (v_next_ms - v_w_ms) / p_window_ms - 1 THEN
                SELECT floor(extract(epoch FROM min(w.window_start)) * 1000)::bigint + p_window_ms INTO v_next_ms
                FROM pacing_window w
                WHERE w.config_name = p_config AND w.window_start >= pacing_ms(v_w_ms)
                  AND (v_next_ms IS NULL OR w.window_start < pacing_ms(v_next_ms))
                  AND NOT EXISTS (SELECT 1 FROM pacing_window x
                                  WHERE x.config_name = p_config AND x.window_start = w.window_start + p_window_ms * interval '1 millisecond');
            END IF;
            v_w_ms := coalesce(v_next_ms, v_w_ms + p_window_ms);
            CONTINUE;
        END IF;
        IF v_n - v_done > p_max AND (v_dl_ms IS NULL OR v_w_ms + p_window_ms <= v_dl_ms) THEN
            -- More than a window's worth left: a range of windows per
            -- statement instead of one window per round of statements.
            -- As many windows as the events need at full room, no spares:
            -- a spare created here stays invisible to concurrent callers
            -- until this call commits, they go on past it, and it stays a
            -- hole. A part-full window in the range leaves events over for
            -- the next round.
            v_k := least(ceil((v_n - v_done)::numeric / p_max)::integer, greatest(p_headroom, 1));
            IF v_dl_ms IS NOT NULL THEN -- whole windows before the deadline only
                v_k := least(v_k, ((v_dl_ms - v_w_ms) / p_window_ms)::integer);
            END IF;
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
            -- The range's windows with room that the events need, by the
            -- counts as they stand (read without locking), in time order.
            -- Only these are locked: a window locked and then left empty
            -- would have been skipped by concurrent callers and stay a hole
            -- in the schedule. Counts only grow, so the locked windows give
            -- no more room than this estimate, and each gets events.
            SELECT array_agg(x.window_start ORDER BY x.window_start) INTO v_est
            FROM (SELECT w.window_start,
                         sum(p_max - w.slot_count) OVER (ORDER BY w.window_start) - (p_max - w.slot_count) AS before
                  FROM pacing_window w
                  WHERE w.config_name = p_config AND w.window_start >= pacing_ms(v_w_ms)
                    AND w.window_start < pacing_ms(v_w_ms + v_k * p_window_ms) AND w.slot_count < p_max) x
            WHERE x.before < v_n - v_done;
            -- Of those, the ones no one else holds, and how many slots each
            -- gives.
            WITH avail AS (
                SELECT w.window_start, w.slot_count FROM pacing_window w
                WHERE w.config_name = p_config AND w.window_start = ANY(v_est) AND w.slot_count < p_max
                ORDER BY w.window_start
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
            -- Windows with room held, or not yet created, by others: they
            -- are being filled, so the range is no miss.
            v_held := (v_taken = 0 OR v_dl_ms IS NOT NULL)
                AND (coalesce(cardinality(v_ws), 0) < coalesce(cardinality(v_est), 0)
                     OR (SELECT count(*) FROM pacing_window w WHERE w.config_name = p_config
                           AND w.window_start >= pacing_ms(v_w_ms) AND w.window_start < pacing_ms(v_w_ms + v_k * p_window_ms)) < v_k);
            v_busy := v_busy OR (v_held AND v_dl_ms IS NOT NULL);
            IF v_taken > 0 THEN
                -- A statement built here only for its slots' ON CONFLICT,
                -- left out when the call is p_fresh. Its parameters: $1
                -- p_config, $2 p_window_ms, $3 p_max, $4 p_requested,
                -- $5-$8 the plan (v_ws, v_cs, v_takes, v_offs), $9-$10
                -- the events placed and their jitter, $11 v_w_ms, $12 v_k,
                -- $13 whether events are left after these.
                RETURN QUERY EXECUTE format($stmt$
                WITH ins AS (
                    INSERT INTO pacing_slot AS s (event_id, config_name, window_start, slot_index, scheduled_time, requested_time)
                    -- Events and slots matched by position (a join, not
                    -- an events[i] per row: subscripting a text array walks it).
                    SELECT e.id, $1, k.ws, k.idx, k.ws + pacing_offset_ms($2, $3, k.idx + e.u) * interval '1 millisecond', $4
                    FROM (SELECT p.ws, p.c + g AS idx, p.off + g + 1 AS ord
                          FROM unnest($5, $6, $7, $8) AS p(ws, c, take, off)
                          CROSS JOIN LATERAL generate_series(0, p.take - 1) g) k
                    JOIN unnest($9, $10) WITH ORDINALITY AS e(id, u, ord) ON e.ord = k.ord
                    %s
                    RETURNING s.event_id, s.window_start, s.scheduled_time, s.slot_index
                ), upd AS (
                    -- Counters move by the slots actually inserted.
                    UPDATE pacing_window w
                    SET slot_count = w.slot_count + x.n,
                        status = CASE WHEN w.slot_count + x.n >= $3 THEN 'CLOSED' ELSE 'OPEN' END,
                        updated_at = now()
                    FROM (SELECT i.window_start, count(*)::integer AS n FROM ins i GROUP BY i.window_start) x
                    WHERE w.config_name = $1 AND w.window_start = x.window_start
                      AND w.window_start >= pacing_ms($11) AND w.window_start < pacing_ms($11 + $12 * $2)
                    RETURNING w.window_start, w.status
                ), succ AS (
                    INSERT INTO pacing_window (config_name, window_start, slot_count, status)
                    SELECT $1, u.window_start + $2 * interval '1 millisecond', 0, 'OPEN'
                    FROM upd u
                    WHERE u.status = 'CLOSED' AND $13
                      AND NOT EXISTS (SELECT 1 FROM pacing_window x
                                      WHERE x.config_name = $1 AND x.window_start = u.window_start + $2 * interval '1 millisecond')
                      AND pacing_may_create($1, u.window_start + $2 * interval '1 millisecond')
                    ON CONFLICT DO NOTHING
                )
                SELECT i.event_id, 'NEW'::text, i.window_start, i.scheduled_time, i.slot_index FROM ins i
                $stmt$, CASE WHEN p_fresh THEN '' ELSE 'ON CONFLICT ON CONSTRAINT pacing_slot_pkey DO NOTHING' END)
                USING p_config, p_window_ms, p_max, p_requested, v_ws, v_cs, v_takes, v_offs,
                      p_event_ids[v_done + 1 : v_done + v_taken], p_us[v_done + 1 : v_done + v_taken],
                      v_w_ms, v_k, v_done + v_taken < v_n;
                GET DIAGNOSTICS v_new = ROW_COUNT;
                IF v_new < v_taken THEN
                    -- Events that conflicted had slots: EXISTING. The
                    -- windows this transaction created for them are left
                    -- empty: gone, or they would be holes.
                    RETURN QUERY SELECT * FROM pacing_existing(p_event_ids[v_done + 1 : v_done + v_taken]);
                    DELETE FROM pacing_window w
                    WHERE w.config_name = p_config AND w.window_start = ANY(v_ws)
                      AND w.slot_count = 0 AND w.xmin = pg_current_xact_id()::xid;
                END IF;
                v_done := v_done + v_taken;
                v_misses := 0;
            ELSIF NOT v_held THEN
                -- Every window of the range full: one miss, not one per
                -- window.
                v_misses := v_misses + 1;
            END IF;
            -- On after the estimate's last window, not the whole range:
            -- the range's windows after it are the next ones to fill. (Those
            -- skipped inside the estimate are being filled by their holders.)
            IF v_est IS NULL THEN
                v_w_ms := v_w_ms + v_k * p_window_ms;
            ELSE
                v_w_ms := floor(extract(epoch FROM v_est[cardinality(v_est)]) * 1000)::bigint + p_window_ms;
            END IF;
            CONTINUE;
        END IF;
        -- The window the deadline falls in: the slots before it.
        v_cap := p_max;
        IF v_dl_ms IS NOT NULL AND v_dl_ms < v_w_ms + p_window_ms THEN
            v_cap := floor(p_max::numeric * (v_dl_ms - v_w_ms) / p_window_ms)::integer;
        END IF;
        SELECT t.o_first, t.o_taken INTO v_first, v_taken
        FROM pacing_take(p_config, pacing_ms(v_w_ms), p_window_ms, v_cap, p_max, v_n - v_done) t;
        IF v_taken > 0 THEN
            RETURN QUERY SELECT * FROM pacing_place(p_config, p_window_ms, v_w_ms, 0, p_max, v_first, p_requested,
                                                    p_event_ids[v_done + 1 : v_done + v_taken], p_us[v_done + 1 : v_done + v_taken]);
            v_done := v_done + v_taken;
            v_misses := 0;
        ELSIF pacing_busy(p_config, pacing_ms(v_w_ms), v_cap) THEN
            -- Held by another transaction, which is filling it: no miss,
            -- or a call walking past others' ranges (each up to a chunk's
            -- windows) would give up with room beyond them.
            v_busy := v_busy OR v_dl_ms IS NOT NULL;
        ELSE
            v_misses := v_misses + 1; -- full under a lowered max
        END IF;
        v_w_ms := v_w_ms + p_window_ms;
    END LOOP;

    IF v_done < v_n THEN
        -- No room for these: those that have slots are EXISTING (a replay
        -- when every window is full), the rest LATE when the search reached
        -- the deadline, else EXHAUSTED.
        RETURN QUERY
        SELECT t.id, CASE WHEN s.event_id IS NOT NULL THEN 'EXISTING'
                          WHEN v_dl_ms IS NOT NULL AND greatest(v_w_ms, v_req_ms) >= v_dl_ms
                          THEN CASE WHEN v_busy THEN 'BUSY' ELSE 'LATE' END
                          ELSE 'EXHAUSTED' END::text,
               s.window_start, s.scheduled_time, s.slot_index
        FROM unnest(p_event_ids[v_done + 1 : v_n]) AS t(id)
        LEFT JOIN pacing_slot s ON s.event_id = t.id;
    END IF;
END
$$;

-- pacing_execute lets one execution go under a config: it counts it in the
-- window of p_now, or, that window full, in the first later one with room
-- (at most p_headroom later), and returns when it may run: p_now, or its
-- place in the window it was counted in, when that is later (a window's
-- executions spread evenly, as slots are); with p_spread false (an
-- execution at its own slot, which spread it already) p_now in its window.
-- NULL when no window within the headroom has room. A window the
-- execution would enter within its last p_guard_ms counts as full for it:
-- an execution let go there would be recorded in the next one. Each call
-- that opens a window prunes the config's windows older than an hour.
CREATE OR REPLACE FUNCTION pacing_execute(p_config text, p_window_ms bigint, p_max integer, p_headroom integer,
                                          p_guard_ms bigint, p_now timestamptz, p_spread boolean)
RETURNS timestamptz
LANGUAGE plpgsql
SET plan_cache_mode = auto
AS $$
DECLARE
    v_now_ms  bigint := floor(extract(epoch FROM p_now) * 1000)::bigint;
    v_w_ms    bigint;
    v_n       integer;
    v_new     boolean;
BEGIN
    v_w_ms := v_now_ms - ((v_now_ms % p_window_ms) + p_window_ms) % p_window_ms;
    IF v_now_ms >= v_w_ms + p_window_ms - p_guard_ms THEN
        v_w_ms := v_w_ms + p_window_ms;
    END IF;
    FOR i IN 0..p_headroom LOOP
        INSERT INTO pacing_execution AS e (config_name, window_start, executed)
        VALUES (p_config, pacing_ms(v_w_ms), 1)
        ON CONFLICT (config_name, window_start) DO UPDATE SET executed = e.executed + 1
            WHERE e.executed < p_max
        RETURNING e.executed, e.xmax = 0 INTO v_n, v_new;
        IF FOUND THEN
            IF v_new THEN
                DELETE FROM pacing_execution x
                WHERE x.config_name = p_config AND x.window_start < p_now - interval '1 hour';
            END IF;
            IF p_spread THEN
                RETURN greatest(p_now, pacing_ms(v_w_ms + (v_n - 1)::bigint * p_window_ms / p_max));
            END IF;
            RETURN greatest(p_now, pacing_ms(v_w_ms));
        END IF;
        v_w_ms := v_w_ms + p_window_ms;
    END LOOP;
    RETURN NULL;
END
$$;
