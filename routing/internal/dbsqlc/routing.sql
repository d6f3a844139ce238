-- name: PutRail :one
-- Creates a rail or changes it; a change bumps its version.
INSERT INTO rail AS r (rail_name, rail_type, endpoint, pacing_config, time_zone, opens_at, cutoff_at, calendar_name, active)
VALUES (@rail_name, @rail_type, @endpoint, @pacing_config, @time_zone, @opens_at, sqlc.narg('cutoff_at'), @calendar_name, @active)
ON CONFLICT (rail_name) DO UPDATE
SET rail_type = excluded.rail_type, endpoint = excluded.endpoint, pacing_config = excluded.pacing_config,
    time_zone = excluded.time_zone, opens_at = excluded.opens_at, cutoff_at = excluded.cutoff_at,
    calendar_name = excluded.calendar_name, active = excluded.active,
    version = r.version + 1, updated_at = now()
RETURNING *;

-- name: GetRail :one
SELECT * FROM rail WHERE rail_name = @rail_name;

-- name: ListRails :many
SELECT * FROM rail ORDER BY rail_name COLLATE "C";

-- name: RailsSharingConfig :many
-- The other active rails pacing by the config a rail names ('' : the
-- default): two rails never share one limit.
SELECT rail_name FROM rail
WHERE active AND pacing_config = @pacing_config AND rail_name <> @rail_name
ORDER BY rail_name COLLATE "C";

-- name: PacingConfigExists :one
SELECT EXISTS (SELECT 1 FROM pacing_config WHERE config_name = @config_name)::bool;

-- name: ListRules :many
SELECT * FROM routing_rule ORDER BY position;

-- name: DeleteRules :exec
DELETE FROM routing_rule;

-- name: InsertRules :exec
INSERT INTO routing_rule (position, tenant_id, currency, min_amount, max_amount, source, rail_name)
SELECT r.position, r.tenant_id, r.currency, r.min_amount, r.max_amount, r.source, r.rail_name
FROM jsonb_to_recordset(@rules::jsonb) AS r (position integer, tenant_id text, currency text,
                                             min_amount numeric, max_amount numeric, source text, rail_name text);

-- name: RulesNamingInactive :many
-- Rules naming a rail that is missing or inactive (the caller's check).
SELECT DISTINCT x.rail_name::text FROM routing_rule x
WHERE NOT EXISTS (SELECT 1 FROM rail r WHERE r.rail_name = x.rail_name AND r.active);

-- name: SetTenantCutoffRule :one
INSERT INTO tenant_cutoff_rule (tenant_id, cutoff_rule) VALUES (@tenant_id, @cutoff_rule)
ON CONFLICT (tenant_id) DO UPDATE SET cutoff_rule = excluded.cutoff_rule, updated_at = now()
RETURNING *;

-- name: ListTenantCutoffRules :many
SELECT * FROM tenant_cutoff_rule ORDER BY tenant_id COLLATE "C";
