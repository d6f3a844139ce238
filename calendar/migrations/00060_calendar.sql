-- Business-day calendars that operators define (package calendar). The
-- built-in calendars (TARGET2, WEEKDAYS) are computed in code and have no
-- row.
--
-- A calendar is one row, its closing days a date[]: it is always read and
-- replaced whole (a rail looks the whole calendar up, an operator puts a
-- new version), 10,000 days are at most 40 kB, and no query asks which
-- calendars close on a given day. A child table would cost a delete and up
-- to 10,000 inserts per change and a second read per lookup.

-- +goose Up
CREATE TABLE calendars (
    name          text        PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.:-]{1,100}$'),
    -- Days of the week closed every week, as Go's time.Weekday and
    -- PostgreSQL's extract(dow): 0 is Sunday. At least one day stays open.
    weekend       smallint[]  NOT NULL DEFAULT '{}'
                  CHECK (weekend <@ '{0,1,2,3,4,5,6}' AND cardinality(weekend) <= 6),
    -- Sorted, without duplicates (package calendar writes them so).
    closing_days  date[]      NOT NULL DEFAULT '{}'
                  CHECK (cardinality(closing_days) <= 10000
                         AND array_position(closing_days, NULL) IS NULL
                         AND '1970-01-01' <= ALL (closing_days)
                         AND '9999-12-31' >= ALL (closing_days)),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE calendars;
