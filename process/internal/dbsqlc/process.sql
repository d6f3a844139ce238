-- Process manager statements. Every change to an instance is guarded by
-- its version and status (optimistic concurrency); the step transaction
-- also holds the row lock, so a guard failing there is a bug, not a race.

-- name: InsertInstance :one
-- A new process, NEW at its initial step, and its ProcessStarted entry, in
-- one statement. No row back (and no entry): it exists already (same id,
-- or same type and business key).
WITH ins AS (
    INSERT INTO process_instance (process_id, process_type, business_key, status, current_step, data, workflow_id)
    VALUES (@process_id, @process_type, @business_key, 'NEW', @current_step, @data, @workflow_id)
    ON CONFLICT DO NOTHING
    RETURNING *
), started AS (
    INSERT INTO process_log (process_id, at, event, step, detail, actor)
    SELECT ins.process_id, @at::timestamptz, 'ProcessStarted', ins.current_step, @detail::jsonb, @actor::text
    FROM ins
)
SELECT ins.process_id, ins.process_type, ins.business_key, ins.status,
       ins.current_step, ins.data, ins.retries, ins.version,
       ins.resume_status, ins.failed_step, ins.error_code, ins.error_message,
       ins.compensation_error_code, ins.compensation_error_message, ins.workflow_id, ins.created_at,
       ins.updated_at
FROM ins;

-- name: GetInstance :one
SELECT * FROM process_instance WHERE process_id = @process_id;

-- name: LockInstance :one
-- The first statement of every step and every operator action: they go
-- one at a time per process. The transaction-scoped advisory lock (class
-- 0x70726f63, "proc", and a hash of the id: a collision only serializes
-- two processes) queues them in arrival order, which the row lock alone
-- does not once the row is updated: an operator pause waiting behind a
-- step gets its turn before the runner asks for the next step. The row
-- lock then keeps out writers that do not take a turn.
SELECT i.process_id, i.process_type, i.business_key, i.status,
       i.current_step, i.data, i.retries, i.version,
       i.resume_status, i.failed_step, i.error_code, i.error_message,
       i.compensation_error_code, i.compensation_error_message, i.workflow_id, i.created_at,
       i.updated_at
FROM process_instance i,
     LATERAL (SELECT pg_advisory_xact_lock(1886547811, hashtext(i.process_id::text))) turn
WHERE i.process_id = @process_id
FOR UPDATE OF i;

