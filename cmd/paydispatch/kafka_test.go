package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/payment"
)

// findKcat is Debian's kcat (librdkafka): a Kafka client nobody here wrote.
func findKcat(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("kcat"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no kcat: .ci/run installs Debian's kcat (apt-get install kcat)")
	}
	t.Skip("no kcat on this machine: apt-get install kcat")
	return ""
}

// TestKafkaWithKcat: kcat, as a platform's producer, writes payment
// requests to serve's intake topic on the embedded cluster (the tenant in
// a header, one record unreadable); each becomes a payment and is
// delivered, the bad record lands on the dead-letter topic with its
// reason, and kcat, as a consumer, reads each payment's events from the
// events topic complete and in order: a chain from RECEIVED to DELIVERED,
// each event's previous status the one before it. The ledger verifies.
func TestKafkaWithKcat(t *testing.T) {
	kcat := findKcat(t)
	if testing.Short() {
		t.Skip("runs serve")
	}
	t.Parallel()
	srv := startServeInProcess(t, map[string]string{
		"PAYDISPATCH_KAFKA_BROKERS": "embedded", "PAYDISPATCH_KAFKA_TOPIC": "payment-requests",
		"PAYDISPATCH_KAFKA_EVENTS_TOPIC": "payment-events",
	})
	if len(srv.kafkaBrokers) == 0 {
		t.Fatal("serve started no Kafka cluster")
	}
	broker := srv.kafkaBrokers[0]
	openAccount(t, srv.addr, "ACC-K", "acme", "100000.00")

	const n = 40
	var in bytes.Buffer
	at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
	for i := range n {
		fmt.Fprintf(&in, `{"paymentId":"kc-%03d","debtorAccount":"ACC-K","amount":"12.50","currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":%q}`+"\n", i, at)
	}
	in.WriteString("{not json\n")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	produce := exec.CommandContext(ctx, kcat, "-P", "-b", broker, "-t", "payment-requests", "-H", "tenant-id=acme")
	produce.Stdin = &in
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}

	delivered := func() int {
		c := 0
		for i := range n {
			resp, err := http.Get(fmt.Sprintf("http://%s/v1/payments/kc-%03d?tenantId=acme", srv.addr, i))
			if err != nil {
				continue
			}
			var v struct{ Status string }
			_ = json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if v.Status == string(payment.StatusDelivered) {
				c++
			}
		}
		return c
	}
	waitUntil(t, 2*time.Minute, func() bool { return delivered() == n })

	read := func(topic, format string, want int) []string {
		var lines []string
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
			out, err := exec.CommandContext(ctx, kcat, "-C", "-b", broker, "-t", topic, "-o", "beginning", "-e", "-q", "-f", format).Output()
			if err != nil {
				t.Fatalf("kcat -C %s: %v", topic, err)
			}
			lines = nil
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if sc.Text() != "" {
					lines = append(lines, sc.Text())
				}
			}
			if len(lines) >= want || time.Now().After(deadline) {
				return lines
			}
		}
	}
	dead := read("payment-requests.dlq", "%h\t%s\n", 1)
	if len(dead) != 1 || !strings.Contains(dead[0], "paydispatch-error=unreadable") || !strings.HasSuffix(dead[0], "{not json") {
		t.Fatalf("dead letters: %q", dead)
	}

	type chain struct {
		ids  map[string]bool
		last string
	}
	chains := map[string]*chain{}
	// Each payment's events end in DELIVERED; some went SCHEDULED,
	// PROCESSING, DELIVERED: at least 3 each.
	for _, line := range read("payment-events", "%k\t%s\n", 3*n) {
		key, value, _ := strings.Cut(line, "\t")
		var ev struct {
			ID   string `json:"id"`
			Data struct {
				PaymentID, Status, PreviousStatus string
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(value), &ev); err != nil {
			t.Fatalf("event %q: %v", value, err)
		}
		if key != "acme/"+ev.Data.PaymentID {
			t.Fatalf("event of %s keyed %q", ev.Data.PaymentID, key)
		}
		c := chains[key]
		if c == nil {
			c = &chain{ids: map[string]bool{}, last: "RECEIVED"}
			chains[key] = c
		}
		if c.ids[ev.ID] {
			continue // at least once: a duplicate is allowed
		}
		c.ids[ev.ID] = true
		if ev.Data.PreviousStatus != c.last {
			t.Fatalf("%s: %s after %s, its previous status %s: out of order or one missing", key, ev.Data.Status, c.last, ev.Data.PreviousStatus)
		}
		c.last = ev.Data.Status
	}
	if len(chains) != n {
		t.Fatalf("events of %d payments, want %d", len(chains), n)
	}
	for key, c := range chains {
		if c.last != string(payment.StatusDelivered) {
			t.Fatalf("%s: last event %s, want DELIVERED", key, c.last)
		}
	}
	if vs, err := payment.Verify(context.Background(), srv.store.Pool); err != nil || len(vs) > 0 {
		t.Fatalf("verify: %v %+v", err, vs)
	}
}

