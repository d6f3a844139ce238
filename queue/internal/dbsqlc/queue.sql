-- Queue statements. Every transition is one guarded statement that also
-- writes its audit rows, so a transition and its audit record commit together.

-- name: InsertContext :execrows
INSERT INTO exec_context (item_type, item_id, context, context_version)
VALUES (@item_type, @item_id, @context, @context_version)
ON CONFLICT (item_type, item_id) DO NOTHING;

-- name: InsertQueueItem :execrows
INSERT INTO exec_queue (item_type, item_id, tenant_id, scheduled_exec_time, init_workflow_id, paced)
VALUES (@item_type, @item_id, @tenant_id, @scheduled_exec_time, sqlc.narg('init_workflow_id'), @paced)
ON CONFLICT (item_type, item_id) DO NOTHING;

-- name: InsertEnqueueAudit :exec
INSERT INTO dispatch_audit_log (item_type, item_id, action, status_after)
VALUES (@item_type, @item_id::text, 'ENQUEUED', 'READY');

-- name: CompareEnqueued :one
-- What an idempotent replay needs to decide between no-op and conflict.
SELECT
    q.queue_status AS queue_status,
    q.tenant_id AS tenant_id,
    q.scheduled_exec_time AS scheduled_exec_time,
    (x.item_id IS NOT NULL)::bool AS context_exists,
    (CASE WHEN sqlc.narg('context')::jsonb IS NULL THEN x.item_id IS NULL
          ELSE coalesce(x.context = sqlc.narg('context')::jsonb AND x.context_version = @context_version::int, false)
     END)::bool AS context_equal
FROM (SELECT @item_type::text AS item_type, @item_id::text AS item_id) k
LEFT JOIN exec_queue q ON q.item_type = k.item_type AND q.item_id = k.item_id
LEFT JOIN exec_context x ON x.item_type = k.item_type AND x.item_id = k.item_id;

-- name: MarkDispatched :many
-- CLAIMED -> DISPATCHED, guarded by status and by the claiming batch, so a
-- dispatcher whose claim was recovered and re-claimed by another cannot
-- touch the row.
WITH input AS (
    SELECT unnest(@item_ids::text[]) AS item_id,
           unnest(@exec_workflow_ids::text[]) AS exec_workflow_id
), moved AS (
    UPDATE exec_queue q
    SET queue_status = 'DISPATCHED',
        exec_workflow_id = input.exec_workflow_id,
        dispatched_at = now(),
        updated_at = now()
    FROM input
    WHERE q.item_type = @item_type
      AND q.item_id = ANY(@item_ids::text[])
      AND q.item_id = input.item_id
      AND q.queue_status = 'CLAIMED'
      AND q.dispatch_batch_id = @batch_id::text
    RETURNING q.item_id, q.exec_workflow_id
), audit AS (
    INSERT INTO dispatch_audit_log (batch_id, item_type, item_id, action, status_before, status_after, detail)
    SELECT @batch_id::text, @item_type, m.item_id, 'DISPATCHED', 'CLAIMED', 'DISPATCHED', m.exec_workflow_id
    FROM moved m
)
SELECT m.item_id FROM moved m;

-- name: ReleaseForRetry :many
-- CLAIMED -> READY with retry_count+1, or DEAD_LETTER once the retries are
-- exhausted (a READY row at max retries would never be claimed again).
WITH input AS (
    SELECT unnest(@item_ids::text[]) AS item_id,
           unnest(@errors::text[]) AS error
), moved AS (
    UPDATE exec_queue q
    SET queue_status = CASE WHEN q.retry_count + 1 >= @max_retries::int
                            THEN 'DEAD_LETTER' ELSE 'READY' END,
        retry_count = q.retry_count + 1,
        last_error = input.error,
        claimed_at = NULL,
        updated_at = now()
    FROM input
    WHERE q.item_type = @item_type
      AND q.item_id = ANY(@item_ids::text[])
      AND q.item_id = input.item_id
      AND q.queue_status = 'CLAIMED'
      AND q.dispatch_batch_id = @batch_id::text
    RETURNING q.item_id, q.queue_status, q.retry_count, q.last_error
), audit AS (
    INSERT INTO dispatch_audit_log (batch_id, item_type, item_id, action, status_before, status_after, detail)
    SELECT @batch_id::text, @item_type, m.item_id,
           CASE WHEN m.queue_status = 'DEAD_LETTER' THEN 'DEAD_LETTER' ELSE @action::text END,
           'CLAIMED', m.queue_status, m.last_error
    FROM moved m
)
SELECT m.item_id, m.queue_status, m.retry_count FROM moved m;

