// Package pgcopy writes values in PostgreSQL's binary format, a value at
// a time by its type, for the hot bulk paths where pgx's encoding, which
// looks up an encode plan for every value, cost a tenth of the process's
// CPU: rows for a binary COPY in a transaction (a Phase A chunk's
// payments), and array parameters of one statement (a bulk file's staged
// chunk).
package pgcopy
