package main

import (
	"strings"
	"testing"
	"time"
)

// TestStopBy: the parts stop in the reverse order of their start, and
// stopBy returns by its deadline whatever a part does: one that never
// returns is named, and left behind with those started before it.
func TestStopBy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		hang    string // the part that never returns ("": none)
		wantErr string
		want    string // the parts stopped, in order
	}{
		{"all stop", "", "", "c b a"},
		{"one hangs", "b", "b still stopping; exiting without it and the 1 parts started before it", "c"},
		{"the first started hangs", "a", "a still stopping; exiting without it and the 0 parts started before it", "c b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			never := make(chan struct{})
			t.Cleanup(func() { close(never) })
			stopped := make(chan string, 3)
			var p parts
			for _, name := range []string{"a", "b", "c"} {
				p.add(name, func() {
					if name == tt.hang {
						<-never
						return
					}
					stopped <- name
				})
			}
			const limit = 300 * time.Millisecond
			begun := time.Now()
			err := p.stopBy(begun.Add(limit))
			took := time.Since(begun)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("stopBy: %v, want %q", err, tt.wantErr)
			}
			if took > limit+200*time.Millisecond {
				t.Fatalf("stopBy took %v, over its limit of %v", took, limit)
			}
			var got []string
			for len(stopped) > 0 {
				got = append(got, <-stopped)
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("stopped %v, want %s", got, tt.want)
			}
			p.stopAll() // nothing left to stop
		})
	}
}
