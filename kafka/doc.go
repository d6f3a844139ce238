// Package kafka is paydispatch's Kafka adapter: an intake that takes
// payment requests from a topic, a sender that publishes payment events
// to a topic through the outbox, and an in-process Kafka-protocol cluster
// (franz-go's kfake) that stands in for a broker when none is configured.
// docs/kafka.md is the user's side: settings, the event schema, delivery
// guarantees and kcat examples.
//
// # Intake
//
// Intake consumes a topic in a consumer group. A record's value is the
// JSON POST /v1/payments takes; its tenant is the value's tenantId or the
// record's tenant-id header. Records are taken in chunks (up to
// ChunkRecords, or what arrived within ChunkWait) through the bulk file's
// intake and set-based path (payment.Service.Take): a chunk of thousands of
// records is one transaction per 10,000 payments and one Phase A workflow
// per 2,500, never a workflow per record.
//
// Offsets are committed only after the chunk's payments are stored (the
// guarantee a 202 gives) and its bad records are on the dead-letter
// topic; until then the consumer holds its partitions (no rebalance
// between a poll and its commit). A consumer that dies re-reads what it
// had not committed, and a payment's id makes the second reading store
// nothing: each record becomes one payment. The records a chunk carries
// twice (a producer's retry) count once.
//
// A record that cannot become a payment — unreadable JSON, an invalid
// payment, no tenant or one the ledger does not know, an id its tenant
// used for a different payment — goes to the dead-letter topic with the
// reason and its origin in headers, keyed by its origin (topic, partition,
// offset), and never stops its partition. After a crash a dead letter may
// be written twice: deduplicate on the key. The paydispatch-* headers of
// a dead letter are the intake's alone: the record's own are dropped.
//
// No record stops a partition, nor any other. One over MaxRecordBytes
// (checked against the producer's limit, and lowered to the brokers' on
// the dead-letter topic) is refused unread and goes by reference: an
// empty value, its origin, size and SHA-256 in headers. A chunk that
// keeps failing for something other than an outage is split in halves
// until the record at fault fails alone, and goes by reference too. An
// outage (an error of the kinds a dependency out of reach gives, or any
// while Healthy fails) holds the chunk, retried whole: a valid payment is
// never dead-lettered for one. Run returns soon after its context ends
// whatever the brokers do: leaving the group and closing are bounded.
//
// Backpressure: while the dispatch queue holds more READY items of the
// payments' type than ReadyCeiling, the intake pauses fetching and
// resumes when the depth falls below it.
//
// # Events
//
// EventSender is the outbox's sender for payment.EventRailType: each
// status change's event, enqueued by the database in the transaction of
// the change (payment.Store.StartEventStream), is produced to the events
// topic keyed tenant/paymentId. The outbox hands a lane's consecutive
// events to SendBatch, which produces them in one call (outbox.BatchSender:
// a lane's next batch waits for this one's outcome), and a payment's events
// stay in one lane and share a partition, so a payment's events reach its
// partition in order. A produce that fails is
// Unknown to the outbox: it is sent again later and never dead-lettered,
// so a consumer may see an event twice (deduplicate on its id) but never
// misses one.
package kafka
