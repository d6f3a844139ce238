package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/kafka"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	ptemporal "github.com/paydispatch/paydispatch/temporal"
)

// KafkaOptions configure the Kafka intake benchmark.
type KafkaOptions struct {
	Env

	Records    int
	Partitions int
	Events     int // payments taken in with the event stream on, for its latency
	Lanes      int // the event stream's lanes
	ChunkSize  int
	MaxWait    time.Duration
}

// KafkaSettings binds the benchmark's flags.
func KafkaSettings(o *KafkaOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("records", 200_000, 100, 2_000_000, "payment records on the intake topic (and payments in the HTTP baseline's file)", &o.Records),
		config.Int("partitions", 8, 1, 256, "the intake topic's partitions", &o.Partitions),
		config.Int("events", 20_000, 0, 1_000_000, "payments then taken in with the event stream on, whose SCHEDULED events' latency is measured (0: skip)", &o.Events),
		config.Int("lanes", payment.DefaultEventLanes, 1, 1024, "the event stream's ordered lanes", &o.Lanes),
		config.Int("chunk", kafka.DefaultChunkRecords, 1, 100_000, "records the intake takes in one chunk", &o.ChunkSize),
		config.Duration("max-wait", "30m", time.Minute, "give up on a phase after this long", &o.MaxWait),
	}
}

// RunKafka measures the Kafka intake against the HTTP bulk path in one
// run, each on a fresh private PostgreSQL and embedded Temporal with the
// init worker (so neither finds the other's rows), beside an embedded
// Kafka-protocol cluster: (1) one JSON-lines file of Records payments
// POSTed to serve's handler, POST → the last payment SCHEDULED; (2)
// Records payment records on a topic of Partitions partitions, the
// intake's first chunk → the last payment SCHEDULED; (3) on the second
// stack, with the event stream on and a relayer publishing it, Events
// more records, and each SCHEDULED event's latency from the status
// change to a consumer of the events topic.
func RunKafka(ctx context.Context, o KafkaOptions) error {
	fmt.Fprintf(o.Out, "paydispatch bench kafka: %d CPUs, %s; embedded PostgreSQL, Temporal and Kafka-protocol cluster; %s payments each way, topic of %d partitions, chunks of %d\n",
		runtime.NumCPU(), memTotal(), thousands(o.Records), o.Partitions, o.ChunkSize)
	// Far enough ahead that nothing executes; the dispatcher does not run.
	instant := time.Now().Add(2 * time.Hour).Truncate(time.Hour)
	cpuAtStart, _ := readCPU()
	httpRate, err := kafkaBaseline(ctx, o, instant)
	if err != nil {
		return err
	}

	stack, payments, stop, err := intakeStack(ctx, o)
	if err != nil {
		return err
	}
	defer stop()
	db := stack.db
	cluster, err := kafka.StartEmbedded(0, int32(o.Partitions), "requests", "events")
	if err != nil {
		return err
	}
	defer cluster.Close()
	if err := produceRequests(ctx, cluster.Brokers(), "requests", "kb", o.Records, instant); err != nil {
		return err
	}
	var firstPoll atomic.Int64
	in, err := kafka.NewIntake(kafka.IntakeConfig{
		Brokers: cluster.Brokers(), Topic: "requests", Group: "bench", ChunkRecords: o.ChunkSize, Logger: o.Logger,
		Payments: firstPollClock{Payments: payments, at: &firstPoll},
		KnownTenants: func(ctx context.Context, ts []string) (map[string]bool, error) {
			return account.Tenants(ctx, db.Pool, ts)
		},
	})
	if err != nil {
		return err
	}
	ictx, stopIntake := context.WithCancel(ctx)
	intakeDone := make(chan struct{})
	go func() { defer close(intakeDone); _ = in.Run(ictx) }()
	defer func() { stopIntake(); <-intakeDone }()
	began := time.Now()
	if err := waitScheduled(ctx, db, o.Records, began.Add(o.MaxWait)); err != nil {
		return fmt.Errorf("the Kafka records: %w", err)
	}
	first := time.Unix(0, firstPoll.Load())
	if firstPoll.Load() == 0 {
		first = began
	}
	kafkaTook := time.Since(first)
	kafkaRate := float64(o.Records) / kafkaTook.Seconds()
	fmt.Fprintf(o.Out, "Kafka intake: the first chunk read → the last of %s records SCHEDULED: %.1f s, %s payments/s (client started → first chunk: %.1f s)\n",
		thousands(o.Records), kafkaTook.Seconds(), thousands(int(kafkaRate)), first.Sub(began).Seconds())
	fmt.Fprintf(o.Out, "ratio Kafka / HTTP bulk: %.2f (the aim: at least 1)\n", quotient(kafkaRate, httpRate))
	o.Figures.add(Figure{What: fmt.Sprintf("%s Kafka records → SCHEDULED", thousands(o.Records)), Value: kafkaRate, Unit: "payments/s",
		Baseline: "the same as one HTTP bulk file", BaseVal: httpRate, BaseUnit: "payments/s"})

	if o.Events > 0 {
		if err := eventLatency(ctx, o, db, cluster.Brokers(), instant); err != nil {
			return err
		}
	}
	if stolen, ok := stolenSince(cpuAtStart); ok {
		fmt.Fprintf(o.Out, "CPU time stolen by the hypervisor during the run: %.1f%%\n", stolen*100)
	}
	return nil
}

