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

// Send produces the event and waits for the brokers' acknowledgement.
// Anything short of it is Unknown, so the outbox sends it again later
// (after an inquiry, which cannot ask Kafka and answers NotReceived) and
// never gives up: consumers may see an event twice, never miss it. Only
// a record the broker can never take is Terminal.
func (s *EventSender) Send(ctx context.Context, m outbox.Message) outbox.Result {
	key, typ, err := eventKey(m.Payload)
	if err != nil {
		return outbox.Result{Outcome: outbox.Terminal, Code: outbox.CodeInvalidPayload, Message: err.Error()}
	}
	rec := &kgo.Record{Topic: s.topic, Key: []byte(key), Value: m.Payload, Headers: []kgo.RecordHeader{
		{Key: HeaderEventID, Value: []byte(m.IdempotencyKey)},
		{Key: HeaderEventType, Value: []byte(typ)},
	}}
	if m.TraceParent != "" {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: HeaderTraceParent, Value: []byte(m.TraceParent)})
	}
	r, err := s.client.ProduceSync(ctx, rec).First()
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
