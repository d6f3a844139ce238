package kafka

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.temporal.io/api/serviceerror"
)

// TestDeadLetter: a dead letter's paydispatch-* headers are the intake's
// alone, whatever the record carried and in whatever case; a trimmed one
// has no value and no header of the record's but a valid tenant-id, and
// names the record by its origin, size and SHA-256.
func TestDeadLetter(t *testing.T) {
	t.Parallel()
	in := &Intake{cfg: IntakeConfig{DeadLetterTopic: "in.dlq"}}
	rec := &kgo.Record{Topic: "in", Partition: 3, Offset: 42, Key: []byte("k"), Value: []byte(`{"paymentId":"p"}`),
		Headers: []kgo.RecordHeader{
			{Key: HeaderTenant, Value: []byte("acme")},
			{Key: HeaderError, Value: []byte("forged")},
			{Key: "PAYDISPATCH-SOURCE-OFFSET", Value: []byte("1")},
			{Key: "paydispatch-", Value: []byte("empty name")},
			{Key: "x-trace", Value: []byte("t-1")},
		}}
	sum := sha256.Sum256(rec.Value)
	size := fmt.Sprint(len("k") + len(rec.Value) + len(HeaderTenant) + len("acme") + len(HeaderError) + len("forged") +
		len("PAYDISPATCH-SOURCE-OFFSET") + len("1") + len("paydispatch-") + len("empty name") + len("x-trace") + len("t-1"))
	ours := map[string]string{
		HeaderSourceTopic: "in", HeaderSourcePart: "3", HeaderSourceOffset: "42",
		HeaderSourceSize: size, HeaderSourceSHA256: hex.EncodeToString(sum[:]),
	}
	tests := []struct {
		name      string
		rf        refusal
		wantValue string
		wantKept  []string // the record's headers kept, in order
		wantError string
	}{
		{"whole", refusal{field: "amount", reason: "amount: required"}, `{"paymentId":"p"}`, []string{HeaderTenant, "x-trace"}, "amount: required"},
		{"trimmed", refusal{reason: "too large", trimmed: true}, "", []string{HeaderTenant}, "too large"},
		{"a long reason clipped", refusal{reason: strings.Repeat("é", maxReason)}, `{"paymentId":"p"}`, []string{HeaderTenant, "x-trace"},
			strings.Repeat("é", maxReason/2) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := in.deadLetter(rec, tt.rf)
			if d.Topic != "in.dlq" || string(d.Key) != "in/3/42" || string(d.Value) != tt.wantValue || d.Value == nil {
				t.Fatalf("dead letter to %s keyed %q, value %q", d.Topic, d.Key, d.Value)
			}
			var kept []string
			got := map[string][]string{}
			for _, h := range d.Headers {
				if strings.HasPrefix(strings.ToLower(h.Key), HeaderPrefix) {
					got[h.Key] = append(got[h.Key], string(h.Value))
				} else {
					kept = append(kept, h.Key)
				}
			}
			if strings.Join(kept, ",") != strings.Join(tt.wantKept, ",") {
				t.Errorf("the record's headers kept: %v, want %v", kept, tt.wantKept)
			}
			want := map[string]string{HeaderError: tt.wantError}
			for k, v := range ours {
				want[k] = v
			}
			if tt.rf.field != "" {
				want[HeaderErrorField] = tt.rf.field
			}
			if tt.rf.trimmed {
				want[HeaderTrimmed] = "true"
			}
			if len(got) != len(want) {
				t.Errorf("paydispatch headers %v, want %v", got, want)
			}
			for k, v := range want {
				if len(got[k]) != 1 || got[k][0] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
		})
	}

	// A trimmed letter drops a tenant-id that is no tenant id.
	bad := &kgo.Record{Topic: "in", Value: []byte("x"), Headers: []kgo.RecordHeader{{Key: HeaderTenant, Value: []byte(strings.Repeat("a", 65))}}}
	if d := in.deadLetter(bad, refusal{reason: "too large", trimmed: true}); len(d.Headers) != 7 {
		t.Fatalf("trimmed letter of a record with a bad tenant-id: %v", d.Headers)
	}
}

// TestTransient: the errors an outage gives hold a chunk; a value the
// database refuses, or an error of no known kind, does not.
func TestTransient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"connection lost", fmt.Errorf("store: %w", io.ErrUnexpectedEOF), true},
		{"a deadline", fmt.Errorf("store: %w", context.DeadlineExceeded), true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"serialization failure", fmt.Errorf("x: %w", &pgconn.PgError{Code: "40001"}), true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"Temporal unavailable", fmt.Errorf("start: %w", serviceerror.NewUnavailable("down")), true},
		{"Temporal overloaded", serviceerror.NewResourceExhausted(0, "busy"), true},
		{"a retriable Kafka error", fmt.Errorf("dead-letter: %w", kerr.NotLeaderForPartition), true},
		{"a record timed out", kgo.ErrRecordTimeout, true},
		{"a bad byte", &pgconn.PgError{Code: "22021"}, false},
		{"a value too long", fmt.Errorf("store: %w", &pgconn.PgError{Code: "22001"}), false},
		{"a check violated", &pgconn.PgError{Code: "23514"}, false},
		{"a message too large", kerr.MessageTooLarge, false},
		{"Temporal refuses an argument", serviceerror.NewInvalidArgument("no"), false},
		{"unknown", errors.New("something odd"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := transient(tt.err); got != tt.want {
				t.Fatalf("transient(%v) = %t, want %t", tt.err, got, tt.want)
			}
		})
	}
}
