package config_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/kafka"
)

// TestKafkaMaxRecordBytes: the intake's record limit defaults to the
// kafka package's, and one whose dead letter would be over the producer's
// limit is refused, naming the setting.
func TestKafkaMaxRecordBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    int
		wantErr string
	}{
		{name: "default", want: kafka.DefaultMaxRecordBytes},
		{name: "env", env: map[string]string{"PAYDISPATCH_KAFKA_MAX_RECORD_BYTES": "4096"}, want: 4096},
		{name: "the highest", args: []string{"--kafka-max-record-bytes", "995916"}, want: kafka.MaxRecordBytesLimit},
		{name: "over the producer's limit", args: []string{"--kafka-max-record-bytes", "995917"},
			wantErr: `invalid --kafka-max-record-bytes "995917": want a whole number from 1024 to 995916`},
		{name: "too small", env: map[string]string{"PAYDISPATCH_KAFKA_MAX_RECORD_BYTES": "100"},
			wantErr: `invalid PAYDISPATCH_KAFKA_MAX_RECORD_BYTES "100"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("kafka-intake", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var k config.Kafka
			err := config.NewSet(fs, func(v string) string { return tt.env[v] }, config.KafkaSettings(&k)...).Parse(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || k.MaxRecordBytes != tt.want {
				t.Fatalf("MaxRecordBytes %d (%v), want %d", k.MaxRecordBytes, err, tt.want)
			}
		})
	}
}

// TestShutdownSetting: every role's shutdown timeout, 30 s by default,
// from 1 s to 1 h.
func TestShutdownSetting(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		want    time.Duration
		wantErr string
	}{
		{nil, 30 * time.Second, ""},
		{[]string{"--shutdown-timeout", "5s"}, 5 * time.Second, ""},
		{[]string{"--shutdown-timeout", "0s"}, 0, `invalid --shutdown-timeout "0s": want a duration from 1s to 1h0m0s`},
	} {
		fs := flag.NewFlagSet("worker", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var d time.Duration
		err := config.NewSet(fs, func(string) string { return "" }, config.ShutdownSetting(&d)).Parse(tt.args)
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) || (err == nil && d != tt.want) {
			t.Errorf("%v: %v, %v; want %v, %q", tt.args, d, err, tt.want, tt.wantErr)
		}
	}
}
