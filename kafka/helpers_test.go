package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/kafka"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// stack is a database with the payments' item type and an account of
// tenant acme, a Temporal server with Phase A's worker, and an embedded
// Kafka cluster with the intake topic of 4 partitions.
type stack struct {
	pool    *pgxpool.Pool
	svc     *payment.Service
	cluster *kafka.Embedded
	topic   string
}

func newStack(t *testing.T, withTemporal bool) stack {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if err := payment.RegisterItemType(ctx, queue.New(pool)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: "ACC-1", TenantID: "acme", Currency: "EUR",
		OpeningBalance: decimal.NewFromInt(1_000_000)}); err != nil {
		t.Fatal(err)
	}
	cfg := payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)}
	if withTemporal {
		_, c := temporaltest.Start(t)
		w := worker.New(c, payment.InitTaskQueue, worker.Options{})
		payment.RegisterInit(w, payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)}))
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		cfg.Temporal = c
	}
	svc := payment.NewService(cfg)
	cl, err := kafka.StartEmbedded(0, 4, "payments")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return stack{pool: pool, svc: svc, cluster: cl, topic: "payments"}
}

// request is a valid payment request of acme's, as a record's value.
func request(id string, at time.Time) string {
	return fmt.Sprintf(`{"paymentId":%q,"tenantId":"acme","debtorAccount":"ACC-1","amount":"10.00","currency":"EUR",`+
		`"creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":%q}`, id, at.UTC().Format(time.RFC3339))
}

func produce(t *testing.T, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// consume reads topic from its start until n records came or the time is up.
func consume(t *testing.T, brokers []string, topic string, n int, within time.Duration) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n && ctx.Err() == nil {
		out = append(out, cl.PollFetches(ctx).Records()...)
	}
	return out
}

// statuses counts the tenant's payments by status.
func statuses(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT status, count(*) FROM payments GROUP BY status`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// produceTo produces recs to the partitions they name, whatever their
// size up to the embedded broker's limit.
func produceTo(t *testing.T, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1_048_588))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// counter is the value of the counter named name in reg (0: none).
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