-- name: MarkCompleted :many
-- DISPATCHED -> COMPLETED; the context has served its purpose and is deleted
-- in the same statement.
WITH input AS (
    SELECT unnest(@item_ids::text[]) AS item_id
), moved AS (
    UPDATE exec_queue q
    SET queue_status = 'COMPLETED',
        completed_at = now(),
        updated_at = now()
    FROM input
    WHERE q.item_type = @item_type
      AND q.item_id = ANY(@item_ids::text[])
      AND q.item_id = input.item_id
      AND q.queue_status = 'DISPATCHED'
    RETURNING q.item_id, q.dispatch_batch_id
), dropped AS (
    DELETE FROM exec_context x
    USING moved m
    WHERE x.item_type = @item_type AND x.item_id = m.item_id
), audit AS (
    INSERT INTO dispatch_audit_log (batch_id, item_type, item_id, action, status_before, status_after)
    SELECT m.dispatch_batch_id, @item_type, m.item_id, 'COMPLETED', 'DISPATCHED', 'COMPLETED'
    FROM moved m
)
SELECT m.item_id FROM moved m;

-- name: MarkFailed :many
-- DISPATCHED -> FAILED -> READY (retry_count+1) or DEAD_LETTER, in one
-- statement so no row ever rests in FAILED; the audit log records both steps.
WITH input AS (
    SELECT unnest(@item_ids::text[]) AS item_id,
           unnest(@errors::text[]) AS error
), moved AS (
    UPDATE exec_queue q
    SET queue_status = CASE WHEN q.retry_count + 1 >= @max_retries::int
                            THEN 'DEAD_LETTER' ELSE 'READY' END,
        retry_count = q.retry_count + 1,
        last_error = input.error,
        claimed_at = NULL,
        updated_at = now()
    FROM input
    WHERE q.item_type = @item_type
      AND q.item_id = ANY(@item_ids::text[])
      AND q.item_id = input.item_id
      AND q.queue_status = 'DISPATCHED'
    RETURNING q.item_id, q.queue_status, q.retry_count, q.last_error, q.dispatch_batch_id
), audit AS (
    INSERT INTO dispatch_audit_log (batch_id, item_type, item_id, action, status_before, status_after, detail)
    SELECT m.dispatch_batch_id, @item_type, m.item_id, 'EXEC_FAILED', 'DISPATCHED', 'FAILED', m.last_error
    FROM moved m
    UNION ALL
    SELECT m.dispatch_batch_id, @item_type, m.item_id,
           CASE WHEN m.queue_status = 'DEAD_LETTER' THEN 'DEAD_LETTER' ELSE 'RETRY' END,
           'FAILED', m.queue_status, NULL
    FROM moved m
)
SELECT m.item_id, m.queue_status, m.retry_count FROM moved m;

-- name: CurrentStatuses :many
SELECT q.item_id, q.queue_status, q.dispatch_batch_id
FROM exec_queue q
WHERE q.item_type = @item_type AND q.item_id = ANY(@item_ids::text[]);

-- name: FindStaleClaims :many
SELECT item_type, item_id, tenant_id, queue_status, scheduled_exec_time, init_workflow_id,
       dispatch_batch_id, exec_workflow_id, claimed_at, dispatched_at, completed_at,
       retry_count, last_error, created_at, updated_at, paced
FROM exec_queue
WHERE item_type = @item_type
  AND queue_status = 'CLAIMED'
  AND claimed_at < now() - make_interval(secs => @older_than_secs::float8)
ORDER BY claimed_at
LIMIT @max_items::int;

-- name: DeadLetterExhausted :many
-- READY -> DEAD_LETTER for rows whose retry_count is already at or above
-- max_retries (left behind when the max was lowered): the claim never
-- takes them. Through exec_queue_retried_ready_idx, so a cycle finds none
-- without reading the queue.
WITH picked AS (
    SELECT q.item_id
    FROM exec_queue q
    WHERE q.item_type = @item_type
      AND q.queue_status = 'READY'
      AND q.retry_count > 0
      AND q.retry_count >= @max_retries::int
    LIMIT @max_items::int
    FOR UPDATE SKIP LOCKED
), moved AS (
    UPDATE exec_queue q
    SET queue_status = 'DEAD_LETTER',
        last_error = 'retries used up: ' || q.retry_count || ' tries, max_dispatch_retries ' || @max_retries::int
                     || COALESCE('; last error: ' || q.last_error, ''),
        updated_at = now()
    WHERE q.item_type = @item_type
      AND q.item_id = ANY(ARRAY(SELECT picked.item_id FROM picked))
      AND q.queue_status = 'READY'
      AND q.retry_count >= @max_retries::int
    RETURNING q.item_id, q.queue_status, q.retry_count, q.last_error
), audit AS (
    INSERT INTO dispatch_audit_log (item_type, item_id, action, status_before, status_after, detail)
    SELECT @item_type, m.item_id, 'DEAD_LETTER', 'READY', 'DEAD_LETTER', m.last_error
    FROM moved m
)
SELECT m.item_id, m.queue_status, m.retry_count FROM moved m;

-- name: GetItem :one
SELECT item_type, item_id, tenant_id, queue_status, scheduled_exec_time, init_workflow_id,
       dispatch_batch_id, exec_workflow_id, claimed_at, dispatched_at, completed_at,
       retry_count, last_error, created_at, updated_at, paced
