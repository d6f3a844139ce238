// Package outboxtest holds test fixtures for the outbox, shared by the
// tests of package outbox and of the command that runs it, as River's
// rivertest is.
//
// KillScenario is the outbox's crash test, written once: relayer
// processes share one database and a rail outside them; 10,000
// instructions over strict and throughput participants are enqueued while
// they run; the relayer holding the most claims is killed with SIGKILL
// once a third has been delivered; and when everything has drained, the
// rail has every instruction exactly once, each strict participant's in
// sequence, the archive one DISPATCHED attempt per instruction, every
// claim the dead relayer held was taken back by the reaper, and there is
// no dead letter. A test says how a relayer process starts (the outbox's
// re-executes its own binary; the command's runs `paydispatch relay`),
// what an instruction looks like to its rail, and how the rail's record of
// deliveries is read (Ledger).
//
// The package imports no adapter: the test hands it the database's pool,
// so it stays inside the outbox's layer (internal/layering).
package outboxtest
