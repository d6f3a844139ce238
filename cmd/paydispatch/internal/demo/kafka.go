package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/paydispatch/paydispatch/payment"
)

// KafkaOptions send a share of the demo's payments through Kafka and
// check the payment events the stack publishes there.
type KafkaOptions struct {
	Brokers []string
	// Topic is the stack's intake topic; EventsTopic its event stream.
	Topic, EventsTopic string
	// Share: one ordinary file payment in Share goes to the topic instead
	// of its tenant's file (default 4).
	Share int
	// Late produces them once the disruption has begun, in ten slices a
	// quarter of a second apart, so that the faults find the intake at
	// work (the fault-injection suite).
	Late bool
}

// viaKafka reports whether the i-th ordinary file payment goes to Kafka.
func (k *KafkaOptions) viaKafka(i int) bool {
	if k == nil {
		return false
	}
	share := k.Share
	if share <= 0 {
		share = 4
	}
	return i%share == 0
}

// produce writes the payments to the intake topic, keyed by id, the
// tenant in a header, and waits for the brokers' acknowledgement.
func (k *KafkaOptions) produce(ctx context.Context, reqs []payment.Request) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.DefaultProduceTopic(k.Topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(reqs))
	for i, r := range reqs {
		tenant := r.TenantID
		r.TenantID = "" // from the header
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		recs[i] = &kgo.Record{Key: []byte(r.PaymentID), Value: v, Headers: []kgo.RecordHeader{{Key: "tenant-id", Value: []byte(tenant)}}}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce %d payments to %s: %w", len(recs), k.Topic, err)
	}
	return nil
}

// produceLate produces the payments in ten slices, a quarter of a second
// apart.
func (k *KafkaOptions) produceLate(ctx context.Context, reqs []payment.Request) error {
	step := (len(reqs) + 9) / 10
	for from := 0; from < len(reqs); from += step {
		if err := k.produce(ctx, reqs[from:min(from+step, len(reqs))]); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

// events reads the event stream from its start into each payment's
// chain, until stop.
type eventReader struct {
	mu       sync.Mutex
	seen     map[string]bool
	payments map[string][]hookEvent // by record key: tenant/paymentId
	records  int
	done     chan struct{}
	cancel   context.CancelFunc
}

func (k *KafkaOptions) readEvents(ctx context.Context) (*eventReader, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.ConsumeTopics(k.EventsTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	er := &eventReader{seen: map[string]bool{}, payments: map[string][]hookEvent{}, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(er.done)
		defer cl.Close()
		for ctx.Err() == nil {
			fetches := cl.PollFetches(ctx)
			fetches.EachRecord(func(r *kgo.Record) {
				var e hookEvent
				if json.Unmarshal(r.Value, &e) != nil {
					return
				}
				er.mu.Lock()
				er.records++
				if !er.seen[e.ID] {
					er.seen[e.ID] = true
					er.payments[string(r.Key)] = append(er.payments[string(r.Key)], e)
				}
				er.mu.Unlock()
			})
		}
	}()
	return er, nil
}

func (er *eventReader) stop() { er.cancel(); <-er.done }

// check waits up to a minute for every payment's events to chain from
// RECEIVED to its status now, in the order they were read.
func (er *eventReader) check(ctx context.Context, pool *pgxpool.Pool) Check {
	c := Check{Name: "Kafka: every payment's events published, complete and in order"}
	deadline := time.Now().Add(time.Minute)
	for {
		er.mu.Lock()
		n, why, err := incompleteChains(ctx, pool, er.payments)
		records, events := er.records, len(er.seen)
		er.mu.Unlock()
		switch {
		case err != nil:
			c.Detail = err.Error()
			return c
		case n == 0 || time.Now().After(deadline):
			c.OK = n == 0
			c.Detail = fmt.Sprintf("%d events (%d records read), %d payments incomplete", events, records, n)
			if why != "" {
				c.Detail += ", first: " + why
			}
			return c
		}
		time.Sleep(500 * time.Millisecond)
	}
}
