package kafka_test

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/paydispatch/paydispatch/kafka"
	"github.com/paydispatch/paydispatch/outbox"
)

// An event the outbox hands to the sender is produced keyed by its
// payment, with its id in a header, to a topic any Kafka client reads: here
// on the embedded cluster.
func ExampleEventSender() {
	cluster, err := kafka.StartEmbedded(0, 1, "payment-events")
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	sender, err := kafka.NewEventSender(cluster.Brokers(), "payment-events", "PAYMENT_EVENT")
	if err != nil {
		panic(err)
	}
	defer sender.Close()

	event := `{"id":"5f0c6f8e-0a51-4c3e-9d1b-2f7f4b6a9e01","type":"payment.delivered","version":1,` +
		`"createdAt":"2026-11-27T16:00:01.000000Z","tenantId":"acme","data":{"paymentId":"inv-1001","status":"DELIVERED","previousStatus":"PROCESSING"}}`
	res := sender.Send(context.Background(), outbox.Message{IdempotencyKey: "5f0c6f8e-0a51-4c3e-9d1b-2f7f4b6a9e01", RailType: "PAYMENT_EVENT", Payload: []byte(event)})
	fmt.Println(res.Outcome, res.Reference)

	consumer, err := kgo.NewClient(kgo.SeedBrokers(cluster.Brokers()...), kgo.ConsumeTopics("payment-events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		panic(err)
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range consumer.PollFetches(ctx).Records() {
		fmt.Printf("key %s, %s=%s\n", r.Key, r.Headers[0].Key, r.Headers[0].Value)
	}
	// Output:
	// DELIVERED payment-events/0/0
	// key acme/inv-1001, event-id=5f0c6f8e-0a51-4c3e-9d1b-2f7f4b6a9e01
}
