// Package temporal is paydispatch's Temporal adapter: it connects a client
// to TEMPORAL_ADDRESS (with TLS when configured), or, when no address is
// given, starts Temporal's own server in-process (package devserver) with
// its SQLite file in the data directory and connects to that.
package temporal
