-- name: PutCalendar :one
-- Creates the calendar or replaces its weekend and closing days.
INSERT INTO calendars (name, weekend, closing_days)
VALUES (@name, @weekend::smallint[], @closing_days::date[])
ON CONFLICT (name) DO UPDATE
SET weekend = excluded.weekend, closing_days = excluded.closing_days, updated_at = now()
RETURNING *;

-- name: GetCalendar :one
SELECT * FROM calendars WHERE name = @name;

-- name: ListCalendars :many
-- By name in byte order, whatever the database's collation.
SELECT * FROM calendars ORDER BY name COLLATE "C";
