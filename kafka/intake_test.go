package kafka_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(kafka.CloseTimeout + 10*time.Second):
			t.Errorf("the intake did not stop within %v of its context's end", kafka.CloseTimeout+10*time.Second)
		}
	}
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
	// A bad record whose producer set the intake's own headers: its dead
	// letter has the intake's alone.
	forged := `{"paymentId":"forged-1","tenantId":"acme"}`
	recs = append(recs, &kgo.Record{Topic: s.topic, Value: []byte(forged), Headers: []kgo.RecordHeader{
		{Key: kafka.HeaderError, Value: []byte("forged")}, {Key: "Paydispatch-Source-Offset", Value: []byte("999")},
		{Key: kafka.HeaderSourceTopic, Value: []byte("elsewhere")}, {Key: "x-trace", Value: []byte("kept")}}})
	// The tenant from a header; a producer's duplicate of k-001.
	recs = append(recs,
		&kgo.Record{Topic: s.topic, Value: []byte(noTenant), Headers: []kgo.RecordHeader{{Key: kafka.HeaderTenant, Value: []byte("acme")}}},
		&kgo.Record{Topic: s.topic, Value: []byte(request("k-001", at))})
	produce(t, s.cluster.Brokers(), recs...)

	stop := run(t, intakeConfig(s, "intake-test"))
	waitFor(t, 2*time.Minute, "301 payments scheduled", func() bool { return statuses(t, s.pool)["SCHEDULED"] == 301 })
	dead := consume(t, s.cluster.Brokers(), s.topic+".dlq", len(bad)+1, 30*time.Second)
	stop()
	if len(dead) != len(bad)+1 {
		t.Fatalf("%d dead letters, want %d", len(dead), len(bad)+1)
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
	if d := byValue[forged]; d == nil {
		t.Errorf("not dead-lettered: %s", forged)
	} else {
		var ours []string
		for _, h := range d.Headers {
			if strings.HasPrefix(strings.ToLower(h.Key), "paydispatch-") {
				ours = append(ours, h.Key+"="+string(h.Value))
			}
		}
		if got := strings.Join(ours, " "); strings.Contains(got, "forged") || strings.Contains(got, "999") || strings.Contains(got, "elsewhere") ||
			strings.Count(got, kafka.HeaderError+"=") != 1 || header(d, "x-trace") != "kept" {
			t.Errorf("the dead letter of a record with forged headers: %v", d.Headers)
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
	if p, err := s.svc.Store().Find(context.Background(), "acme", "hdr-1"); err != nil || p.Status != payment.StatusScheduled {
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

func (c countingPayments) Take(ctx context.Context, in payment.Intake) (payment.Taken, error) {
	c.n.Add(int64(len(in.Requests)))
	return c.Payments.Take(ctx, in)
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

// TestIntakeOversizedRecord: a record too large to go whole to the
// dead-letter topic (1,030,000 bytes: under the broker's 1,048,588, over
// a producer's 1,000,012) stops no partition. The valid records sent
// once the intake has read it, one on every partition, are all taken in,
// and it is on the dead-letter topic by reference: its origin, size and
// SHA-256, no value.
func TestIntakeOversizedRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	s := newStack(t, true)
	at := time.Now().Add(time.Hour)
	big := strings.Replace(request("big-1", at), `"amount"`, `"remittanceInfo":"`+strings.Repeat("x", 1_029_700)+`","amount"`, 1)
	big += strings.Repeat(" ", 1_030_000-len(big))
	bigRec := &kgo.Record{Topic: s.topic, Partition: 0, Value: []byte(big),
		Headers: []kgo.RecordHeader{{Key: kafka.HeaderTenant, Value: []byte("acme")}}}
	produceTo(t, s.cluster.Brokers(), bigRec)

	reg := prometheus.NewRegistry()
	cfg := intakeConfig(s, "oversized")
	cfg.Metrics = kafka.NewMetrics(reg)
	stop := run(t, cfg)
	defer stop()
	waitFor(t, time.Minute, "the oversized record read", func() bool {
		return counter(t, reg, "paydispatch_kafka_intake_records_consumed_total") >= 1
	})
	var recs []*kgo.Record
	for p := range int32(4) {
		recs = append(recs, &kgo.Record{Topic: s.topic, Partition: p, Value: []byte(request(fmt.Sprintf("after-%d", p), at))})
	}
	produceTo(t, s.cluster.Brokers(), recs...)
	waitFor(t, time.Minute, "the 4 valid records sent after the oversized one scheduled",
		func() bool { return statuses(t, s.pool)["SCHEDULED"] == 4 })
	dead := consume(t, s.cluster.Brokers(), s.topic+".dlq", 1, 30*time.Second)
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	d := dead[0]
	sum := sha256.Sum256(bigRec.Value)
	want := map[string]string{
		kafka.HeaderTrimmed:      "true",
		kafka.HeaderSourceTopic:  s.topic,
		kafka.HeaderSourcePart:   "0",
		kafka.HeaderSourceOffset: "0",
		kafka.HeaderSourceSize:   strconv.Itoa(len(big) + len(kafka.HeaderTenant) + len("acme")),
		kafka.HeaderSourceSHA256: hex.EncodeToString(sum[:]),
		kafka.HeaderTenant:       "acme",
	}
	for k, v := range want {
		if got := header(d, k); got != v {
			t.Errorf("dead letter's %s: %q, want %q", k, got, v)
		}
	}
	if len(d.Value) != 0 || !strings.Contains(header(d, kafka.HeaderError), "too large") || string(d.Key) != s.topic+"/0/0" {
		t.Errorf("dead letter keyed %q, %d bytes of value, reason %q", d.Key, len(d.Value), header(d, kafka.HeaderError))
	}
}

// failingPayments fails Take as fail says (nil: it does not).
type failingPayments struct {
	kafka.Payments
	fail func(reqs []payment.Request) error
}

func (f failingPayments) Take(ctx context.Context, in payment.Intake) (payment.Taken, error) {
	if err := f.fail(in.Requests); err != nil {
		return payment.Taken{}, err
	}
	return f.Payments.Take(ctx, in)
}

// TestIntakeIsolatesAFailingRecord: a valid-looking record that the
// database refuses every time it is in a chunk (a value error, SQLSTATE
// 22021) holds nobody else: the chunk is split until the record fails
// alone, every other record on every partition is taken in, and the
// record goes to the dead-letter topic by reference with the error.
func TestIntakeIsolatesAFailingRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	s := newStack(t, true)
	at := time.Now().Add(time.Hour)
	var recs []*kgo.Record
	for i := range 40 {
		id := fmt.Sprintf("iso-%02d", i)
		if i == 13 {
			id = "poison"
		}
		recs = append(recs, &kgo.Record{Topic: s.topic, Partition: int32(i % 4), Value: []byte(request(id, at))})
	}
	produceTo(t, s.cluster.Brokers(), recs...)
	cfg := intakeConfig(s, "isolate")
	cfg.Payments = failingPayments{Payments: s.svc, fail: func(reqs []payment.Request) error {
		for _, r := range reqs {
			if r.PaymentID == "poison" {
				return fmt.Errorf("store: %w", &pgconn.PgError{Code: "22021", Message: "invalid byte sequence for encoding \"UTF8\""})
			}
		}
		return nil
	}}
	stop := run(t, cfg)
	defer stop()
	waitFor(t, 2*time.Minute, "the 39 other payments scheduled", func() bool { return statuses(t, s.pool)["SCHEDULED"] == 39 })
	dead := consume(t, s.cluster.Brokers(), s.topic+".dlq", 1, 30*time.Second)
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	d := dead[0]
	if header(d, kafka.HeaderSourcePart) != "1" || header(d, kafka.HeaderTrimmed) != "true" || len(d.Value) != 0 ||
		!strings.Contains(header(d, kafka.HeaderError), "22021") {
		t.Fatalf("dead letter %q: %v", d.Value, d.Headers)
	}
	if _, err := s.svc.Store().Find(context.Background(), "acme", "poison"); err == nil {
		t.Fatal("the refused record was stored")
	}
}

// TestIntakeHoldsThroughAnOutage: while the database is out of reach (a
// connection refused; an error of no known kind while Healthy fails) a
// chunk is retried whole, never split or dead-lettered: once it answers,
// every record is a payment and the dead-letter topic is empty.
func TestIntakeHoldsThroughAnOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	tests := []struct {
		name  string
		err   error
		probe bool // Healthy is set, and fails while the database is down
	}{
		{"connection refused", fmt.Errorf("store: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), false},
		{"server shutting down", fmt.Errorf("store: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}), false},
		{"an unknown error while unhealthy", errors.New("something odd"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, true)
			at := time.Now().Add(time.Hour)
			var recs []*kgo.Record
			for i := range 20 {
				recs = append(recs, &kgo.Record{Topic: s.topic, Partition: int32(i % 4), Value: []byte(request(fmt.Sprintf("out-%02d", i), at))})
			}
			produceTo(t, s.cluster.Brokers(), recs...)
			var down atomic.Bool
			down.Store(true)
			var failures atomic.Int64
			cfg := intakeConfig(s, "outage")
			if tt.probe {
				cfg.Healthy = func(context.Context) error {
					if down.Load() {
						return errors.New("database: connection refused")
					}
					return nil
				}
			}
			cfg.Payments = failingPayments{Payments: s.svc, fail: func([]payment.Request) error {
				if down.Load() {
					failures.Add(1)
					return tt.err
				}
				return nil
			}}
			stop := run(t, cfg)
			defer stop()
			waitFor(t, time.Minute, "5 failed attempts", func() bool { return failures.Load() >= 5 })
			down.Store(false)
			waitFor(t, 2*time.Minute, "20 payments scheduled", func() bool { return statuses(t, s.pool)["SCHEDULED"] == 20 })
			if dead := consume(t, s.cluster.Brokers(), s.topic+".dlq", 1, 2*time.Second); len(dead) != 0 {
				t.Fatalf("%d dead letters during an outage: %v", len(dead), dead[0].Headers)
			}
		})
	}
}

// TestIntakeStopsWhenStuck: an intake whose brokers never answer its
// dead letters' produce, nor its leaving the group, still returns soon
// after its context ends.
func TestIntakeStopsWhenStuck(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	produce(t, s.cluster.Brokers(), &kgo.Record{Topic: s.topic, Value: []byte(`{not json`)})
	stuck := make(chan struct{}, 1)
	fake := kafka.Fake(s.cluster)
	for _, key := range []int16{kmsg.Produce.Int16(), kmsg.LeaveGroup.Int16()} {
		fake.ControlKey(key, func(req kmsg.Request) (kmsg.Response, error, bool) {
			fake.KeepControl()
			if req.Key() == kmsg.Produce.Int16() {
				select {
				case stuck <- struct{}{}:
				default:
				}
			}
			return nil, nil, true // no answer
		})
	}
	in, err := kafka.NewIntake(intakeConfig(s, "stuck"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = in.Run(ctx) }()
	select {
	case <-stuck:
	case <-time.After(time.Minute):
		t.Fatal("the intake sent no dead letter")
	}
	time.Sleep(time.Second)
	cancel()
	begun := time.Now()
	select {
	case <-done:
		t.Logf("stopped %v after its context ended", time.Since(begun).Round(time.Millisecond))
	case <-time.After(kafka.CloseTimeout + 3*time.Second):
		t.Fatalf("the intake did not stop within %v of its context's end", kafka.CloseTimeout+3*time.Second)
	}
}

// TestIntakeLimitFollowsBrokers: a dead-letter topic that takes less
// than the intake's limit lowers it, so that a record under the limit
// still goes whole: one of 30,000 bytes goes by reference, one of 10,000
// whole, both after the valid record before them is taken in.
func TestIntakeLimitFollowsBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	s := newStack(t, true)
	if err := kafka.Fake(s.cluster).CreateTopic(s.topic+".dlq", 1, map[string]string{"max.message.bytes": "20000"}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour)
	pad := func(n int) []byte {
		return []byte(`{"paymentId":"pad","x":"` + strings.Repeat("x", n-len(`{"paymentId":"pad","x":""}`)) + `"}`)
	}
	produceTo(t, s.cluster.Brokers(),
		&kgo.Record{Topic: s.topic, Value: []byte(request("lim-1", at))},
		&kgo.Record{Topic: s.topic, Value: pad(30_000)},
		&kgo.Record{Topic: s.topic, Value: pad(10_000)},
		&kgo.Record{Topic: s.topic, Value: []byte(request("lim-2", at))})
	stop := run(t, intakeConfig(s, "limit"))
	defer stop()
	waitFor(t, time.Minute, "2 payments scheduled", func() bool { return statuses(t, s.pool)["SCHEDULED"] == 2 })
	dead := consume(t, s.cluster.Brokers(), s.topic+".dlq", 2, 30*time.Second)
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dead))
	}
	for _, d := range dead {
		switch size := header(d, kafka.HeaderSourceSize); size {
		case "30000":
			if header(d, kafka.HeaderTrimmed) != "true" || len(d.Value) != 0 || !strings.Contains(header(d, kafka.HeaderError), "limit of 15904") {
				t.Errorf("the 30,000-byte record's letter: %d bytes, %v", len(d.Value), d.Headers)
			}
		case "10000":
			if header(d, kafka.HeaderTrimmed) != "" || len(d.Value) != 10_000 || !strings.Contains(header(d, kafka.HeaderError), "unreadable") {
				t.Errorf("the 10,000-byte record's letter: %d bytes, %v", len(d.Value), d.Headers)
			}
		default:
			t.Errorf("a dead letter of size %q: %v", size, d.Headers)
		}
	}
}
