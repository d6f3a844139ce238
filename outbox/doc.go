// Package outbox is the money-safe outbox between an executed item and the
// rail that must receive it: a gap-free sequence per participant, a hot
// pending table, an append-only attempts archive, a relayer woken by
// NOTIFY with a fallback poll, and a reaper for attempts whose relayer
// died mid-dispatch.
//
// The outbox is a framework: it knows participants, rails, idempotency
// keys and opaque JSON payloads, never payments. A Sender (package rail)
// turns a Message into a call to a rail and classifies the answer; Hooks
// let the domain react to a final outcome in the same transaction that
// records it.
package outbox