FROM exec_queue
WHERE item_type = @item_type AND item_id = @item_id;

-- name: DepthByStatus :many
SELECT queue_status, count(*)::bigint AS items
FROM exec_queue
WHERE item_type = @item_type
GROUP BY queue_status;

-- name: OldestReady :one
-- The oldest READY row's time (no row: none), from the fair claim's index
-- as the claim reads it: every tenant with READY items (a skip scan, one
-- descent each), and each one's oldest.
WITH RECURSIVE tenants AS (
    (SELECT q.tenant_id FROM exec_queue q
     WHERE q.item_type = @item_type AND q.queue_status = 'READY'
     ORDER BY q.tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT q.tenant_id FROM exec_queue q
            WHERE q.item_type = @item_type AND q.queue_status = 'READY' AND q.tenant_id > t.tenant_id
            ORDER BY q.tenant_id LIMIT 1)
    FROM tenants t
    WHERE t.tenant_id IS NOT NULL
)
SELECT min(o.scheduled_exec_time)::timestamptz AS oldest
FROM tenants t
CROSS JOIN LATERAL (
    SELECT q.scheduled_exec_time FROM exec_queue q
    WHERE q.item_type = @item_type AND q.tenant_id = t.tenant_id AND q.queue_status = 'READY'
    ORDER BY q.scheduled_exec_time LIMIT 1
) o
WHERE t.tenant_id IS NOT NULL
HAVING count(*) > 0;

-- name: InsertAudit :copyfrom
INSERT INTO dispatch_audit_log (batch_id, item_type, item_id, action, status_before, status_after, detail)
VALUES (@batch_id, @item_type, @item_id, @action, @status_before, @status_after, @detail);

-- name: GetConfig :one
SELECT item_type, enabled, batch_size, dispatch_interval_secs, jitter_window_ms,
       pre_start_buffer_secs, max_dispatch_retries, stale_claim_threshold_secs,
       max_stale_recovery_per_cycle, exec_workflow_type, exec_task_queue, created_at, updated_at, max_in_flight, pacing_config, paced_lead_ms, exec_mode
FROM exec_rate_config
WHERE item_type = @item_type;

-- name: ListConfigs :many
SELECT item_type, enabled, batch_size, dispatch_interval_secs, jitter_window_ms,
       pre_start_buffer_secs, max_dispatch_retries, stale_claim_threshold_secs,
       max_stale_recovery_per_cycle, exec_workflow_type, exec_task_queue, created_at, updated_at, max_in_flight, pacing_config, paced_lead_ms, exec_mode
FROM exec_rate_config
ORDER BY item_type;

-- name: ListDispatched :many
SELECT item_type, item_id, tenant_id, queue_status, scheduled_exec_time, init_workflow_id,
       dispatch_batch_id, exec_workflow_id, claimed_at, dispatched_at, completed_at,
       retry_count, last_error, created_at, updated_at, paced
FROM exec_queue
WHERE item_type = @item_type AND queue_status = 'DISPATCHED'
  AND scheduled_exec_time <= @due_by
ORDER BY dispatched_at
LIMIT @max_items::int;

-- name: UpdateConfig :one
-- Changes only the given settings; the table's CHECKs guard the values.
UPDATE exec_rate_config SET
    enabled                      = COALESCE(sqlc.narg('enabled')::boolean, enabled),
    batch_size                   = COALESCE(sqlc.narg('batch_size')::int, batch_size),
    dispatch_interval_secs       = COALESCE(sqlc.narg('dispatch_interval_secs')::int, dispatch_interval_secs),
    jitter_window_ms             = COALESCE(sqlc.narg('jitter_window_ms')::int, jitter_window_ms),
    pre_start_buffer_secs        = COALESCE(sqlc.narg('pre_start_buffer_secs')::int, pre_start_buffer_secs),
    max_dispatch_retries         = COALESCE(sqlc.narg('max_dispatch_retries')::int, max_dispatch_retries),
    stale_claim_threshold_secs   = COALESCE(sqlc.narg('stale_claim_threshold_secs')::int, stale_claim_threshold_secs),
    max_stale_recovery_per_cycle = COALESCE(sqlc.narg('max_stale_recovery_per_cycle')::int, max_stale_recovery_per_cycle),
    exec_workflow_type           = COALESCE(sqlc.narg('exec_workflow_type')::text, exec_workflow_type),
    exec_task_queue              = COALESCE(sqlc.narg('exec_task_queue')::text, exec_task_queue),
    max_in_flight                = COALESCE(sqlc.narg('max_in_flight')::int, max_in_flight),
    paced_lead_ms                = COALESCE(sqlc.narg('paced_lead_ms')::int, paced_lead_ms),
    exec_mode                    = COALESCE(sqlc.narg('exec_mode')::text, exec_mode),
    -- '' clears it (no pacing)
    pacing_config                = CASE WHEN sqlc.narg('pacing_config')::text IS NULL THEN pacing_config
                                        ELSE nullif(sqlc.narg('pacing_config')::text, '') END,
    updated_at                   = now()
