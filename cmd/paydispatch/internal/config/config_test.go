package config_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
)

func TestServerSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    config.Server
		wantErr string // substring of the one-line error
	}{
		{name: "defaults", want: config.Server{HTTPAddr: "127.0.0.1:8080", ShutdownTimeout: 30 * time.Second, MigrateOnStart: true, BulkChunkSize: 10000, DuplicateFileDays: 7, IdempotencyTTL: 24 * time.Hour, TokenRate: 200, AuthFailureLimit: 30, MaxBody: 65536, MaxBulkBody: 536870912}},
		{name: "env", env: map[string]string{"PAYDISPATCH_HTTP_ADDR": ":9090", "PAYDISPATCH_MIGRATE_ON_START": "false"},
			want: config.Server{HTTPAddr: ":9090", ShutdownTimeout: 30 * time.Second, MigrateOnStart: false, BulkChunkSize: 10000, DuplicateFileDays: 7, IdempotencyTTL: 24 * time.Hour, TokenRate: 200, AuthFailureLimit: 30, MaxBody: 65536, MaxBulkBody: 536870912}},
		{name: "flag wins over env", env: map[string]string{"PAYDISPATCH_HTTP_ADDR": ":9090"}, args: []string{"--http-addr", "0.0.0.0:7000"},
			want: config.Server{HTTPAddr: "0.0.0.0:7000", ShutdownTimeout: 30 * time.Second, MigrateOnStart: true, BulkChunkSize: 10000, DuplicateFileDays: 7, IdempotencyTTL: 24 * time.Hour, TokenRate: 200, AuthFailureLimit: 30, MaxBody: 65536, MaxBulkBody: 536870912}},
		{name: "tenant labels by env", env: map[string]string{"PAYDISPATCH_METRICS_TENANT_LABELS": "true"},
			want: config.Server{HTTPAddr: "127.0.0.1:8080", ShutdownTimeout: 30 * time.Second, MigrateOnStart: true, BulkChunkSize: 10000, DuplicateFileDays: 7, IdempotencyTTL: 24 * time.Hour, TokenRate: 200, AuthFailureLimit: 30, MaxBody: 65536, MaxBulkBody: 536870912, MetricsTenantLabels: true}},
		{name: "tenant labels by flag", args: []string{"--metrics-tenant-labels"},
			want: config.Server{HTTPAddr: "127.0.0.1:8080", ShutdownTimeout: 30 * time.Second, MigrateOnStart: true, BulkChunkSize: 10000, DuplicateFileDays: 7, IdempotencyTTL: 24 * time.Hour, TokenRate: 200, AuthFailureLimit: 30, MaxBody: 65536, MaxBulkBody: 536870912, MetricsTenantLabels: true}},
		{name: "bad tenant labels named", env: map[string]string{"PAYDISPATCH_METRICS_TENANT_LABELS": "acme"}, wantErr: `invalid PAYDISPATCH_METRICS_TENANT_LABELS "acme": want true or false`},
		{name: "bad flag named", args: []string{"--http-addr", "8080"}, wantErr: `invalid --http-addr "8080": want host:port`},
		{name: "bad env named", env: map[string]string{"PAYDISPATCH_SHUTDOWN_TIMEOUT": "soon"}, wantErr: `invalid PAYDISPATCH_SHUTDOWN_TIMEOUT "soon"`},
		{name: "auth failure limit off", env: map[string]string{"PAYDISPATCH_AUTH_FAILURE_LIMIT": "0"},
			want: config.Server{HTTPAddr: "127.0.0.1:8080", ShutdownTimeout: 30 * time.Second, MigrateOnStart: true, BulkChunkSize: 10000, DuplicateFileDays: 7, IdempotencyTTL: 24 * time.Hour, TokenRate: 200, MaxBody: 65536, MaxBulkBody: 536870912}},
		{name: "bad auth failure limit named", args: []string{"--auth-failure-limit", "-1"}, wantErr: `invalid --auth-failure-limit "-1": want a whole number from 0 to 1000000`},
		{name: "good flag hides bad env", env: map[string]string{"PAYDISPATCH_MIGRATE_ON_START": "maybe"}, args: []string{"--migrate=false"},
			want: config.Server{HTTPAddr: "127.0.0.1:8080", ShutdownTimeout: 30 * time.Second, MigrateOnStart: false, BulkChunkSize: 10000, DuplicateFileDays: 7, IdempotencyTTL: 24 * time.Hour, TokenRate: 200, AuthFailureLimit: 30, MaxBody: 65536, MaxBulkBody: 536870912}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var got config.Server
			set := config.NewSet(fs, func(k string) string { return tt.env[k] }, config.ServerSettings(&got)...)
			err := set.Parse(tt.args)
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

func TestDatabaseSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"--db-max-conns", "0"}, wantErr: "want a whole number from 1 to 1000"},
		{args: []string{"--database-url", "localhost"}, wantErr: "want a postgres:// URL"},
		{args: []string{"--database-url", "postgres://u@h/db"}},
		{args: []string{"--data-dir", ""}, wantErr: "want a directory path"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var d config.Database
		err := config.NewSet(fs, func(string) string { return "" }, config.DatabaseSettings(&d)...).Parse(tt.args)
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%v: err = %v, want %q", tt.args, err, tt.wantErr)
		}
	}
}
