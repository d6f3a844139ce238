-- +goose Up
-- Slots leave the last sub-interval of their window empty. An execution
-- starts a little after its slot (the engine's lag, milliseconds), so a
-- slot in the very last moments of a window executed in the next one, and
-- with every window full that one went over its limit by execution time
-- (bench drain: 1 to 4 windows of 30 at 101 of 100, on a quiet machine).
-- The k-th of n slots now falls in the k-th of n + 1 equal sub-intervals:
-- the last sub-interval (40 ms for 100 per PT4S) is the margin for that
-- lag, and every second still gets the rate ±1. The formula lives in one
-- function, pacing_offset_ms, which both slot-placing statements call.

-- +goose StatementBegin
-- pacing_offset_ms is the offset into a span of p_span_ms of the slot at
-- position p_pos (its index from 0 plus its jitter, 0 <= jitter < 1) of
-- p_cap slots spread evenly over it, with a sub-interval left at the end.
CREATE OR REPLACE FUNCTION pacing_offset_ms(p_span_ms bigint, p_cap integer, p_pos double precision)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT floor(p_pos * p_span_ms / (p_cap + 1))::bigint
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pacing_place inserts slots p_first.. of a window for the given events,
-- stratified: the k-th slot of a window with capacity p_cap over its part
-- from p_elapsed_ms falls in the k-th of p_cap + 1 equal sub-intervals of
-- that part (pacing_offset_ms), at the point p_u (0 <= u < 1, drawn by the
-- caller) inside it. An
-- event that has a slot already (or is given twice) keeps its slot
-- (EXISTING) and gives its counter unit back.
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
CREATE OR REPLACE FUNCTION pacing_assign(p_config text, p_window_ms bigint, p_max integer, p_headroom integer,
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
    v_new     bigint;
BEGIN
    v_w0_ms := v_req_ms - ((v_req_ms % p_window_ms) + p_window_ms) % p_window_ms;
    v_elapsed := v_req_ms - v_w0_ms;
    v_eff := floor(p_max::numeric * (p_window_ms - v_elapsed) / p_window_ms)::integer;

    -- No probe of the keys first: the slot inserts' ON CONFLICT finds the
    -- events that have slots (and ids given twice), and their answers are
    -- EXISTING. A replayed call therefore walks the windows again, moving
    -- no counter.
    v_n := coalesce(cardinality(p_event_ids), 0);
    IF v_n = 0 THEN
        RETURN;
    END IF;

    -- Phase 1: the requested window, proportionally.
    SELECT t.o_first, t.o_taken INTO v_first, v_taken
    FROM pacing_take(p_config, pacing_ms(v_w0_ms), p_window_ms, v_eff, p_max, v_n) t;
    IF v_taken > 0 THEN
        RETURN QUERY SELECT * FROM pacing_place(p_config, p_window_ms, v_w0_ms, v_elapsed, v_eff, v_first,
                                                p_requested, p_event_ids[1:v_taken], p_us[1:v_taken]);
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
                    -- Events and slots matched by position (a join, not
                    -- p_event_ids[i] per row: subscripting a text array walks it).
                    SELECT e.id, p_config, k.ws, k.idx,
                           k.ws + pacing_offset_ms(p_window_ms, p_max, k.idx + e.u) * interval '1 millisecond',
                           p_requested
                    FROM (SELECT p.ws, p.c + g AS idx, p.off + g + 1 AS ord
                          FROM unnest(v_ws, v_cs, v_takes, v_offs) AS p(ws, c, take, off)
                          CROSS JOIN LATERAL generate_series(0, p.take - 1) g) k
                    JOIN unnest(p_event_ids[v_done + 1 : v_done + v_taken], p_us[v_done + 1 : v_done + v_taken])
                         WITH ORDINALITY AS e(id, u, ord) ON e.ord = k.ord
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
                      AND w.window_start >= pacing_ms(v_w_ms) AND w.window_start < pacing_ms(v_w_ms + v_k * p_window_ms)
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
                GET DIAGNOSTICS v_new = ROW_COUNT;
                IF v_new < v_taken THEN
                    -- Events that conflicted had slots: EXISTING.
                    RETURN QUERY SELECT * FROM pacing_existing(p_event_ids[v_done + 1 : v_done + v_taken]);
                END IF;
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
                                                    p_event_ids[v_done + 1 : v_done + v_taken], p_us[v_done + 1 : v_done + v_taken]);
            v_done := v_done + v_taken;
            v_misses := 0;
        ELSE
            v_misses := v_misses + 1; -- held by another transaction (or full under a lowered max)
        END IF;
        v_w_ms := v_w_ms + p_window_ms;
    END LOOP;

    IF v_done < v_n THEN
        -- No room for these: those that have slots are EXISTING (a replay
        -- when every window is full), the rest EXHAUSTED.
        RETURN QUERY
        SELECT t.id, CASE WHEN s.event_id IS NULL THEN 'EXHAUSTED' ELSE 'EXISTING' END::text,
               s.window_start, s.scheduled_time, s.slot_index
        FROM unnest(p_event_ids[v_done + 1 : v_n]) AS t(id)
        LEFT JOIN pacing_slot s ON s.event_id = t.id;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- The bodies stay and call the helper; the helper gets 00009's formula
-- back (p_cap sub-intervals, none left empty).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION pacing_offset_ms(p_span_ms bigint, p_cap integer, p_pos double precision)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT floor(p_pos * p_span_ms / p_cap)::bigint
$$;
-- +goose StatementEnd
