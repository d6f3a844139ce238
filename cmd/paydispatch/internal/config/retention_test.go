package config_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/retention"
	"github.com/paydispatch/paydispatch/webhook"
)

func TestRetentionSettings(t *testing.T) {
	t.Parallel()
	// The defaults are the owning packages' own.
	defaults := config.Retention{QueueCompleted: queue.DefaultCompletedRetention, DispatchAudit: queue.DefaultAuditRetention,
		ProcessEnded: process.DefaultEndedRetention, OutboxDone: outbox.DefaultDoneRetention, Pacing: pacing.DefaultSlotRetention,
		WebhookDelivered: webhook.DefaultDeliveredRetention, PaymentNotifications: payment.DefaultNotificationRetention,
		FileFingerprints: payment.DefaultFingerprintRetention, Interval: retention.DefaultInterval}
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    config.Retention
		wantErr string
	}{
		{name: "defaults", want: defaults},
		{name: "env", env: map[string]string{"PAYDISPATCH_RETENTION_QUEUE_COMPLETED": "2h", "PAYDISPATCH_RETENTION_DISPATCH_AUDIT": "720h",
			"PAYDISPATCH_RETENTION_PROCESS_ENDED": "1h", "PAYDISPATCH_RETENTION_OUTBOX_DONE": "2h", "PAYDISPATCH_RETENTION_PACING": "3h",
			"PAYDISPATCH_RETENTION_WEBHOOK_DELIVERED": "4h", "PAYDISPATCH_RETENTION_PAYMENT_NOTIFICATIONS": "5h", "PAYDISPATCH_RETENTION_FILE_FINGERPRINTS": "6h"},
			want: config.Retention{QueueCompleted: 2 * time.Hour, DispatchAudit: 720 * time.Hour, ProcessEnded: time.Hour, OutboxDone: 2 * time.Hour,
				Pacing: 3 * time.Hour, WebhookDelivered: 4 * time.Hour, PaymentNotifications: 5 * time.Hour, FileFingerprints: 6 * time.Hour, Interval: time.Minute}},
		{name: "interval of seconds", env: map[string]string{"PAYDISPATCH_RETENTION_INTERVAL": "15s"},
			want: func() config.Retention { r := defaults; r.Interval = 15 * time.Second; return r }()},
		{name: "interval under a second refused", args: []string{"--retention-interval", "500ms"},
			wantErr: `invalid --retention-interval "500ms": want a duration from 1s`},
		{name: "0 keeps all", env: map[string]string{"PAYDISPATCH_RETENTION_QUEUE_COMPLETED": "0", "PAYDISPATCH_RETENTION_PROCESS_ENDED": "0",
			"PAYDISPATCH_RETENTION_OUTBOX_DONE": "0", "PAYDISPATCH_RETENTION_PACING": "0", "PAYDISPATCH_RETENTION_WEBHOOK_DELIVERED": "0",
			"PAYDISPATCH_RETENTION_PAYMENT_NOTIFICATIONS": "0", "PAYDISPATCH_RETENTION_FILE_FINGERPRINTS": "0"}, args: []string{"--retention-dispatch-audit", "0"},
			want: config.Retention{Interval: time.Minute}},
		{name: "flag wins over env", env: map[string]string{"PAYDISPATCH_RETENTION_QUEUE_COMPLETED": "2h"}, args: []string{"--retention-queue-completed", "5m"},
			want: func() config.Retention { r := defaults; r.QueueCompleted = 5 * time.Minute; return r }()},
		{name: "under a minute refused", env: map[string]string{"PAYDISPATCH_RETENTION_QUEUE_COMPLETED": "30s"},
			wantErr: `invalid PAYDISPATCH_RETENTION_QUEUE_COMPLETED "30s": want a duration from 1m0s`},
		{name: "not a duration", args: []string{"--retention-dispatch-audit", "week"},
			wantErr: `invalid --retention-dispatch-audit "week"`},
		{name: "negative refused", env: map[string]string{"PAYDISPATCH_RETENTION_DISPATCH_AUDIT": "-1h"},
			wantErr: `invalid PAYDISPATCH_RETENTION_DISPATCH_AUDIT "-1h"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var got config.Retention
			err := config.NewSet(fs, func(k string) string { return tt.env[k] }, config.RetentionSettings(&got)...).Parse(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The delivered webhooks' retention moved to the cleaner under a new
// name: a value for the old one fails the start instead of being ignored.
func TestWebhookRetentionRenamed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
	}{
		{name: "unset", wantErr: ""},
		{name: "env", env: map[string]string{"PAYDISPATCH_WEBHOOK_RETENTION": "72h"},
			wantErr: `invalid PAYDISPATCH_WEBHOOK_RETENTION "72h": renamed: set PAYDISPATCH_RETENTION_WEBHOOK_DELIVERED`},
		{name: "flag", args: []string{"--webhook-retention", "0"},
			wantErr: `invalid --webhook-retention "0": renamed: set PAYDISPATCH_RETENTION_WEBHOOK_DELIVERED`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var w config.Webhooks
			err := config.NewSet(fs, func(k string) string { return tt.env[k] }, config.WebhookSettings(&w)...).Parse(tt.args)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line containing %q", err, tt.wantErr)
			}
		})
	}
}
