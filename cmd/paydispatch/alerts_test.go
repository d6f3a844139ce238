package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// alertMetricsExist checks that every metric deploy/prometheus/alerts.yml
// reads is exported at base's /metrics: a rule on a name that is not
// there never fires.
func alertMetricsExist(t *testing.T, base string) {
	t.Helper()
	rules, err := os.ReadFile("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`paydispatch_[a-z_]+`).FindAllString(string(rules), -1)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) < 10 {
		t.Fatalf("read %d metric names from the rules", len(names))
	}
	exported := map[string]bool{}
	for line := range strings.SplitSeq(get(t, base+"/metrics"), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		exported[name] = true
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("the alert rules read %s, which /metrics does not export", n)
		}
	}
}
