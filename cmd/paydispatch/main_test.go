package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/schema"
)

func runCLI(args []string, env map[string]string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	e := &environment{stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }}
	code = run(context.Background(), e, args)
	return code, out.String(), errOut.String()
}

// TestBadInput: bad input exits 2 with one line naming the flag or
// variable and the fix, and touches nothing (no database is opened).
func TestBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, nil, `unknown command "frobnicate"`},
		{"bad http addr flag", []string{"serve", "--http-addr", "8080"}, nil, `invalid --http-addr "8080": want host:port`},
		{"bad http addr env", []string{"serve"}, map[string]string{"PAYDISPATCH_HTTP_ADDR": "nope"}, `invalid PAYDISPATCH_HTTP_ADDR "nope"`},
		{"bad log level", []string{"migrate", "--log-level", "loud"}, nil, `invalid --log-level "loud": want debug, info, warn or error`},
		{"bad migrate action", []string{"migrate", "sideways"}, nil, `unexpected argument "sideways": want up or status`},
		{"unknown flag", []string{"serve", "--colour"}, nil, "flag provided but not defined: -colour"},
		{"bench unknown in --only", []string{"bench", "--only", "queue,nope"}, nil, `invalid --only "queue,nope": unknown benchmark "nope"`},
		{"chaos too few payments", []string{"chaos", "--payments", "5"}, nil, `invalid --payments "5": want a whole number from 100 to 1000000`},
		{"chaos kills too often", []string{"chaos", "--kill-every", "10ms"}, nil, `invalid --kill-every "10ms": want a duration of at least 1s`},
		{"chaos stray argument", []string{"chaos", "now"}, nil, `unexpected argument "now": chaos takes only flags`},
		{"temporal with an address", []string{"temporal", "--temporal-address", "127.0.0.1:7233"}, nil, "temporal runs a server, so TEMPORAL_ADDRESS (--temporal-address) must be empty"},
		{"temporal bad store", []string{"temporal", "--temporal-store", "mysql"}, nil, `invalid --temporal-store "mysql"`},
		{"demo too few payments", []string{"demo", "--payments", "5"}, nil, `invalid --payments "5": want a whole number from 100 to 1000000`},
		{"demo bad rate", []string{"demo", "--rate", "fast"}, nil, `invalid --rate "fast"`},
		{"demo bad store", []string{"demo", "--temporal-store", "mysql"}, nil, `invalid --temporal-store "mysql": want auto, postgres or sqlite`},
		{"demo existing data dir", []string{"demo", "--data-dir", "."}, nil, "--data-dir . exists: the demo starts from nothing"},
		{"worker role", []string{"worker", "--role", "everything"}, nil, `invalid --role "everything": want one or more of init, exec, dispatch`},
		{"worker without temporal", []string{"worker", "--role", "exec"}, nil, "worker needs TEMPORAL_ADDRESS"},
		{"config set without value", []string{"config", "set", "PAYMENT", "batch_size"}, nil, `"batch_size": want key=value`},
		{"bench bad rows", []string{"bench", "queue", "--rows", "ten"}, nil, `invalid --rows "ten"`},
		{"bench pipeline unknown design", []string{"bench", "pipeline", "--designs", "c"}, nil, `invalid --designs "c": want ab, a or b`},
		{"bench drain negative cap", []string{"bench", "drain", "--max-in-flight", "-2"}, nil, `invalid --max-in-flight "-2"`},
		{"bench drain too many pollers", []string{"bench", "drain", "--pollers", "65"}, nil, `invalid --pollers "65"`},
		{"bench drain unknown exec mode", []string{"bench", "drain", "--exec-mode", "FAST"}, nil, `invalid --exec-mode "FAST": want PER_ITEM or BATCH`},
		{"bench drain too many debtors", []string{"bench", "drain", "--debtors", "11"}, nil, `invalid --debtors "11": want a whole number from 1 to 10`},
		{"bench history no payments", []string{"bench", "history", "--payments", "0"}, nil, `invalid --payments "0"`},
		{"bench drain negative history", []string{"bench", "drain", "--history", "-1"}, nil, `invalid --history "-1"`},
		{"bench drain retention too short", []string{"bench", "drain", "--retention", "30s"}, nil, `invalid --retention "30s": want a duration of at least 1m0s`},
		{"embedded retention too short", []string{"serve"}, map[string]string{"PAYDISPATCH_TEMPORAL_RETENTION": "10s"}, `invalid PAYDISPATCH_TEMPORAL_RETENTION "10s": want a duration of at least 1m, e.g. 72h`},
		{"chaos unknown exec mode", []string{"chaos", "--exec-mode", "batch"}, nil, `invalid --exec-mode "batch": want PER_ITEM or BATCH`},
		{"demo unknown exec mode", []string{"demo", "--exec-mode", "both"}, nil, `invalid --exec-mode "both"`},
		{"dead-letters unknown subcommand", []string{"dead-letters", "revive"}, nil, `unknown subcommand "revive": want list or requeue`},
		{"dead-letters requeue nothing named", []string{"dead-letters", "requeue"}, nil, "name the dead letters to requeue (their ids, as listed), or --all with a filter"},
		{"dead-letters requeue ids and all", []string{"dead-letters", "requeue", "--all", "dispatch:PAYMENT:x"}, nil, "either ids or --all with a filter, not both"},
		{"dead-letters bad source", []string{"dead-letters", "list", "--source", "inbox"}, nil, "--source: dispatch or outbox"},
		{"dead-letters bad time", []string{"dead-letters", "list", "--from", "yesterday"}, nil, `--from "yesterday": want an RFC 3339 time`},
		{"dead-letters list with ids", []string{"dead-letters", "list", "outbox:x"}, nil, "list takes no ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCLI(tt.args, tt.env)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			last := strings.TrimSpace(stderr)
			if i := strings.LastIndex(last, "\n"); i >= 0 {
				last = last[i+1:] // the flag package prints its usage before
			}
			if !strings.Contains(last, tt.want) {
				t.Fatalf("last stderr line %q does not contain %q", last, tt.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"--help"}, {"serve", "--help"}, {"migrate", "-h"}, {"help", "bench"}, {"version", "--help"}} {
		code, stdout, _ := runCLI(args, nil)
		if code != 0 || !strings.Contains(stdout, "Usage: paydispatch") {
			t.Errorf("%v: exit %d, stdout %q", args, code, stdout)
		}
	}
	code, stdout, _ := runCLI([]string{"serve", "--help"}, nil)
	for _, want := range []string{"-http-addr", "PAYDISPATCH_HTTP_ADDR", "DATABASE_URL", "PAYDISPATCH_DATA_DIR"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("serve --help does not mention %s", want)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCLI([]string{"version"}, nil)
	if code != 0 || !strings.HasPrefix(stdout, "paydispatch ") || !strings.Contains(stdout, fmt.Sprintf("schema version %d", schema.Latest())) || schema.Latest() < 17 {
		t.Fatalf("exit %d: %q", code, stdout)
	}
}
