// Package pgserver runs a private PostgreSQL server from the server binaries
// installed on the machine: it finds them, initializes a cluster on first
// use, starts it listening only on a unix socket, and stops it cleanly.
//
// It is what lets paydispatch run with no DATABASE_URL, and what the test
// harness uses to give every test run its own throw-away server. It is not a
// substitute for PostgreSQL: it runs the real server binaries.
//
// PostgreSQL refuses to run as root; when the caller is root the server runs
// as an unprivileged user (postgres, else nobody) that owns the data files.
package pgserver
