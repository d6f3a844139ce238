-- The webhooks' functions: their current source, applied after the
-- migrations and again whenever this file changes (see
-- pacing/migrations/functions.sql for the rule).

-- webhook_publish writes one delivery per event and endpoint of the
-- event's tenant that takes its type, in the caller's transaction: an
-- event is delivered if and only if what produced it commits. The events
-- are given as arrays of their columns; payloads[i] must carry the
-- event's id as "id". Returns the number of deliveries written.
CREATE OR REPLACE FUNCTION webhook_publish(tenant_ids text[], subjects text[], event_types text[], payloads jsonb[])
RETURNS integer
LANGUAGE sql AS $$
    WITH written AS (
        INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload)
        SELECT ep.endpoint_id, e.tenant_id, e.subject, (e.payload->>'id')::uuid, e.event_type, e.payload
        FROM unnest(tenant_ids, subjects, event_types, payloads) WITH ORDINALITY AS e(tenant_id, subject, event_type, payload, n)
        JOIN webhook_endpoints ep
          ON ep.tenant_id = e.tenant_id
         AND (cardinality(ep.event_types) = 0 OR e.event_type = ANY(ep.event_types))
        -- In the events' order: a subject's events of one statement (a
        -- payment scheduled, then rescheduled) are numbered as given.
        ORDER BY e.n, ep.endpoint_id
        RETURNING 1)
    SELECT count(*)::integer FROM written
$$;
