package kafka_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/paydispatch/paydispatch/kafka"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
)

func intakeConfig(s stack, group string) kafka.IntakeConfig {
	return kafka.IntakeConfig{
		Brokers: s.cluster.Brokers(), Topic: s.topic, Group: group, Payments: s.svc, ChunkRecords: 200,
		KnownTenants: func(ctx context.Context, ts []string) (map[string]bool, error) {
			return account.Tenants(ctx, s.pool, ts)
		},
	}
}

func run(t *testing.T, cfg kafka.IntakeConfig) (stop func()) {
	t.Helper()
	in, err := kafka.NewIntake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = in.Run(ctx) }()
	return func() { cancel(); <-done }
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
	}
}

// TestIntake: good records become payments through Phase A, each once
// (a producer's duplicate too); every bad one is on the dead-letter topic
// with its reason, and the partition goes on past it. A second consumer
// in the group, after the first stopped, reads nothing again.
func TestIntake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	s := newStack(t, true)
	at := time.Now().Add(time.Hour)
	var recs []*kgo.Record
	for i := range 300 {
		recs = append(recs, &kgo.Record{Topic: s.topic, Value: []byte(request(fmt.Sprintf("k-%03d", i), at))})
	}
	noTenant := `{"paymentId":"hdr-1","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"` + at.UTC().Format(time.RFC3339) + `"}`
	bad := []struct {
		value, tenantHeader, field string
	}{
		{`{"paymentId": "x", `, "", ""}, // unreadable
		{strings.Replace(request("bad-amount", at), `"10.00"`, `"ten"`, 1), "", "amount"},
		{noTenant, "", "tenantId"}, // no tenant
		{`{"paymentId":"ghost-1","tenantId":"ghost","debtorAccount":"A","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"` + at.UTC().Format(time.RFC3339) + `"}`, "", "tenantId"},
		{request("k-007", at.Add(time.Minute)), "", "paymentId"}, // k-007's id, another payment
		{request("hdr-2", at), "globex", "tenantId"},             // header and value disagree
	}
	for i, b := range bad {
		r := &kgo.Record{Topic: s.topic, Value: []byte(b.value), Partition: int32(i % 4)}
		if b.tenantHeader != "" {
			r.Headers = []kgo.RecordHeader{{Key: kafka.HeaderTenant, Value: []byte(b.tenantHeader)}}
		}
		recs = append(recs, r)
	}
	// The tenant from a header; a producer's duplicate of k-001.
	recs = append(recs,
		&kgo.Record{Topic: s.topic, Value: []byte(noTenant), Headers: []kgo.RecordHeader{{Key: kafka.HeaderTenant, Value: []byte("acme")}}},
		&kgo.Record{Topic: s.topic, Value: []byte(request("k-001", at))})
	produce(t, s.cluster.Brokers(), recs...)

	stop := run(t, intakeConfig(s, "intake-test"))
	waitFor(t, 2*time.Minute, "301 payments scheduled", func() bool { return statuses(t, s.pool)["SCHEDULED"] == 301 })
	dead := consume(t, s.cluster.Brokers(), s.topic+".dlq", len(bad), 30*time.Second)
	stop()
	if len(dead) != len(bad) {
		t.Fatalf("%d dead letters, want %d", len(dead), len(bad))
	}
	byValue := map[string]*kgo.Record{}
	for _, d := range dead {
		byValue[string(d.Value)] = d
		if header(d, kafka.HeaderError) == "" || header(d, kafka.HeaderSourceTopic) != s.topic {
			t.Errorf("dead letter %q: headers %v", d.Value, d.Headers)
		}
		if want := header(d, kafka.HeaderSourceTopic) + "/" + header(d, kafka.HeaderSourcePart) + "/" + header(d, kafka.HeaderSourceOffset); string(d.Key) != want {
			t.Errorf("dead letter keyed %q, want its origin %q", d.Key, want)
		}
	}
	for _, b := range bad {
		d, ok := byValue[b.value]
		if !ok {
			t.Errorf("not dead-lettered: %s", b.value)
			continue
		}
		if got := header(d, kafka.HeaderErrorField); got != b.field {
			t.Errorf("%s: field %q (%s), want %q", b.value, got, header(d, kafka.HeaderError), b.field)
		}
	}
	if got := statuses(t, s.pool); len(got) != 1 || got["SCHEDULED"] != 301 {
		t.Fatalf("payments by status %v, want 301 SCHEDULED", got)
	}
	if p, err := s.svc.Store.Find(context.Background(), "acme", "hdr-1"); err != nil || p.Status != payment.StatusScheduled {
		t.Fatalf("the payment whose tenant came in a header: %+v, %v", p, err)
	}

	// Committed: another consumer of the group takes nothing again.
	var consumed atomic.Int64
	cfg := intakeConfig(s, "intake-test")
	cfg.Payments = countingPayments{Payments: s.svc, n: &consumed}
	stop = run(t, cfg)
	time.Sleep(3 * time.Second)
	stop()
	if n := consumed.Load(); n != 0 {
		t.Fatalf("a second consumer of the group took %d records again", n)
	}
}

