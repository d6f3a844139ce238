package config_test

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/railsim"
)

// parseWith parses args and env into settings, as a command does.
func parseWith(env map[string]string, args []string, settings ...*config.Setting) error {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return config.NewSet(fs, func(k string) string { return env[k] }, settings...).Parse(args)
}

// oneLine fails unless err is a single line containing want.
func oneLine(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v, want one line containing %q", err, want)
	}
}

var defaultRelay = config.Relay{Notify: true, PollInterval: 500 * time.Millisecond, Debounce: 25 * time.Millisecond,
	Concurrency: 64, MaxAttempts: 8, BackoffBase: time.Second, BackoffMax: 5 * time.Minute, ReaperTimeout: 2 * time.Minute}

func TestRailAndRelaySettings(t *testing.T) {
	t.Parallel()
	with := func(f func(*config.Relay)) config.Relay {
		r := defaultRelay
		f(&r)
		return r
	}
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		wantRail  config.Rail
		wantRelay config.Relay
		wantErr   string // substring of the one-line error, from Parse or Check
	}{
		{name: "defaults", wantRail: config.Rail{Timeout: 10 * time.Second, ChargeBearer: "SLEV"}, wantRelay: defaultRelay},
		{name: "env", env: map[string]string{"PAYDISPATCH_RAIL_URL": "http://rail.internal:9090/prefix", "PAYDISPATCH_RAIL_TIMEOUT": "2s",
			"PAYDISPATCH_RELAY_NOTIFY": "false", "PAYDISPATCH_RELAY_CONCURRENCY": "8"},
			wantRail:  config.Rail{URL: "http://rail.internal:9090/prefix", Timeout: 2 * time.Second, ChargeBearer: "SLEV"},
			wantRelay: with(func(r *config.Relay) { r.Notify, r.Concurrency = false, 8 })},
		{name: "flags win over env", env: map[string]string{"PAYDISPATCH_RAIL_URL": "http://a:1"},
			args:     []string{"--rail-url", "https://b", "--relay-poll-interval", "0", "--relay-debounce", "5ms", "--relay-max-attempts", "3", "--relay-reaper-timeout", "5s", "--rail-timeout", "2s", "--relay-backoff-base", "20ms", "--relay-backoff-max", "1s"},
			wantRail: config.Rail{URL: "https://b", Timeout: 2 * time.Second, ChargeBearer: "SLEV"},
			wantRelay: with(func(r *config.Relay) {
				r.PollInterval, r.Debounce, r.MaxAttempts, r.ReaperTimeout, r.BackoffBase, r.BackoffMax = 0, 5*time.Millisecond, 3, 5*time.Second, 20*time.Millisecond, time.Second
			})},
		{name: "pacs.008", env: map[string]string{"PAYDISPATCH_PACS008_DEBTOR_AGENT_BIC": "NWBKGB2LXXX"}, args: []string{"--pacs008-charge-bearer", "SHAR"},
			wantRail: config.Rail{Timeout: 10 * time.Second, ChargeBearer: "SHAR", DebtorAgentBIC: "NWBKGB2LXXX"}, wantRelay: defaultRelay},
		{name: "debtor agent not a BIC", args: []string{"--pacs008-debtor-agent-bic", "nwbk"}, wantErr: `invalid --pacs008-debtor-agent-bic "nwbk": want a BIC`},
		{name: "charge bearer", env: map[string]string{"PAYDISPATCH_PACS008_CHARGE_BEARER": "ALL"}, wantErr: `invalid PAYDISPATCH_PACS008_CHARGE_BEARER "ALL": want SLEV, SHAR, DEBT or CRED`},
		{name: "rail url without scheme", args: []string{"--rail-url", "127.0.0.1:9090"}, wantErr: `invalid --rail-url "127.0.0.1:9090": want http(s)://host[:port][/prefix]`},
		{name: "rail url with query", env: map[string]string{"PAYDISPATCH_RAIL_URL": "http://h/?a=b"}, wantErr: `invalid PAYDISPATCH_RAIL_URL "http://h/?a=b"`},
		{name: "rail timeout", args: []string{"--rail-timeout", "forever"}, wantErr: `invalid --rail-timeout "forever": want a duration`},
		{name: "poll interval", args: []string{"--relay-poll-interval", "-1s"}, wantErr: `invalid --relay-poll-interval "-1s": want 0 (off) or a duration`},
		{name: "notify", env: map[string]string{"PAYDISPATCH_RELAY_NOTIFY": "sometimes"}, wantErr: `invalid PAYDISPATCH_RELAY_NOTIFY "sometimes": want true or false`},
		{name: "debounce", args: []string{"--relay-debounce", "2s"}, wantErr: `invalid --relay-debounce "2s": want a duration from 1ms to 1s`},
		{name: "concurrency", args: []string{"--relay-concurrency", "0"}, wantErr: `invalid --relay-concurrency "0": want a whole number from 1 to 4096`},
		{name: "max attempts", args: []string{"--relay-max-attempts", "x"}, wantErr: `invalid --relay-max-attempts "x"`},
		{name: "reaper timeout", args: []string{"--relay-reaper-timeout", "10ms"}, wantErr: `invalid --relay-reaper-timeout "10ms"`},
		{name: "nothing wakes the relayer", args: []string{"--relay-notify=false", "--relay-poll-interval", "0"}, wantErr: "leaves nothing to wake the relayer"},
		{name: "rail timeout over half the reaper's", args: []string{"--rail-timeout", "61s"}, wantErr: "--rail-timeout 1m1s (PAYDISPATCH_RAIL_TIMEOUT) is more than half of --relay-reaper-timeout 2m0s"},
		{name: "backoff base over max", args: []string{"--relay-backoff-base", "10m"}, wantErr: "--relay-backoff-base 10m0s is longer than --relay-backoff-max 5m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var rail config.Rail
			var relay config.Relay
			err := parseWith(tt.env, tt.args, append(config.RailSettings(&rail), config.RelaySettings(&relay)...)...)
			if err == nil {
				err = relay.Check(rail)
			}
			if tt.wantErr != "" {
				oneLine(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rail != tt.wantRail || relay != tt.wantRelay {
				t.Fatalf("got %+v %+v, want %+v %+v", rail, relay, tt.wantRail, tt.wantRelay)
			}
		})
	}
}

func TestMetricsSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env     map[string]string
		args    []string
		want    string
		wantErr string
	}{
		{want: "127.0.0.1:9091"},
		{args: []string{"--metrics-addr", ""}, want: ""},
		{args: []string{"--metrics-addr", "127.0.0.1:0"}, want: "127.0.0.1:0"},
		{env: map[string]string{"PAYDISPATCH_METRICS_ADDR": ":9100"}, want: ":9100"},
		{args: []string{"--metrics-addr", "9091"}, wantErr: `invalid --metrics-addr "9091": want host:port`},
		{env: map[string]string{"PAYDISPATCH_METRICS_ADDR": "h:port"}, wantErr: `invalid PAYDISPATCH_METRICS_ADDR "h:port"`},
	}
	for _, tt := range tests {
		var m config.Metrics
		err := parseWith(tt.env, tt.args, config.MetricsSettings(&m)...)
		if tt.wantErr != "" {
			oneLine(t, err, tt.wantErr)
			continue
		}
		if err != nil || m.Addr != tt.want {
			t.Errorf("%v %v: %q, %v; want %q", tt.env, tt.args, m.Addr, err, tt.want)
		}
	}
}

func TestRailSimSettings(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    config.RailSim
		wantErr string
	}{
		{name: "defaults: a perfect rail", want: config.RailSim{Addr: "127.0.0.1:9090"}},
		{name: "env", env: map[string]string{"PAYDISPATCH_RAIL_SIM_ADDR": "0.0.0.0:9999", "PAYDISPATCH_RAIL_SIM_LATENCY": "5ms",
			"PAYDISPATCH_RAIL_SIM_RETRYABLE_FRACTION": "0.05", "PAYDISPATCH_RAIL_SIM_SEED": "42"},
			want: config.RailSim{Addr: "0.0.0.0:9999", Latency: 5 * time.Millisecond, RetryableFraction: 0.05, Seed: 42}},
		{name: "flags", args: []string{"--http-addr", "127.0.0.1:0", "--jitter", "2ms", "--terminal-fraction", "0.01", "--timeout-fraction", "1"},
			want: config.RailSim{Addr: "127.0.0.1:0", Jitter: 2 * time.Millisecond, TerminalFraction: 0.01, TimeoutFraction: 1}},
		{name: "bad addr", args: []string{"--http-addr", "9090"}, wantErr: `invalid --http-addr "9090": want host:port, e.g. 127.0.0.1:9090`},
		{name: "bad addr env", env: map[string]string{"PAYDISPATCH_RAIL_SIM_ADDR": "localhost"}, wantErr: `invalid PAYDISPATCH_RAIL_SIM_ADDR "localhost"`},
		{name: "fraction over 1", args: []string{"--retryable-fraction", "1.5"}, wantErr: `invalid --retryable-fraction "1.5": want a fraction from 0 to 1`},
		{name: "fraction NaN", env: map[string]string{"PAYDISPATCH_RAIL_SIM_TERMINAL_FRACTION": "NaN"}, wantErr: `invalid PAYDISPATCH_RAIL_SIM_TERMINAL_FRACTION "NaN"`},
		{name: "negative latency", args: []string{"--latency", "-1ms"}, wantErr: `invalid --latency "-1ms": want a duration`},
		{name: "latency too long", args: []string{"--latency", "1h"}, wantErr: `invalid --latency "1h"`},
		{name: "bad seed", args: []string{"--seed", "-3"}, wantErr: `invalid --seed "-3": want a whole number`},
		{name: "cutoffs", env: map[string]string{"PAYDISPATCH_RAIL_SIM_CUTOFFS": "SEPA=16:00:00@Europe/Berlin,DEFAULT=17:30"},
			want: config.RailSim{Addr: "127.0.0.1:9090", Cutoffs: map[string]railsim.Cutoff{
				"SEPA": {TimeOfDay: 16 * time.Hour, Zone: berlin}, "DEFAULT": {TimeOfDay: 17*time.Hour + 30*time.Minute}}}},
		{name: "bad cutoff", args: []string{"--cutoffs", "SEPA=4pm"}, wantErr: `invalid --cutoffs "SEPA=4pm": rail SEPA: cutoff "4pm": want HH:MM:SS`},
		{name: "bad cutoff zone", args: []string{"--cutoffs", "SEPA=16:00@Mars/Base"}, wantErr: `timeZone "Mars/Base": want an IANA time zone name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got config.RailSim
			err := parseWith(tt.env, tt.args, config.RailSimSettings(&got)...)
			if tt.wantErr != "" {
				oneLine(t, err, tt.wantErr)
				return
			}
			// Zones compare by name: a zone is loaded once per process.
			cutoffs := func(c map[string]railsim.Cutoff) string {
				var parts []string
				for name, x := range c {
					zone := "UTC"
					if x.Zone != nil {
						zone = x.Zone.String()
					}
					parts = append(parts, fmt.Sprintf("%s=%v@%s", name, x.TimeOfDay, zone))
				}
				slices.Sort(parts)
				return strings.Join(parts, ",")
			}
			gotCutoffs, wantCutoffs := cutoffs(got.Cutoffs), cutoffs(tt.want.Cutoffs)
			got.Cutoffs, tt.want.Cutoffs = nil, nil
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) || gotCutoffs != wantCutoffs {
				t.Fatalf("got %+v %s, %v; want %+v %s", got, gotCutoffs, err, tt.want, wantCutoffs)
			}
		})
	}
}
