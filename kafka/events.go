package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/paydispatch/paydispatch/outbox"
)

// Header names of a published event.
const (
	HeaderEventID     = "event-id"
	HeaderEventType   = "event-type"
	HeaderTraceParent = "traceparent"
)

// EventSender publishes the outbox's messages of one rail type to a
// topic: a rail (rail.Rail) whose far end is Kafka. It is for streams
// whose payload is a payment event (docs/schemas/payment-event.v1.json):
// the record's key is "<tenantId>/<data.paymentId>", its value the event.
type EventSender struct {
	client   *kgo.Client
	topic    string
	railType string
}

// NewEventSender returns a sender producing to topic on brokers, for the
// outbox's rail type railType. Records are acknowledged by all in-sync
// replicas, and the producer is idempotent: a retry inside one send does
// not duplicate.
func NewEventSender(brokers []string, topic, railType string) (*EventSender, error) {
	if topic == "" || railType == "" {
		return nil, errors.New("kafka: an event sender needs a topic and a rail type")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation())
	if err != nil {
		return nil, fmt.Errorf("kafka: event producer: %w", err)
	}
	return &EventSender{client: cl, topic: topic, railType: railType}, nil
}

// Type is the rail type the sender serves.
func (s *EventSender) Type() string { return s.railType }

// Topic is where events go.
func (s *EventSender) Topic() string { return s.topic }

// Close flushes nothing (every send waited for its acknowledgement) and
// closes the connections.
func (s *EventSender) Close() { s.client.Close() }

// eventKey is what an event record is keyed by: its payment, so a
// payment's events share a partition.
func eventKey(payload []byte) (key string, eventType string, err error) {
	var ev struct {
		Type     string `json:"type"`
		TenantID string `json:"tenantId"`
		Data     struct {
			PaymentID string `json:"paymentId"`
		} `json:"data"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		return "", "", fmt.Errorf("not a payment event: %w", err)
	}
	if ev.TenantID == "" || ev.Data.PaymentID == "" {
		return "", "", errors.New("not a payment event: no tenantId or data.paymentId")
	}
	return ev.TenantID + "/" + ev.Data.PaymentID, ev.Type, nil
}

// Validate refuses a payload that is not a payment event: it is never
// sent (a dead letter, INVALID_PAYLOAD).
func (s *EventSender) Validate(m outbox.Message) error {
	_, _, err := eventKey(m.Payload)
	return err
}

// Batches says the sender's rail type goes in batches: a lane's
// consecutive events are produced in one call (SendBatch).
func (s *EventSender) Batches(railType string) bool { return railType == s.railType }

// SendBatch produces a lane's consecutive events in one call and waits
// for every acknowledgement; each event's result is as Send's. The
// producer is idempotent, so the records of one partition (one payment's
// events share one) are written in the order given, and a lane's batch
// (at most the outbox's LaneBatchSize, 50 events of a few hundred bytes)
// stays far below a record batch's maximum: a partition's records of one
// call go in one record batch, which the broker takes or refuses whole,
// so a later event of a payment is never written ahead of an earlier one
// that failed. An event after a failed one in the lane may still have
// been written (another payment's, on another partition): the outbox
// sends it again and consumers deduplicate by the event-id header.
func (s *EventSender) SendBatch(ctx context.Context, ms []outbox.Message) []outbox.Result {
	res := make([]outbox.Result, len(ms))
	recs := make([]*kgo.Record, 0, len(ms))
	at := make(map[*kgo.Record]int, len(ms))
	for i, m := range ms {
		rec, err := s.record(m)
		if err != nil {
			res[i] = outbox.Result{Outcome: outbox.Terminal, Code: outbox.CodeInvalidPayload, Message: err.Error()}
			continue
		}
		at[rec] = i
		recs = append(recs, rec)
	}
	for _, pr := range s.client.ProduceSync(ctx, recs...) {
		i, ok := at[pr.Record]
		if !ok {
			continue
		}
		res[i] = s.result(pr.Record, pr.Err)
		delete(at, pr.Record)
	}
	for _, i := range at {
		res[i] = outbox.Result{Outcome: outbox.Unknown, Code: "KAFKA_UNACKNOWLEDGED", Message: "no produce result"}
	}
	return res
}

// Send produces the event and waits for the brokers' acknowledgement.
// Anything short of it is Unknown, so the outbox sends it again later
// (after an inquiry, which cannot ask Kafka and answers NotReceived) and
// never gives up: consumers may see an event twice, never miss it. Only
// a record the broker can never take is Terminal.
func (s *EventSender) Send(ctx context.Context, m outbox.Message) outbox.Result {
	rec, err := s.record(m)
	if err != nil {
		return outbox.Result{Outcome: outbox.Terminal, Code: outbox.CodeInvalidPayload, Message: err.Error()}
	}
	r, err := s.client.ProduceSync(ctx, rec).First()
	return s.result(r, err)
}

// record is m's Kafka record: keyed by its payment, with its event id,
// type and trace context as headers.
func (s *EventSender) record(m outbox.Message) (*kgo.Record, error) {
	key, typ, err := eventKey(m.Payload)
	if err != nil {
		return nil, err
	}
	rec := &kgo.Record{Topic: s.topic, Key: []byte(key), Value: m.Payload, Headers: []kgo.RecordHeader{
		{Key: HeaderEventID, Value: []byte(m.IdempotencyKey)},
		{Key: HeaderEventType, Value: []byte(typ)},
	}}
	if m.TraceParent != "" {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: HeaderTraceParent, Value: []byte(m.TraceParent)})
	}
	return rec, nil
}

// result classifies a produce's answer: acknowledged is Delivered (the
// reference is topic/partition/offset), a record the broker can never
// take Terminal, anything else Unknown.
func (s *EventSender) result(r *kgo.Record, err error) outbox.Result {
	switch {
	case err == nil:
		return outbox.Result{Outcome: outbox.Delivered, Reference: s.topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)}
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge), errors.Is(err, kerr.InvalidRecord):
		return outbox.Result{Outcome: outbox.Terminal, Code: "KAFKA_REFUSED", Message: err.Error()}
	default:
		return outbox.Result{Outcome: outbox.Unknown, Code: "KAFKA_UNACKNOWLEDGED", Message: err.Error()}
	}
}

// Inquire cannot ask Kafka whether a record arrived: it answers
// NotReceived, so an unacknowledged event is sent again (at least once).
func (s *EventSender) Inquire(context.Context, outbox.Message) outbox.Result {
	return outbox.Result{Outcome: outbox.NotReceived}
}
