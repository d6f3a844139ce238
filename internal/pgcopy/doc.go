// Package pgcopy writes rows in PostgreSQL's binary COPY format, a value
// at a time by its column's type, and COPYs them in a transaction: for
// the hot bulk inserts (a Phase A chunk's payments) where pgx's CopyFrom,
// which looks up an encode plan for every value, cost a tenth of the
// process's CPU.
package pgcopy
