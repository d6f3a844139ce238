-- A tenant's own rate-limit config is pacing's data: the table takes the
-- package's name, and its config column the name pacing_config uses.

-- +goose Up
ALTER TABLE tenant_pacing RENAME TO pacing_tenant_config;
ALTER TABLE pacing_tenant_config RENAME COLUMN pacing_config TO config_name;
ALTER TABLE pacing_tenant_config RENAME CONSTRAINT tenant_pacing_pkey TO pacing_tenant_config_pkey;

-- +goose Down
ALTER TABLE pacing_tenant_config RENAME CONSTRAINT pacing_tenant_config_pkey TO tenant_pacing_pkey;
ALTER TABLE pacing_tenant_config RENAME COLUMN config_name TO pacing_config;
ALTER TABLE pacing_tenant_config RENAME TO tenant_pacing;
