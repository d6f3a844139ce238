package main

import (
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/deploy"
)

// alertMetricsExist checks that every metric deploy/prometheus/alerts.yml
// and deploy/grafana/paydispatch.json read is exported at base's
// /metrics: a rule on a name that is not there never fires, and a panel
// on one stays empty. A histogram counts as exported by its _bucket,
// _sum and _count series.
func alertMetricsExist(t *testing.T, base string) {
	t.Helper()
	names, err := deploy.MetricNames()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("read %d metric names from the rules and the dashboard", len(names))
	}
	exported, types := map[string]bool{}, map[string]string{}
	var samples []string
	for line := range strings.SplitSeq(get(t, base+"/metrics"), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		samples = append(samples, name)
	}
	for _, name := range samples {
		exported[name] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if family, ok := strings.CutSuffix(name, suffix); ok && (types[family] == "histogram" || types[family] == "summary") {
				exported[family] = true
			}
		}
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("the alert rules or the dashboard read %s, which /metrics does not export", n)
		}
	}
}
