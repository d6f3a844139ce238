package calendar

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/calendar/internal/dbsqlc"
)

// DBTX is what the store needs of a pool or a transaction: the admin API
// commits a calendar's change and its audit entry together.
type DBTX interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Put validates c and creates or replaces the operator's calendar of its
// name, returning it as stored. A built-in's name, in any case, is
// ErrBuiltIn; a calendar that fails Validate is a *field.Invalid.
func Put(ctx context.Context, db DBTX, c Calendar) (Calendar, error) {
	if reserved(c.Name) {
		return Calendar{}, fmt.Errorf("calendar %s: %w: it cannot be changed", c.Name, ErrBuiltIn)
	}
	c.Weekend, c.ClosingDays = slices.Clone(c.Weekend), slices.Clone(c.ClosingDays) // Validate sorts them: not the caller's
	if err := c.Validate(); err != nil {
		return Calendar{}, err
	}
	weekend := make([]int16, len(c.Weekend))
	for i, w := range c.Weekend {
		weekend[i] = int16(w)
	}
	days := make([]time.Time, len(c.ClosingDays))
	for i, d := range c.ClosingDays {
		days[i] = d.utc()
	}
	row, err := dbsqlc.New(db).PutCalendar(ctx, dbsqlc.PutCalendarParams{Name: c.Name, Weekend: weekend, ClosingDays: days})
	if err != nil {
		return Calendar{}, fmt.Errorf("calendar %s: put: %w", c.Name, err)
	}
	return fromRow(row), nil
}

// Get is the calendar of that name: a built-in from code, without the
// database, else the operator's (ErrNotFound when there is none).
func Get(ctx context.Context, db DBTX, name string) (Calendar, error) {
	if c, ok := BuiltIn(name); ok {
		return c, nil
	}
	row, err := dbsqlc.New(db).GetCalendar(ctx, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return Calendar{}, fmt.Errorf("calendar %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Calendar{}, fmt.Errorf("calendar %q: get: %w", name, err)
	}
	return fromRow(row), nil
}

// List is every calendar: the built-ins first, then the operators' by
// name. Operators define a handful, so it is not paged.
func List(ctx context.Context, db DBTX) ([]Calendar, error) {
	rows, err := dbsqlc.New(db).ListCalendars(ctx)
	if err != nil {
		return nil, fmt.Errorf("calendar: list: %w", err)
	}
	out := BuiltIns()
	for _, r := range rows {
		out = append(out, fromRow(r))
	}
	return out, nil
}

// fromRow puts the closing days in order whatever wrote the row, so that
// Open's search is right even for a row changed by hand.
func fromRow(r dbsqlc.Calendar) Calendar {
	c := Calendar{Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	c.Weekend = make([]time.Weekday, len(r.Weekend))
	for i, w := range r.Weekend {
		c.Weekend[i] = time.Weekday(w)
	}
	c.ClosingDays = make([]Date, len(r.ClosingDays))
	for i, t := range r.ClosingDays {
		c.ClosingDays[i] = DateOf(t, time.UTC)
	}
	c.normalize()
	return c
}