// countingPayments counts what reaches the payments' side.
type countingPayments struct {
	kafka.Payments
	n *atomic.Int64
}

func (c countingPayments) StartBatch(ctx context.Context, reqs []payment.Request, whole bool) (payment.BatchSubmission, error) {
	c.n.Add(int64(len(reqs)))
	return c.Payments.StartBatch(ctx, reqs, whole)
}

// TestIntakeKilledBeforeCommit: a consumer that dies after storing a
// chunk and before committing it loses nothing and makes nothing twice:
// the next consumer of the group reads the chunk again, and its payments'
// ids make the second reading store nothing. Every record is one payment,
// one queue item, no dead letter.
func TestIntakeKilledBeforeCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	s := newStack(t, true)
	const n = 2000
	at := time.Now().Add(time.Hour)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: s.topic, Value: []byte(request("kill-"+strconv.Itoa(i), at))}
	}
	produce(t, s.cluster.Brokers(), recs...)

	ctx, kill := context.WithCancel(context.Background())
	var chunks, first, again atomic.Int64
	cfg := intakeConfig(s, "kill-test")
	cfg.Payments = countingPayments{Payments: s.svc, n: &first}
	kafka.AfterStore(&cfg, func([]*kgo.Record) {
		if chunks.Add(1) == 3 {
			kill() // dies holding a stored, uncommitted chunk
		}
	})
	in, err := kafka.NewIntake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Run(ctx); err != nil {
		t.Fatal(err)
	}
	stored := int(first.Load())
	if stored == 0 || stored >= n {
		t.Fatalf("the first consumer stored %d of %d before it died", stored, n)
	}

	cfg = intakeConfig(s, "kill-test")
	cfg.Payments = countingPayments{Payments: s.svc, n: &again}
	stop := run(t, cfg)
	waitFor(t, 3*time.Minute, "every payment scheduled", func() bool { return statuses(t, s.pool)["SCHEDULED"] == n })
	stop()
	if again.Load() <= int64(n-stored) {
		t.Fatalf("the second consumer took %d records: the dead one's uncommitted chunk was not read again (%d were new)", again.Load(), n-stored)
	}
	var payments, items, distinct int
	if err := s.pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM payments), (SELECT count(*) FROM exec_queue), (SELECT count(DISTINCT external_id) FROM payments)`).
		Scan(&payments, &items, &distinct); err != nil {
		t.Fatal(err)
	}
	if payments != n || items != n || distinct != n {
		t.Fatalf("%d payments (%d distinct), %d queue items; want %d of each", payments, distinct, items, n)
	}
	if dead := consume(t, s.cluster.Brokers(), s.topic+".dlq", 1, 2*time.Second); len(dead) != 0 {
		t.Fatalf("%d dead letters", len(dead))
	}
}

// TestIntakeHoldsBack: while the queue is over its ceiling nothing is
// taken; below it, everything is.
func TestIntakeHoldsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	s := newStack(t, true)
	var depth atomic.Int64
	depth.Store(1000)
	var taken atomic.Int64
	cfg := intakeConfig(s, "hold")
	cfg.ReadyCeiling, cfg.CheckEvery = 500, 100*time.Millisecond
	cfg.ReadyDepth = func(context.Context) (int64, error) { return depth.Load(), nil }
	cfg.Payments = countingPayments{Payments: s.svc, n: &taken}
	stop := run(t, cfg)
	defer stop()
	at := time.Now().Add(time.Hour)
	for i := range 50 {
		produce(t, s.cluster.Brokers(), &kgo.Record{Topic: s.topic, Value: []byte(request("hold-"+strconv.Itoa(i), at))})
	}
	time.Sleep(2 * time.Second)
	if n := taken.Load(); n != 0 {
		t.Fatalf("%d records taken while the queue was over its ceiling", n)
	}
	depth.Store(0)
	waitFor(t, time.Minute, "50 payments scheduled after the queue fell below its ceiling",
		func() bool { return statuses(t, s.pool)["SCHEDULED"] == 50 })
}
