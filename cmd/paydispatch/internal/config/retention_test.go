package config_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
)

func TestRetentionSettings(t *testing.T) {
	t.Parallel()
	defaults := config.Retention{QueueCompleted: 24 * time.Hour, DispatchAudit: 7 * 24 * time.Hour}
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    config.Retention
		wantErr string
	}{
		{name: "defaults", want: defaults},
		{name: "env", env: map[string]string{"PAYDISPATCH_RETENTION_QUEUE_COMPLETED": "2h", "PAYDISPATCH_RETENTION_DISPATCH_AUDIT": "720h"},
			want: config.Retention{QueueCompleted: 2 * time.Hour, DispatchAudit: 720 * time.Hour}},
		{name: "0 keeps all", env: map[string]string{"PAYDISPATCH_RETENTION_QUEUE_COMPLETED": "0"}, args: []string{"--retention-dispatch-audit", "0"},
			want: config.Retention{}},
		{name: "flag wins over env", env: map[string]string{"PAYDISPATCH_RETENTION_QUEUE_COMPLETED": "2h"}, args: []string{"--retention-queue-completed", "5m"},
			want: config.Retention{QueueCompleted: 5 * time.Minute, DispatchAudit: defaults.DispatchAudit}},
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
