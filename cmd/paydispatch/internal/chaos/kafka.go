package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/demo"
	"github.com/paydispatch/paydispatch/kafka"
)

// kafkaCheck: every record on the intake topic became exactly one
// payment (its tenant's, under its id) or one dead letter (keyed by its
// origin), whatever the kills did to the intakes.
func kafkaCheck(ctx context.Context, pool *pgxpool.Pool, brokers []string) demo.Check {
	const name = "Kafka: every record on the intake topic became exactly one payment or one dead-letter record"
	fail := func(err error) demo.Check { return demo.Check{Name: name, Detail: "could not check: " + err.Error()} }
	records, err := readTopic(ctx, brokers, KafkaTopic)
	if err != nil {
		return fail(err)
	}
	dead, err := readTopic(ctx, brokers, KafkaTopic+".dlq")
	if err != nil {
		return fail(err)
	}
	deadFor := map[string]int{}
	for _, d := range dead {
		deadFor[string(d.Key)]++
	}
	tenants, ids := []string{}, []string{}
	var deadOnes, both int
	for _, r := range records {
		origin := r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
		var v struct {
			PaymentID string `json:"paymentId"`
			TenantID  string `json:"tenantId"`
		}
		_ = json.Unmarshal(r.Value, &v)
		for _, h := range r.Headers {
			if h.Key == kafka.HeaderTenant && v.TenantID == "" {
				v.TenantID = string(h.Value)
			}
		}
		if deadFor[origin] > 0 {
			deadOnes++
			continue
		}
		tenants, ids = append(tenants, v.TenantID), append(ids, v.PaymentID)
	}
	// Each record not dead-lettered names a payment stored once.
	var stored, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(p.payment_id), count(DISTINCT (r.tenant, r.id))
		FROM unnest($1::text[], $2::text[]) AS r(tenant, id)
		LEFT JOIN payments p ON p.tenant_id = r.tenant AND p.external_id = r.id`, tenants, ids).Scan(&stored, &distinct); err != nil {
		return fail(err)
	}
	for _, r := range records {
		origin := r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
		if deadFor[origin] > 1 {
			both++ // a dead letter written twice (a crash between it and the commit): allowed, counted
		}
	}
	ok := stored == len(ids) && distinct == len(ids)
	return demo.Check{Name: name, OK: ok, Detail: fmt.Sprintf("%d records: %d payments stored (%d distinct ids), %d dead letters (%d written twice after a crash)",
		len(records), stored, distinct, deadOnes, both)}
}

// readTopic reads every record of topic from its start to its end.
func readTopic(ctx context.Context, brokers []string, topic string) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []*kgo.Record
	// The topic is written no more: read until a poll finds nothing new.
	for quiet := 0; quiet < 2; {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		recs := cl.PollFetches(pctx).Records()
		cancel()
		if len(recs) == 0 {
			quiet++
			continue
		}
		quiet = 0
		out = append(out, recs...)
	}
	return out, ctx.Err()
}