WHERE item_type = @item_type
RETURNING item_type, enabled, batch_size, dispatch_interval_secs, jitter_window_ms,
          pre_start_buffer_secs, max_dispatch_retries, stale_claim_threshold_secs,
          max_stale_recovery_per_cycle, exec_workflow_type, exec_task_queue, created_at, updated_at, max_in_flight, pacing_config, paced_lead_ms, exec_mode;

-- name: CountInFlight :one
-- Items claimed or dispatched and not yet settled; one branch per status
-- so each uses that status's partial index.
SELECT (SELECT count(*) FROM exec_queue q WHERE q.item_type = @item_type AND q.queue_status = 'CLAIMED')
     + (SELECT count(*) FROM exec_queue q WHERE q.item_type = @item_type AND q.queue_status = 'DISPATCHED') AS n;

-- name: ClaimBatch :many
-- The claim, shared fairly between tenants and within their caps: every
-- tenant with READY items (found by a skip scan, one index descent each)
-- offers its oldest due items, up to its room under its cap and twice its
-- fair share; the offers are taken round-robin (each tenant's 1st, then
-- each one's 2nd, ...) up to the batch size, locked with SKIP LOCKED,
-- marked CLAIMED and returned with their contexts. Items held back by a
-- cap stay READY, their retries untouched.
WITH RECURSIVE tenants AS (
    (SELECT q.tenant_id FROM exec_queue q
     WHERE q.item_type = sqlc.arg('item_type') AND q.queue_status = 'READY'
     ORDER BY q.tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT q.tenant_id FROM exec_queue q
            WHERE q.item_type = sqlc.arg('item_type') AND q.queue_status = 'READY' AND q.tenant_id > t.tenant_id
            ORDER BY q.tenant_id LIMIT 1)
    FROM tenants t
    WHERE t.tenant_id IS NOT NULL
), active AS (
    SELECT t.tenant_id FROM tenants t WHERE t.tenant_id IS NOT NULL
), share AS (
    SELECT greatest(ceil(2.0 * sqlc.arg('batch_size')::int / greatest(count(*), 1)), 1)::int AS per_tenant FROM active
), in_flight AS (
    -- Counted only when the item type has caps at all; one branch per
    -- status so each uses that status's partial index.
    SELECT f.tenant_id, count(*)::int AS n
    FROM (
        SELECT q.tenant_id FROM exec_queue q
        WHERE q.item_type = sqlc.arg('item_type') AND q.queue_status = 'CLAIMED'
        UNION ALL
        SELECT q.tenant_id FROM exec_queue q
        WHERE q.item_type = sqlc.arg('item_type') AND q.queue_status = 'DISPATCHED'
    ) f
    WHERE EXISTS (SELECT 1 FROM tenant_capacity c WHERE c.item_type = sqlc.arg('item_type'))
    GROUP BY f.tenant_id
), room AS (
    SELECT a.tenant_id,
           CASE WHEN cap.max_in_flight IS NULL THEN sqlc.arg('batch_size')::int
                ELSE greatest(cap.max_in_flight - coalesce(f.n, 0), 0) END AS room
    FROM active a
    LEFT JOIN LATERAL (
        SELECT c.max_in_flight FROM tenant_capacity c
        WHERE c.item_type = sqlc.arg('item_type') AND c.tenant_id IN (a.tenant_id, '*')
        ORDER BY (c.tenant_id = '*') LIMIT 1
    ) cap ON true
    LEFT JOIN in_flight f ON f.tenant_id = a.tenant_id
), offers AS (
    SELECT o.item_id, o.scheduled_exec_time, o.rn
    FROM room r
    CROSS JOIN share s
    CROSS JOIN LATERAL (
        SELECT q.item_id, q.scheduled_exec_time, row_number() OVER (ORDER BY q.scheduled_exec_time) AS rn
        FROM exec_queue q
        WHERE q.item_type = sqlc.arg('item_type') AND q.tenant_id = r.tenant_id AND q.queue_status = 'READY'
          AND q.scheduled_exec_time <= now() + make_interval(secs => sqlc.arg('pre_start_buffer_secs')::int)
          AND q.retry_count < sqlc.arg('max_retries')::int
        ORDER BY q.scheduled_exec_time
        LIMIT least(r.room, s.per_tenant)
    ) o
    WHERE r.room > 0
), picked AS (
    SELECT q.item_id
    FROM exec_queue q
    WHERE q.item_type = sqlc.arg('item_type')
      AND q.item_id = ANY(ARRAY(SELECT o.item_id FROM offers o ORDER BY o.rn, o.scheduled_exec_time LIMIT sqlc.arg('batch_size')::int))
      AND q.queue_status = 'READY'
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE exec_queue q
    SET queue_status = 'CLAIMED',
        dispatch_batch_id = sqlc.arg('batch_id')::text,
        claimed_at = now(),
        updated_at = now()
    WHERE q.item_type = sqlc.arg('item_type')
      AND q.item_id = ANY(ARRAY(SELECT picked.item_id FROM picked))
      AND q.queue_status = 'READY'
    RETURNING q.item_type, q.item_id, q.tenant_id, q.scheduled_exec_time, q.init_workflow_id,
              q.retry_count, q.claimed_at, q.created_at, q.paced
), audit AS (
    INSERT INTO dispatch_audit_log (batch_id, item_type, action, status_before, status_after, detail)
    SELECT sqlc.arg('batch_id')::text, sqlc.arg('item_type'), 'CLAIMED', 'READY', 'CLAIMED', 'items=' || count(*)
    FROM claimed
    HAVING count(*) > 0
)
SELECT c.item_type, c.item_id, c.tenant_id, c.scheduled_exec_time, c.init_workflow_id,
       c.retry_count, c.claimed_at, c.created_at,
       x.context, x.context_version, c.paced
FROM claimed c
LEFT JOIN exec_context x ON x.item_type = c.item_type AND x.item_id = c.item_id
ORDER BY c.scheduled_exec_time, c.item_id;

-- name: SetTenantCapacity :one
INSERT INTO tenant_capacity (item_type, tenant_id, max_in_flight, tier)
VALUES (@item_type, @tenant_id, @max_in_flight, sqlc.narg('tier'))
ON CONFLICT (item_type, tenant_id) DO UPDATE
SET max_in_flight = EXCLUDED.max_in_flight, tier = EXCLUDED.tier, updated_at = now()
RETURNING item_type, tenant_id, max_in_flight, tier, updated_at;

-- name: DeleteTenantCapacity :execrows
DELETE FROM tenant_capacity WHERE item_type = @item_type AND tenant_id = @tenant_id;

-- name: ListTenantCapacity :many
SELECT item_type, tenant_id, max_in_flight, tier, updated_at
FROM tenant_capacity WHERE item_type = @item_type ORDER BY tenant_id;

-- name: RegisterItemType :execrows
-- A new item type with its defaults; one that exists keeps its settings
-- (an operator may have changed them).
INSERT INTO exec_rate_config (item_type, enabled, batch_size, dispatch_interval_secs, jitter_window_ms,
       pre_start_buffer_secs, max_dispatch_retries, stale_claim_threshold_secs,
       max_stale_recovery_per_cycle, exec_workflow_type, exec_task_queue, max_in_flight, pacing_config, paced_lead_ms, exec_mode)
VALUES (@item_type, @enabled, @batch_size, @dispatch_interval_secs, @jitter_window_ms,
       @pre_start_buffer_secs, @max_dispatch_retries, @stale_claim_threshold_secs,
       @max_stale_recovery_per_cycle, @exec_workflow_type, @exec_task_queue, @max_in_flight,
       sqlc.narg('pacing_config'), @paced_lead_ms, @exec_mode)
ON CONFLICT (item_type) DO NOTHING;

-- name: InsertContextsAndItems :one
-- A chunk's contexts and queue items in one statement, from a JSON array
-- of {item_id, tenant_id, scheduled_exec_time, init_workflow_id, paced,
-- context, context_version} (context absent: the item has none): how
-- many queue rows and contexts were inserted (fewer than sent: some
-- exist already).
WITH c AS (
    INSERT INTO exec_context (item_type, item_id, context, context_version)
    SELECT @item_type::text, r.item_id, r.context, r.context_version
    FROM jsonb_to_recordset(@items::jsonb) AS r(item_id text, context jsonb, context_version integer)
    WHERE r.context IS NOT NULL
    ON CONFLICT (item_type, item_id) DO NOTHING
    RETURNING item_id
), q AS (
    INSERT INTO exec_queue (item_type, item_id, tenant_id, scheduled_exec_time, init_workflow_id, paced)
    SELECT @item_type::text, r.item_id, r.tenant_id, r.scheduled_exec_time, nullif(r.init_workflow_id, ''), r.paced
    FROM jsonb_to_recordset(@items::jsonb) AS r(item_id text, tenant_id text, scheduled_exec_time timestamptz,
                                                init_workflow_id text, paced boolean)
    ON CONFLICT (item_type, item_id) DO NOTHING
    RETURNING item_id
)
SELECT (SELECT count(*) FROM q)::int AS items, (SELECT count(*) FROM c)::int AS contexts;

-- name: InsertEnqueueAudits :exec
-- A batch enqueue's audit, from its items' ids and init workflow ids (the
-- i-th of each is the i-th item's): one row for each init workflow's
-- items, as a claim writes one for its batch: batch_id names the
-- workflow, detail counts them, and item_id names the item when it is
-- the only one. A Phase A chunk of thousands costs one row, not one each.
INSERT INTO dispatch_audit_log (batch_id, item_type, item_id, action, status_after, detail)
SELECT nullif(i.init_workflow_id, ''), @item_type::text, CASE WHEN count(*) = 1 THEN min(i.item_id) END,
       'ENQUEUED', 'READY', 'items=' || count(*)
FROM (SELECT unnest(@item_ids::text[]) AS item_id, unnest(@init_workflow_ids::text[]) AS init_workflow_id) i
GROUP BY i.init_workflow_id;

-- name: MarkExecuted :many
-- A batch execution's executed items -> COMPLETED, their contexts deleted,
-- in one statement. An item still CLAIMED by the batch that started the
-- execution counts too: a batch execution may finish an item before its
-- dispatcher has recorded the start (the dispatcher's mark then finds it
-- COMPLETED and leaves it).
WITH old AS (
    SELECT q.item_id, q.queue_status
    FROM exec_queue q
    WHERE q.item_type = @item_type
      AND q.item_id = ANY(@item_ids::text[])
      AND (q.queue_status = 'DISPATCHED'
           OR (q.queue_status = 'CLAIMED' AND q.dispatch_batch_id = @batch_id::text))
    FOR UPDATE
), moved AS (
    UPDATE exec_queue q
    SET queue_status = 'COMPLETED',
        exec_workflow_id = COALESCE(q.exec_workflow_id, @exec_workflow_id::text),
        dispatched_at = COALESCE(q.dispatched_at, now()),
        completed_at = now(),
        updated_at = now()
    FROM old
    WHERE q.item_type = @item_type AND q.item_id = old.item_id
    RETURNING q.item_id, q.dispatch_batch_id, old.queue_status AS status_before
), dropped AS (
    DELETE FROM exec_context x
    USING moved m
    WHERE x.item_type = @item_type AND x.item_id = m.item_id
), audit AS (
    INSERT INTO dispatch_audit_log (batch_id, item_type, item_id, action, status_before, status_after)
    SELECT m.dispatch_batch_id, @item_type, m.item_id, 'COMPLETED', m.status_before, 'COMPLETED'
    FROM moved m
)
SELECT m.item_id FROM moved m;

-- name: HandOver :execrows
-- A batch execution hands an item whose execution has to wait (or failed)
-- to the item's own workflow: guarded by the workflow it leaves, or, for an
-- item whose dispatch is not yet recorded, by the claiming batch.
WITH old AS (
    SELECT q.item_id, q.queue_status
    FROM exec_queue q
    WHERE q.item_type = @item_type AND q.item_id = @item_id
      AND ((q.queue_status = 'DISPATCHED' AND q.exec_workflow_id = @from_workflow_id::text)
           OR (q.queue_status = 'CLAIMED' AND q.dispatch_batch_id = @batch_id::text))
    FOR UPDATE
), moved AS (
    UPDATE exec_queue q
    SET queue_status = 'DISPATCHED',
        exec_workflow_id = @to_workflow_id::text,
        dispatched_at = COALESCE(q.dispatched_at, now()),
        updated_at = now()
    FROM old
    WHERE q.item_type = @item_type AND q.item_id = old.item_id
    RETURNING q.item_id, q.dispatch_batch_id, old.queue_status AS status_before
)
INSERT INTO dispatch_audit_log (batch_id, item_type, item_id, action, status_before, status_after, detail)
SELECT m.dispatch_batch_id, @item_type, m.item_id, 'HANDED_OVER', m.status_before, 'DISPATCHED', @to_workflow_id::text
FROM moved m;

-- name: ListDead :many
-- Dead letters, oldest death first (exec_queue_dead_idx), after a
-- position (died_at, item_type, item_id); every filter is optional.
-- reason matches a part of the last error, in any case.
SELECT q.item_type, q.item_id, q.tenant_id, q.updated_at AS died_at, q.scheduled_exec_time,
       q.retry_count, coalesce(q.last_error, '')::text AS last_error
FROM exec_queue q
WHERE q.queue_status = 'DEAD_LETTER'
  AND q.updated_at >= @after_at::timestamptz
  AND (q.updated_at, q.item_type, q.item_id) > (@after_at::timestamptz, @after_type::text, @after_id::text)
  AND q.updated_at >= @died_from::timestamptz
  AND q.updated_at < @died_to::timestamptz
  AND (@item_type::text = '' OR q.item_type = @item_type::text)
  AND (@tenant_id::text = '' OR q.tenant_id = @tenant_id::text)
  AND (@reason::text = '' OR strpos(lower(coalesce(q.last_error, '')), lower(@reason::text)) > 0)
ORDER BY q.updated_at, q.item_type, q.item_id
LIMIT @max_rows::int;

-- name: RequeueDead :many
-- DEAD_LETTER -> READY, by an operator: each item at the time given (a
-- slot from a rate-limit config, so paced), its retries anew. Rows no
-- longer dead are left alone and not returned.
WITH req AS (
    SELECT unnest(@item_ids::text[]) AS item_id, unnest(@ats::timestamptz[]) AS at
), moved AS (
    UPDATE exec_queue q
    SET queue_status = 'READY', scheduled_exec_time = req.at, paced = true, retry_count = 0,
        claimed_at = NULL, updated_at = now()
    FROM req
    WHERE q.item_type = @item_type AND q.item_id = req.item_id AND q.queue_status = 'DEAD_LETTER'
    RETURNING q.item_id, q.scheduled_exec_time
), audit AS (
    INSERT INTO dispatch_audit_log (item_type, item_id, action, status_before, status_after, detail)
    SELECT @item_type, m.item_id, 'REQUEUE', 'DEAD_LETTER', 'READY', @detail::text
    FROM moved m
)
SELECT m.item_id, m.scheduled_exec_time FROM moved m;

-- name: DeferItems :many
-- An execution that must not go now hands its item back: READY at a later
-- time (its slot on another day), or PARKED when at is NULL (held for an
-- operator; the epoch stands for NULL in the array). From DISPATCHED, or
-- CLAIMED under the batch that started it; retries are kept: nothing
-- failed.
WITH req AS (
    SELECT unnest(@item_ids::text[]) AS item_id, nullif(unnest(@ats::timestamptz[]), 'epoch'::timestamptz) AS at
), old AS (
    SELECT q.item_id, q.queue_status, req.at
    FROM exec_queue q JOIN req ON req.item_id = q.item_id
    WHERE q.item_type = @item_type
      AND (q.queue_status = 'DISPATCHED'
           OR (q.queue_status = 'CLAIMED' AND q.dispatch_batch_id = @batch_id::text))
    FOR UPDATE OF q
), moved AS (
    UPDATE exec_queue q
    SET queue_status = CASE WHEN old.at IS NULL THEN 'PARKED' ELSE 'READY' END,
        scheduled_exec_time = coalesce(old.at, q.scheduled_exec_time),
        paced = q.paced OR old.at IS NOT NULL,
        claimed_at = NULL, dispatched_at = NULL, exec_workflow_id = NULL,
        updated_at = now()
    FROM old
    WHERE q.item_type = @item_type AND q.item_id = old.item_id
    RETURNING q.item_id, q.queue_status, q.dispatch_batch_id, old.queue_status AS status_before
), audit AS (
    INSERT INTO dispatch_audit_log (batch_id, item_type, item_id, action, status_before, status_after)
    SELECT m.dispatch_batch_id, @item_type, m.item_id,
           CASE WHEN m.queue_status = 'PARKED' THEN 'PARKED' ELSE 'DEFERRED' END, m.status_before, m.queue_status
    FROM moved m
)
SELECT m.item_id, m.queue_status FROM moved m;

-- name: ResumeItems :many
-- PARKED -> READY at the time given (a new slot: paced), or a new READY
-- item for one that was never enqueued (held before it was). Items in
-- any other status are left alone and not returned.
WITH req AS (
    SELECT unnest(@item_ids::text[]) AS item_id, unnest(@tenant_ids::text[]) AS tenant_id,
           unnest(@ats::timestamptz[]) AS at
), moved AS (
    INSERT INTO exec_queue AS q (item_type, item_id, tenant_id, scheduled_exec_time, paced)
    SELECT @item_type::text, req.item_id, req.tenant_id, req.at, true FROM req
    ON CONFLICT (item_type, item_id) DO UPDATE
    SET queue_status = 'READY', scheduled_exec_time = excluded.scheduled_exec_time, paced = true,
        claimed_at = NULL, updated_at = now()
    WHERE q.queue_status = 'PARKED'
    RETURNING q.item_id, (q.xmax = 0) AS inserted
), audit AS (
    INSERT INTO dispatch_audit_log (item_type, item_id, action, status_before, status_after)
    SELECT @item_type, m.item_id, CASE WHEN m.inserted THEN 'ENQUEUED' ELSE 'RESUMED' END,
           CASE WHEN m.inserted THEN NULL ELSE 'PARKED' END, 'READY'
    FROM moved m
)
SELECT m.item_id FROM moved m;

-- name: EnqueueAbsent :many
-- New READY items for those of these that are not in the queue, in any
-- status; those that are are left as they are and not returned. Audited
-- ENQUEUED, an entry each.
WITH req AS (
    SELECT unnest(@item_ids::text[]) AS item_id, unnest(@tenant_ids::text[]) AS tenant_id,
           unnest(@ats::timestamptz[]) AS at, unnest(@paced::boolean[]) AS paced
), added AS (
    INSERT INTO exec_queue AS q (item_type, item_id, tenant_id, scheduled_exec_time, paced)
    SELECT @item_type::text, req.item_id, req.tenant_id, req.at, req.paced FROM req
    ON CONFLICT (item_type, item_id) DO NOTHING
    RETURNING q.item_id
), audit AS (
    INSERT INTO dispatch_audit_log (item_type, item_id, action, status_before, status_after)
    SELECT @item_type, a.item_id, 'ENQUEUED', NULL, 'READY' FROM added a
)
SELECT a.item_id FROM added a;

-- name: PresentAmong :many
-- Of these items, those in the queue, in any status (read, not locked).
SELECT q.item_id FROM exec_queue q WHERE q.item_type = @item_type AND q.item_id = ANY(@item_ids::text[]);

-- name: CompleteParked :many
-- PARKED -> COMPLETED: a held item its domain ended (a cancel).
WITH moved AS (
    UPDATE exec_queue q
    SET queue_status = 'COMPLETED', completed_at = now(), updated_at = now()
    WHERE q.item_type = @item_type AND q.item_id = ANY(@item_ids::text[]) AND q.queue_status = 'PARKED'
    RETURNING q.item_id
), dropped AS (
    DELETE FROM exec_context x USING moved m WHERE x.item_type = @item_type AND x.item_id = m.item_id
), audit AS (
    INSERT INTO dispatch_audit_log (item_type, item_id, action, status_before, status_after)
    SELECT @item_type, m.item_id, 'COMPLETED', 'PARKED', 'COMPLETED' FROM moved m
)
SELECT m.item_id FROM moved m;

-- name: LockReady :many
-- Of these items, those READY, locked to the caller's commit (a claim
-- walks past them meanwhile): what a lever may move.
SELECT q.item_id FROM exec_queue q
WHERE q.item_type = @item_type AND q.item_id = ANY(@item_ids::text[]) AND q.queue_status = 'READY'
FOR UPDATE SKIP LOCKED;

-- name: LockStates :many
-- Of these items, those in the queue with their statuses, locked to the
-- caller's commit (a claim, a deferral waits meanwhile).
SELECT q.item_id, q.queue_status FROM exec_queue q
WHERE q.item_type = @item_type AND q.item_id = ANY(@item_ids::text[])
FOR UPDATE;

-- name: MoveReady :many
-- READY items to new times (a lever moved their slots), or PARKED where
-- the time is the epoch (held); retries kept. Audited MOVED, PARKED.
WITH req AS (
    SELECT unnest(@item_ids::text[]) AS item_id, unnest(@ats::timestamptz[]) AS at
), moved AS (
    UPDATE exec_queue q
    SET scheduled_exec_time = CASE WHEN req.at = 'epoch'::timestamptz THEN q.scheduled_exec_time ELSE req.at END,
        queue_status = CASE WHEN req.at = 'epoch'::timestamptz THEN 'PARKED' ELSE 'READY' END,
        paced = true, updated_at = now()
    FROM req
    WHERE q.item_type = @item_type AND q.item_id = req.item_id AND q.queue_status = 'READY'
    RETURNING q.item_id, q.queue_status
), audit AS (
    INSERT INTO dispatch_audit_log (item_type, item_id, action, status_before, status_after)
    SELECT @item_type, m.item_id, CASE WHEN m.queue_status = 'PARKED' THEN 'PARKED' ELSE 'MOVED' END, 'READY', m.queue_status
    FROM moved m
)
SELECT m.item_id FROM moved m;

-- name: CompleteReady :many
-- READY items whose domain ended them without an execution (a payment
-- refused at its cut-off by a lever): COMPLETED, audited.
WITH moved AS (
    UPDATE exec_queue q
    SET queue_status = 'COMPLETED', completed_at = now(), updated_at = now()
    WHERE q.item_type = @item_type AND q.item_id = ANY(@item_ids::text[]) AND q.queue_status = 'READY'
    RETURNING q.item_id
), dropped AS (
    DELETE FROM exec_context x USING moved m WHERE x.item_type = @item_type AND x.item_id = m.item_id
), audit AS (
    INSERT INTO dispatch_audit_log (item_type, item_id, action, status_before, status_after)
    SELECT @item_type, m.item_id, 'COMPLETED', 'READY', 'COMPLETED' FROM moved m
)
SELECT m.item_id FROM moved m;

-- name: DeleteCompleted :execrows
-- Retention: up to @max_rows items COMPLETED before @before, of every
-- type, oldest first (exec_queue_completed_idx). COMPLETED is final (an
-- execution ran, or its domain ended the item), so no other state is
-- touched: a dead letter stays until it is redriven.
-- The batch is found by the index and deleted by its rows' addresses (a
-- TID scan), so neither step reads the table; a row updated meanwhile has
-- moved and is left.
DELETE FROM exec_queue q
WHERE q.ctid = ANY(ARRAY(
    SELECT c.ctid FROM exec_queue c
    WHERE c.queue_status = 'COMPLETED' AND c.completed_at < @before
    ORDER BY c.completed_at
    LIMIT @max_rows
)) AND q.queue_status = 'COMPLETED';

-- name: DeleteAudit :execrows
-- Retention: of the @max_rows oldest audit rows by id, those written
-- before @before. Ids follow insertion, so the head of the primary key is
-- the oldest and no index on created_at is needed; a head row newer than
-- the cutoff makes the batch short and ends the round.
DELETE FROM dispatch_audit_log d
WHERE d.audit_id = ANY(ARRAY(
    SELECT a.audit_id FROM dispatch_audit_log a ORDER BY a.audit_id LIMIT @max_rows
)) AND d.created_at < @before;