// intakeStack is a fresh private stack paced at 100/s with the init
// worker running, and its payment service; stop closes it.
func intakeStack(ctx context.Context, o KafkaOptions) (*privateStack, *payment.Service, func(), error) {
	stack, err := openPrivateStack(ctx, "kafka", o.PGBinDir, o.Logger, ptemporal.Options{}, pacing.Limit{MaxPerWindow: 100, Window: time.Second}, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := queue.New(stack.db.Pool).UpdateConfig(ctx, payment.ItemType, map[string]string{"pacing_config": "payments"}); err != nil {
		stack.close()
		return nil, nil, nil, err
	}
	stopInit, err := app.StartInitWorker(stack.db, stack.tc, o.Logger, app.Options{})
	if err != nil {
		stack.close()
		return nil, nil, nil, err
	}
	return stack, app.PaymentService(stack.db, stack.tc, payment.ServiceConfig{}), func() { stopInit(); stack.close() }, nil
}

// kafkaBaseline is the HTTP bulk path's rate on a stack of its own: one
// JSON-lines file of Records payments POSTed, to the last SCHEDULED.
func kafkaBaseline(ctx context.Context, o KafkaOptions, instant time.Time) (float64, error) {
	stack, payments, stop, err := intakeStack(ctx, o)
	if err != nil {
		return 0, err
	}
	defer stop()
	router, err := httpapi.NewRouter(httpapi.RouterConfig{Log: o.Logger, MaxBody: 1 << 20, MaxBulkBody: 2 << 30, Services: httpapi.Services{Payments: payments}})
	if err != nil {
		return 0, err
	}
	srv := httptest.NewServer(router)
	defer srv.Close()
	api, err := benchClient(srv.URL)
	if err != nil {
		return 0, err
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for i := range o.Records {
		if err := enc.Encode(benchRequest("hb", i, instant)); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	if _, err := client.Result[*client.BatchAcceptedHeaders](api.CreatePaymentBatch(ctx,
		&client.CreatePaymentBatchReqApplicationXNdjson{Data: &body}, client.CreatePaymentBatchParams{})); err != nil {
		return 0, fmt.Errorf("POST /v1/payment-batches: %w", err)
	}
	if err := waitScheduled(ctx, stack.db, o.Records, start.Add(o.MaxWait)); err != nil {
		return 0, fmt.Errorf("the HTTP file: %w", err)
	}
	took := time.Since(start)
	rate := float64(o.Records) / took.Seconds()
	fmt.Fprintf(o.Out, "HTTP bulk file (a stack of its own): POST → the last of %s payments SCHEDULED: %.1f s, %s payments/s\n",
		thousands(o.Records), took.Seconds(), thousands(int(rate)))
	return rate, nil
}

// firstPollClock notes when the intake handed over its first chunk.
type firstPollClock struct {
	kafka.Payments
	at *atomic.Int64
}

func (f firstPollClock) Take(ctx context.Context, in payment.Intake) (payment.Taken, error) {
	f.at.CompareAndSwap(0, time.Now().UnixNano())
	return f.Payments.Take(ctx, in)
}

// waitScheduled waits until n payments are stored and no chunk is left in
// Phase A (its intake row gone).
func waitScheduled(ctx context.Context, db *postgres.DB, n int, deadline time.Time) error {
	for {
		var stored int
		var pending bool
		if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payment_keys), EXISTS (SELECT 1 FROM payment_intake)`).
			Scan(&stored, &pending); err != nil {
			return err
		}
		if stored >= n && !pending {
			var scheduled int
			if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status = 'SCHEDULED'`).Scan(&scheduled); err != nil {
				return err
			}
			if scheduled != n {
				return fmt.Errorf("phase A done, but %d of %d payments SCHEDULED", scheduled, n)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d payments taken in, Phase A pending %v, after the wait", stored, n, pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// produceRequests writes n payment requests to topic, keyed by id.
func produceRequests(ctx context.Context, brokers []string, topic, prefix string, n int, at time.Time) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	const batch = 5000
	for from := 0; from < n; from += batch {
		recs := make([]*kgo.Record, 0, batch)
		for i := from; i < min(from+batch, n); i++ {
			r := benchRequest(prefix, i, at)
			v, err := json.Marshal(r)
			if err != nil {
				return err
			}
			recs = append(recs, &kgo.Record{Key: []byte(r.PaymentID), Value: v})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("produce the requests: %w", err)
		}
	}
	return nil
}

// eventLatency turns the event stream on, runs a relayer publishing it
// and a consumer reading it, takes n more records in, and prints each
// SCHEDULED event's latency from its status change (createdAt) to the
// consumer.
func eventLatency(ctx context.Context, o KafkaOptions, db *postgres.DB, brokers []string, instant time.Time) error {
	if err := payment.NewStore(db.Pool).StartEventStream(ctx, o.Lanes); err != nil {
		return err
	}
	sender, err := kafka.NewEventSender(brokers, "events", payment.EventRailType)
	if err != nil {
		return err
	}
	defer sender.Close()
	relay := func() (stop func(), err error) {
		relayer, err := outbox.New(outbox.Config{Pool: db.Pool, Sender: sender, Logger: o.Logger})
		if err != nil {
			return nil, err
		}
		rctx, cancel := context.WithCancel(ctx)
		relayed := make(chan struct{})
		go func() { defer close(relayed); _ = relayer.Run(rctx) }()
		return func() { cancel(); <-relayed }, nil
	}
	stopRelayer, err := relay()
	if err != nil {
		return err
	}
	defer func() { stopRelayer() }()

	consumer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer consumer.Close()
	start := time.Now()
	if err := produceRequests(ctx, brokers, "requests", "ke", o.Events, instant); err != nil {
		return err
	}
	seen := map[string]bool{}
	var lat []time.Duration
	var last time.Time
	deadline := start.Add(o.MaxWait)
	for len(seen) < o.Events && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := consumer.PollFetches(pctx)
		cancel()
		now := time.Now()
		fetches.EachRecord(func(r *kgo.Record) {
			var ev struct {
				ID        string    `json:"id"`
				CreatedAt time.Time `json:"createdAt"`
			}
			if json.Unmarshal(r.Value, &ev) != nil || seen[ev.ID] {
				return
			}
			seen[ev.ID] = true
			lat = append(lat, now.Sub(ev.CreatedAt))
			last = now
		})
	}
	if len(seen) < o.Events {
		return fmt.Errorf("%d of %d SCHEDULED events arrived within %s", len(seen), o.Events, o.MaxWait)
	}
	p50, p99, most := latencySpread(lat)
	fmt.Fprintf(o.Out, "events (%d lanes): %s payments taken in with the stream on; their %s SCHEDULED events, status change → consumer: p50 %s, p99 %s, max %s; %s events/s published (first record produced → last event read: %.1f s)\n",
		o.Lanes, thousands(o.Events), thousands(len(lat)), p50.Round(time.Millisecond), p99.Round(time.Millisecond),
		most.Round(time.Millisecond), thousands(int(float64(len(lat))/last.Sub(start).Seconds())), last.Sub(start).Seconds())

	// The relay alone: as many events again, enqueued with no relayer
	// running, then published by one from that backlog, so that the rate
	// is the relay's and not the intake's.
	stopRelayer()
	stopRelayer = func() {}
	// Ids of their own: the first intake's ("kb") would be replays,
	// taken in once already, and enqueue nothing.
	if err := produceRequests(ctx, brokers, "requests", "kr", o.Events, instant); err != nil {
		return err
	}
	// The backlog is what the intake enqueued once its count stops
	// growing (the intake's backpressure may hold some of it back).
	backlog, stable := 0, 0
	noneBy := time.Now().Add(time.Minute)
	for stable < 5 {
		if time.Now().After(deadline) {
			return fmt.Errorf("events still being enqueued after %s", o.MaxWait)
		}
		if backlog == 0 && time.Now().After(noneBy) {
			return errors.New("no event enqueued a minute after the backlog's records were produced")
		}
		time.Sleep(200 * time.Millisecond)
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM payment_outbox_pending WHERE rail_type = $1`,
			payment.EventRailType).Scan(&n); err != nil {
			return err
		}
		if n > 0 && n == backlog {
			stable++
		} else {
			stable = 0
		}
		backlog = n
	}
	if stopRelayer, err = relay(); err != nil {
		return err
	}
	start, want := time.Now(), len(seen)+backlog
	for len(seen) < want && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := consumer.PollFetches(pctx)
		cancel()
		now := time.Now()
		fetches.EachRecord(func(r *kgo.Record) {
			var ev struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(r.Value, &ev) != nil || seen[ev.ID] {
				return
			}
			seen[ev.ID] = true
			last = now
		})
	}
	if len(seen) < want {
		return fmt.Errorf("%d of %d backlog events arrived within %s", len(seen)-want+backlog, backlog, o.MaxWait)
	}
	fmt.Fprintf(o.Out, "events from a backlog (the relay alone): %s events enqueued with no relayer, then published by one: %.1f s, %s events/s\n",
		thousands(backlog), last.Sub(start).Seconds(), thousands(int(float64(backlog)/last.Sub(start).Seconds())))
	return nil
}

// latencySpread is lat's p50 and p99 by nearest rank, as the queue's and
// the outbox's benchmarks count them, and its max.
func latencySpread(lat []time.Duration) (p50, p99, most time.Duration) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	return percentile(lat, 50), percentile(lat, 99), slices.Max(lat)
}