-- name: UpdateInstance :one
-- Writes a transition and its log entries, in order, in one statement
-- (parallel arrays, one element per entry), and a step's inbox row
-- (@inbox_key NULL: none). No row back and no entry: someone changed the
-- instance since it was read (version) or it is no longer in the status
-- the change is for. inbox_recorded false with an inbox key: the row was
-- there, the step applied before; the caller rolls back.
WITH upd AS (
    UPDATE process_instance
    SET status = @status,
        current_step = @current_step,
        data = @data,
        retries = @retries,
        resume_status = @resume_status,
        failed_step = @failed_step,
        error_code = @error_code,
        error_message = @error_message,
        compensation_error_code = @compensation_error_code,
        compensation_error_message = @compensation_error_message,
        workflow_id = @workflow_id,
        version = process_instance.version + 1,
        updated_at = now()
    WHERE process_instance.process_id = @process_id
      AND process_instance.version = @version
      AND process_instance.status = @expected_status
    RETURNING *
), attention AS (
    -- Into (or within) a status an operator lists: its row says so.
    INSERT INTO process_attention (process_id, status, updated_at)
    SELECT upd.process_id, upd.status, upd.updated_at FROM upd
    WHERE upd.status NOT IN ('NEW', 'RUNNING', 'SUCCEEDED')
    ON CONFLICT (process_id) DO UPDATE SET status = EXCLUDED.status, updated_at = EXCLUDED.updated_at
), cleared AS (
    -- Out of one: its row goes. A move between the common statuses
    -- (@expected_status one of them) plans to nothing here. The row is
    -- found by @process_id, not by a join with upd, so that a plan made
    -- without the values (a step's generic plan) uses the key too.
    DELETE FROM process_attention a
    WHERE a.process_id = @process_id
      AND @expected_status::text NOT IN ('NEW', 'RUNNING', 'SUCCEEDED')
      AND EXISTS (SELECT FROM upd WHERE upd.status IN ('NEW', 'RUNNING', 'SUCCEEDED'))
), logged AS (
    INSERT INTO process_log (process_id, at, event, step, attempt, error_code, detail, actor)
    SELECT upd.process_id, (@ats::timestamptz[])[i], (@events::text[])[i], (@steps::text[])[i],
           (@attempts::int[])[i], (@error_codes::text[])[i], ((@details::text[])[i])::jsonb,
           (@actors::text[])[i]
    FROM upd, generate_subscripts(@events::text[], 1) AS i
    ORDER BY i
), inboxed AS (
    INSERT INTO process_inbox (key, process_id, step, result)
    SELECT sqlc.narg('inbox_key')::text, upd.process_id, @inbox_step::text, sqlc.narg('inbox_result')::jsonb
    FROM upd
    WHERE sqlc.narg('inbox_key')::text IS NOT NULL
    ON CONFLICT (key) DO NOTHING
    RETURNING 1
)
SELECT upd.process_id, upd.process_type, upd.business_key, upd.status,
       upd.current_step, upd.data, upd.retries, upd.version,
       upd.resume_status, upd.failed_step, upd.error_code, upd.error_message,
       upd.compensation_error_code, upd.compensation_error_message, upd.workflow_id, upd.created_at,
       upd.updated_at, EXISTS (SELECT FROM inboxed) AS inbox_recorded
FROM upd;

-- name: ListLog :many
SELECT * FROM process_log WHERE process_id = @process_id ORDER BY seq;

-- name: CompletedSteps :many
-- Steps and compensations whose effect is committed, in order: what a
-- compensation must undo, and what it already has.
SELECT event, step FROM process_log
WHERE process_id = @process_id AND event IN ('StepCompleted', 'CompensationCompleted')
ORDER BY seq;

-- name: ListByStatus :many
-- Operator listing of a status process_attention holds, oldest change
-- first, after a keyset cursor.
SELECT i.* FROM process_attention a
JOIN process_instance i ON i.process_id = a.process_id
WHERE a.status = @status
  AND (a.updated_at, a.process_id) > (@after_at::timestamptz, @after_id::uuid)
ORDER BY a.updated_at, a.process_id
LIMIT @max_rows::int;

-- name: CountListed :one
-- Processes in a status process_attention holds, counted on its status
-- index (the metrics' gauge, read at each scrape).
SELECT count(*) FROM process_attention WHERE status = @status;

-- name: ListAll :many
-- Every process, by id after a keyset cursor (Verify).
SELECT * FROM process_instance
WHERE process_id > @after_id::uuid
ORDER BY process_id
LIMIT @max_rows::int;

-- name: AttentionDisagrees :many
-- Processes whose process_attention row is missing, extra or says
-- another status (Verify).
SELECT coalesce(i.process_id, a.process_id)::uuid AS process_id,
       coalesce(i.status, '')::text AS status, coalesce(a.status, '')::text AS listed_as
FROM (SELECT process_id, status FROM process_instance WHERE status NOT IN ('NEW', 'RUNNING', 'SUCCEEDED')) i
FULL JOIN process_attention a ON a.process_id = i.process_id
WHERE i.process_id IS NULL OR a.process_id IS NULL OR a.status <> i.status;

-- name: GetInbox :one
SELECT * FROM process_inbox WHERE key = @key;

-- name: DeleteEnded :one
-- Retention: up to @max_rows processes that ended before @before, oldest
-- first (process_log_ended_idx), still SUCCEEDED or COMPENSATED — final
-- statuses no operator action leaves — each with its log, its inbox rows
-- and its attention row. Instances are locked with SKIP LOCKED: one an
-- operator holds is left for the next round. A process in any other
-- status (running, paused, FAILED or COMPENSATION_FAILED, which an
-- operator may retry) is never touched. The transaction must set
-- paydispatch.retention (the log's trigger refuses other deletes).
WITH ended AS (
    DELETE FROM process_instance d
    WHERE d.process_id = ANY(ARRAY(
        SELECT i.process_id
        FROM process_log l
        JOIN process_instance i ON i.process_id = l.process_id
        WHERE l.event IN ('ProcessCompleted', 'ProcessCompensated') AND l.at < @before::timestamptz
          AND i.status IN ('SUCCEEDED', 'COMPENSATED')
        ORDER BY l.at
        LIMIT @max_rows::int
        FOR UPDATE OF i SKIP LOCKED))
      AND d.status IN ('SUCCEEDED', 'COMPENSATED')
    RETURNING d.process_id
), log AS (
    DELETE FROM process_log l WHERE l.process_id = ANY(ARRAY(SELECT ended.process_id FROM ended))
), inbox AS (
    DELETE FROM process_inbox x WHERE x.process_id = ANY(ARRAY(SELECT ended.process_id FROM ended))
), attention AS (
    DELETE FROM process_attention a WHERE a.process_id = ANY(ARRAY(SELECT ended.process_id FROM ended))
)
SELECT count(*)::bigint AS deleted FROM ended;

-- name: InsertInstances :many
-- AdvanceGroup's start: new processes of one type, NEW at the initial
-- step, each with its ProcessStarted entry, in one statement (in the
-- order given, the ids' order, so two groups of the same processes wait
-- for each other rather than deadlock). The rows inserted; those that
-- existed are not returned.
WITH ins AS (
    INSERT INTO process_instance (process_id, process_type, business_key, status, current_step, data, workflow_id)
    SELECT (@process_ids::uuid[])[n], @process_type::text, (@business_keys::text[])[n], 'NEW', @current_step::text,
           ((@datas::text[])[n])::jsonb, (@workflow_ids::text[])[n]
    FROM generate_subscripts(@process_ids::uuid[], 1) AS n
    ORDER BY n
    ON CONFLICT DO NOTHING
    RETURNING *
), started AS (
    INSERT INTO process_log (process_id, at, event, step, detail, actor)
    SELECT ins.process_id, @at::timestamptz, 'ProcessStarted', ins.current_step, ((@details::text[])[n])::jsonb, @actor::text
    FROM ins, generate_subscripts(@process_ids::uuid[], 1) AS n
    WHERE (@process_ids::uuid[])[n] = ins.process_id
)
SELECT ins.process_id, ins.process_type, ins.business_key, ins.status,
       ins.current_step, ins.data, ins.retries, ins.version,
       ins.resume_status, ins.failed_step, ins.error_code, ins.error_message,
       ins.compensation_error_code, ins.compensation_error_message, ins.workflow_id, ins.created_at,
       ins.updated_at
FROM ins;

-- name: LockInstances :many
-- LockInstance for a group's processes, in process_id order (two groups
-- sharing processes then wait for each other rather than deadlock).
SELECT i.process_id, i.process_type, i.business_key, i.status,
       i.current_step, i.data, i.retries, i.version,
       i.resume_status, i.failed_step, i.error_code, i.error_message,
       i.compensation_error_code, i.compensation_error_message, i.workflow_id, i.created_at,
       i.updated_at
FROM process_instance i,
     LATERAL (SELECT pg_advisory_xact_lock(1886547811, hashtext(i.process_id::text))) turn
WHERE i.process_id = ANY(@process_ids::uuid[])
ORDER BY i.process_id
FOR UPDATE OF i;

-- name: CompleteSteps :many
-- A group's forward step completed, for each of its processes: the
-- transitions (NEW or RUNNING → RUNNING at the next step, or SUCCEEDED),
-- their log entries in order and their inbox rows, in one statement.
-- Each is guarded by its version, as UpdateInstance; a process that is
-- not returned, or whose inbox row was there (inbox_recorded false),
-- makes the caller roll back. No operator status is entered or left, so
-- process_attention is untouched. (The ANY lets a generic plan find the
-- rows by key.)
WITH upd AS (
    UPDATE process_instance p
    SET status = (@statuses::text[])[n], current_step = (@current_steps::text[])[n],
        data = ((@datas::text[])[n])::jsonb, retries = 0,
        version = p.version + 1, updated_at = now()
    FROM generate_subscripts(@process_ids::uuid[], 1) AS n
    WHERE p.process_id = ANY(@process_ids::uuid[])
      AND p.process_id = (@process_ids::uuid[])[n] AND p.version = (@versions::bigint[])[n]
      AND p.status IN ('NEW', 'RUNNING')
    RETURNING p.process_id, p.process_type, p.business_key, p.status,
              p.current_step, p.data, p.retries, p.version,
              p.resume_status, p.failed_step, p.error_code, p.error_message,
              p.compensation_error_code, p.compensation_error_message, p.workflow_id, p.created_at,
              p.updated_at, n
), logged AS (
    INSERT INTO process_log (process_id, at, event, step, attempt, detail)
    SELECT upd.process_id, (@log_ats::timestamptz[])[l], (@log_events::text[])[l], (@log_steps::text[])[l],
           (@log_attempts::int[])[l], ((@log_details::text[])[l])::jsonb
    FROM upd, generate_subscripts(@log_process_ids::uuid[], 1) AS l
    WHERE (@log_process_ids::uuid[])[l] = upd.process_id
    ORDER BY l
), inboxed AS (
    INSERT INTO process_inbox (key, process_id, step, result)
    SELECT (@inbox_keys::text[])[upd.n], upd.process_id, (@inbox_steps::text[])[upd.n], ((@inbox_results::text[])[upd.n])::jsonb
    FROM upd
    ON CONFLICT (key) DO NOTHING
    RETURNING process_inbox.process_id
)
SELECT upd.process_id, upd.process_type, upd.business_key, upd.status,
       upd.current_step, upd.data, upd.retries, upd.version,
       upd.resume_status, upd.failed_step, upd.error_code, upd.error_message,
       upd.compensation_error_code, upd.compensation_error_message, upd.workflow_id, upd.created_at,
       upd.updated_at, (upd.process_id IN (SELECT inboxed.process_id FROM inboxed))::boolean AS inbox_recorded
FROM upd;
