package config_test

import (
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
)

func TestScreeningSettings(t *testing.T) {
	t.Parallel()
	def := config.Screening{Timeout: 2 * time.Second, Batch: 500, MaxInFlight: 4}
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    config.Screening
		wantErr string
	}{
		{name: "defaults: off", want: def},
		{name: "env", env: map[string]string{"PAYDISPATCH_SCREENING_URL": "http://screen:9092/v1/screen", "PAYDISPATCH_SCREENING_TIMEOUT": "500ms",
			"PAYDISPATCH_SCREENING_BATCH": "100", "PAYDISPATCH_SCREENING_MAX_IN_FLIGHT": "8"},
			want: config.Screening{URL: "http://screen:9092/v1/screen", Timeout: 500 * time.Millisecond, Batch: 100, MaxInFlight: 8}},
		{name: "flags win over env", env: map[string]string{"PAYDISPATCH_SCREENING_URL": "http://a"}, args: []string{"--screening-url", "https://b/screen"},
			want: config.Screening{URL: "https://b/screen", Timeout: 2 * time.Second, Batch: 500, MaxInFlight: 4}},
		{name: "url without scheme", args: []string{"--screening-url", "screen:9092"}, wantErr: `invalid --screening-url "screen:9092": want http(s)://`},
		{name: "batch too big", env: map[string]string{"PAYDISPATCH_SCREENING_BATCH": "5001"}, wantErr: `invalid PAYDISPATCH_SCREENING_BATCH "5001"`},
		{name: "timeout too short", args: []string{"--screening-timeout", "1ms"}, wantErr: `invalid --screening-timeout "1ms"`},
		{name: "no call in flight", args: []string{"--screening-max-in-flight", "0"}, wantErr: `invalid --screening-max-in-flight "0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s config.Screening
			err := parseWith(tt.env, tt.args, config.ScreeningSettings(&s)...)
			if tt.wantErr != "" {
				oneLine(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s != tt.want || s.On() != (tt.want.URL != "") {
				t.Fatalf("got %+v, want %+v", s, tt.want)
			}
		})
	}
}
