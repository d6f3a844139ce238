package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/payment"
)

// runKafkaIntake runs the Kafka intake in its own process: as many as the
// topic's partitions, in one consumer group.
func runKafkaIntake(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "kafka-intake", "[flags]",
		"Consumes payment requests (the JSON of POST /v1/payments) from PAYDISPATCH_KAFKA_TOPIC in the consumer group\n"+
			"PAYDISPATCH_KAFKA_GROUP and takes them in as a bulk file's payments, chunk by chunk, until SIGINT or SIGTERM.\n"+
			"A record's offset is committed once its payment is stored; a record that cannot become a payment goes to the\n"+
			"dead-letter topic with the reason in its headers. It needs the shared database, a Temporal cluster others share\n"+
			"(TEMPORAL_ADDRESS) and PAYDISPATCH_KAFKA_BROKERS. docs/kafka.md has the details.")
	var (
		db config.Database
		tc config.Temporal
		kc config.Kafka
		mt config.Metrics
		lg config.Log
		// shutdown bounds the whole stop; the intake's own leaving of its
		// group and closing take at most 5 s of it.
		shutdown time.Duration
	)
	settings := append(config.DatabaseSettings(&db), config.TemporalSettings(&tc)...)
	settings = append(settings, config.KafkaSettings(&kc)...)
	settings = append(settings, config.MetricsSettings(&mt)...)
	settings = append(settings, config.ShutdownSetting(&shutdown))
	if err := parse(config.NewSet(fs, env.getenv, append(settings, config.LogSettings(&lg)...)...), args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: kafka-intake takes only flags", fs.Arg(0))}
	}
	if !kc.On() {
		return usageError{errors.New("kafka-intake needs PAYDISPATCH_KAFKA_BROKERS (or --kafka-brokers): host:port seeds, e.g. 127.0.0.1:9092")}
	}
	if tc.Address == "" {
		return usageError{errors.New("kafka-intake needs TEMPORAL_ADDRESS (or --temporal-address): the Temporal cluster whose init workers run Phase A, e.g. 127.0.0.1:7233 of 'paydispatch serve' or 'paydispatch temporal'")}
	}
	log := newLogger(env, lg)
	var started parts
	// A start that failed, or was cut short by SIGTERM; nothing once
	// stopBy ran.
	defer func() { _ = started.stopWithin(shutdown) }()
	ln, err := listenMetrics(mt)
	if err != nil {
		return err
	}
	if ln != nil {
		started.add("the metrics listener", func() { ln.Close() })
	}
	store, tconn, err := startRole(ctx, env, "kafka-intake", db, tc, log, &started)
	if err != nil {
		return err
	}
	brokers, stopCluster, err := app.KafkaBrokers(kc, log)
	if err != nil {
		return err
	}
	started.add("the embedded Kafka cluster", stopCluster)

	reg := processRegistry()
	stop, err := app.StartKafkaIntake(ctx, store, app.PaymentService(store, tconn, payment.ServiceConfig{}), kc, brokers, reg, log)
	if err != nil {
		return err
	}
	started.add("the Kafka intake", stop)
	if ln != nil {
		stopMetrics, _ := serveMetrics(ln, reg, store)
		started.add("the metrics server", stopMetrics)
		log.Info("kafka intake metrics on http://"+ln.Addr().String()+"/metrics", "metrics_addr", ln.Addr().String())
	}
	log.Info("kafka intake running", "brokers", brokers, "topic", kc.Topic, "group", kc.Group, "version", buildVersion())
	<-ctx.Done()
	log.Info("kafka intake stopping", "shutdown_timeout", shutdown)
	return started.stopBy(time.Now().Add(shutdown))
}