// TestKafkaIntakeStuckStopsOnSIGTERM: serve and kafka-intake, their
// intake stuck on brokers that answer neither its dead letter's produce
// nor its leaving the group, exit within their shutdown timeout of
// SIGTERM.
func TestKafkaIntakeStuckStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	const timeout = 15 * time.Second
	tests := []struct {
		name  string
		start func(t *testing.T, brokers string) (*exec.Cmd, <-chan error)
	}{
		{"serve", func(t *testing.T, brokers string) (*exec.Cmd, <-chan error) {
			data, addr := dataDir(t), freeAddr(t)
			p := startServeOn(t, data, addr, 0, "--kafka-brokers", brokers, "--kafka-topic", "payment-requests",
				"--shutdown-timeout", timeout.String())
			done := make(chan error, 1)
			go func() { err := <-p.done; p.done <- err; done <- err }()
			return p.cmd, done
		}},
		{"kafka-intake", func(t *testing.T, brokers string) (*exec.Cmd, <-chan error) {
			srv, _ := temporaltest.Start(t)
			metrics := freeAddr(t)
			p := startProc(t, "kafka-intake", []string{"kafka-intake", "--metrics-addr", metrics, "--shutdown-timeout", timeout.String()},
				[]string{"DATABASE_URL=" + pgtest.URL(t), "TEMPORAL_ADDRESS=" + srv.HostPort(),
					"PAYDISPATCH_KAFKA_BROKERS=" + brokers, "PAYDISPATCH_KAFKA_TOPIC=payment-requests"})
			waitHTTP(t, "http://"+metrics+"/healthz")
			done := make(chan error, 1)
			go func() { <-p.done; done <- p.err }()
			return p.cmd, done
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.SeedTopics(4, "payment-requests"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cluster.Close)
			cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			err = cl.ProduceSync(context.Background(), &kgo.Record{Topic: "payment-requests", Value: []byte("{not json")}).FirstErr()
			cl.Close()
			if err != nil {
				t.Fatal(err)
			}
			// From now on the brokers take the dead letter's produce and
			// the leaving of the group, and never answer.
			stuck := make(chan struct{}, 1)
			for _, key := range []kmsg.Key{kmsg.Produce, kmsg.LeaveGroup} {
				cluster.ControlKey(key.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
					cluster.KeepControl()
					if req.Key() == kmsg.Produce.Int16() {
						select {
						case stuck <- struct{}{}:
						default:
						}
					}
					return nil, nil, true
				})
			}
			cmd, done := tt.start(t, strings.Join(cluster.ListenAddrs(), ","))
			select {
			case <-stuck:
			case <-time.After(2 * time.Minute):
				t.Fatal("the intake sent no dead letter")
			}
			time.Sleep(2 * time.Second) // stuck a while
			begun := time.Now()
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-done:
				t.Logf("%s exited %v after SIGTERM (%v)", tt.name, time.Since(begun).Round(time.Millisecond), err)
			case <-time.After(timeout + 3*time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("%s still running %v after SIGTERM (its shutdown timeout %v)", tt.name, timeout+3*time.Second, timeout)
			}
		})
	}
}
