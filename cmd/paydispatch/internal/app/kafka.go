package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/kafka"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
)

// KafkaBrokers are the brokers the settings name, or, for "embedded", an
// in-process cluster's on loopback with the intake's topic (8
// partitions) and the events topic created: stop closes it.
func KafkaBrokers(k config.Kafka, log *slog.Logger) (brokers []string, stop func(), err error) {
	if !k.Embedded {
		return k.Brokers, func() {}, nil
	}
	topics := []string{k.Topic}
	if k.Events() {
		topics = append(topics, k.EventsTopic)
	}
	c, err := kafka.StartEmbedded(k.EmbeddedPort, 8, topics...)
	if err != nil {
		return nil, nil, err
	}
	log.Info("Kafka-protocol cluster embedded (in memory: for tests and the demo); set PAYDISPATCH_KAFKA_BROKERS for a real one",
		"brokers", c.Brokers(), "topics", topics)
	return c.Brokers(), c.Close, nil
}

// EventStream applies the events setting to the database: a topic turns
// the payment event stream on (with its lanes), "off" turns it off, and
// "" leaves it as it is. It returns the relayer's sender for the stream
// (nil when this process publishes none).
func EventStream(ctx context.Context, store *postgres.DB, k config.Kafka, brokers []string, log *slog.Logger) (*kafka.EventSender, error) {
	ps := payment.NewStore(store.Pool)
	switch {
	case k.EventsTopic == config.EventsOff:
		on, err := ps.StopEventStream(ctx)
		if err == nil && on {
			log.Info("payment event stream turned off; events already enqueued still go out where a relayer publishes them")
		}
		return nil, err
	case !k.Events():
		return nil, nil
	}
	if err := ps.StartEventStream(ctx, k.EventLanes); err != nil {
		return nil, err
	}
	s, err := kafka.NewEventSender(brokers, k.EventsTopic, payment.EventRailType)
	if err != nil {
		return nil, err
	}
	log.Info("payment events published to Kafka", "topic", k.EventsTopic, "lanes", k.EventLanes)
	return s, nil
}

// StartKafkaIntake runs the Kafka intake of payment requests into
// payments until stop is called. stop returns soon after, whatever the
// brokers do: the intake leaves its group and closes within a bound
// (kafka.Intake.Run).
func StartKafkaIntake(ctx context.Context, store *postgres.DB, payments *payment.Service, k config.Kafka, brokers []string,
	reg prometheus.Registerer, log *slog.Logger) (stop func(), err error) {
	cfg := kafka.IntakeConfig{
		Brokers: brokers, Topic: k.Topic, Group: k.Group, DeadLetterTopic: k.DeadLetters, ChunkRecords: k.Chunk,
		MaxRecordBytes: k.MaxRecordBytes, ReadyCeiling: int64(k.ReadyCeiling), Payments: payments, Logger: log,
		ReadyDepth: func(ctx context.Context) (int64, error) {
			d, err := queue.New(store.Pool).Depth(ctx, payment.ItemType)
			return d.ByStatus[queue.StatusReady], err
		},
		// A chunk that fails while either does not answer is held, never
		// blamed on its records.
		Healthy: func(ctx context.Context) error {
			if err := store.Pool.Ping(ctx); err != nil {
				return fmt.Errorf("database: %w", err)
			}
			if payments.Temporal() != nil {
				if _, err := payments.Temporal().CheckHealth(ctx, nil); err != nil {
					return fmt.Errorf("temporal: %w", err)
				}
			}
			return nil
		},
	}
	if reg != nil {
		cfg.Metrics = kafka.NewMetrics(reg)
	}
	if len(k.Tenants) > 0 {
		allowed := make(map[string]bool, len(k.Tenants))
		for _, t := range k.Tenants {
			allowed[t] = true
		}
		cfg.KnownTenants = func(context.Context, []string) (map[string]bool, error) { return allowed, nil }
	} else {
		cfg.KnownTenants = func(ctx context.Context, ts []string) (map[string]bool, error) {
			return account.Tenants(ctx, store.Pool, ts)
		}
	}
	in, err := kafka.NewIntake(cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka intake: %w", err)
	}
	return runUntilStopped(ctx, in.Run, log, "kafka intake"), nil
}
