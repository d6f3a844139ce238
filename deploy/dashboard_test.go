package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDashboard: grafana/paydispatch.json is a dashboard Grafana imports
// as it is: every panel a titled timeseries or stat with its place on the
// grid (none overlapping), on the datasource variable, with queries, and
// every query is PromQL that Prometheus parses (promtool, on a rules file
// of one recording rule a query) and reads paydispatch's metrics only.
func TestDashboard(t *testing.T) {
	t.Parallel()
	var d struct {
		Title         string `json:"title"`
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct{ Name, Type, Query string } `json:"list"`
		} `json:"templating"`
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
		t.Errorf("title %q, uid %q, schemaVersion %d", d.Title, d.UID, d.SchemaVersion)
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct{ Name, Type, Query string }) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Errorf("no datasource variable of type prometheus in %+v", d.Templating.List)
	}
	panels, err := dashboardPanels()
	if err != nil {
		t.Fatal(err)
	}
	if len(panels) == 0 || len(panels) != len(d.Panels) {
		t.Fatalf("%d panels read of %d", len(panels), len(d.Panels))
	}
	const ds = "${datasource}"
	ids := map[int]string{}
	var rules []map[string]string
	for i, p := range panels {
		where := fmt.Sprintf("panel %d (%q)", i, p.Title)
		switch {
		case p.Title == "":
			t.Errorf("%s: no title", where)
		case p.Type != "timeseries" && p.Type != "stat":
			t.Errorf("%s: type %q, want timeseries or stat", where, p.Type)
		case p.ID <= 0:
			t.Errorf("%s: id %d", where, p.ID)
		case ids[p.ID] != "":
			t.Errorf("%s: id %d, also %s's", where, p.ID, ids[p.ID])
		}
		ids[p.ID] = where
		if g := p.GridPos; g == nil || g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v", where, g)
		} else {
			for _, o := range panels[:i] {
				if h := o.GridPos; h != nil && g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
					t.Errorf("%s overlaps %q", where, o.Title)
				}
			}
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != ds {
			t.Errorf("%s: datasource %+v, want prometheus %s", where, p.Datasource, ds)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no targets", where)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			switch {
			case strings.TrimSpace(q.Expr) == "":
				t.Errorf("%s: target %q without expr", where, q.RefID)
			case q.RefID == "" || refs[q.RefID]:
				t.Errorf("%s: refId %q missing or repeated", where, q.RefID)
			case q.Datasource != nil && (q.Datasource.Type != "prometheus" || q.Datasource.UID != ds):
				t.Errorf("%s: target %s datasource %+v", where, q.RefID, q.Datasource)
			}
			refs[q.RefID] = true
			names := ExprMetricNames(q.Expr)
			if len(names) == 0 {
				t.Errorf("%s: target %s reads no metric: %s", where, q.RefID, q.Expr)
			}
			for _, n := range names {
				if !strings.HasPrefix(n, "paydispatch_") {
					t.Errorf("%s: target %s reads %s, not one of paydispatch's metrics", where, q.RefID, n)
				}
			}
			rules = append(rules, map[string]string{
				"record": fmt.Sprintf("dashboard:panel_%d_%s", p.ID, q.RefID),
				"expr":   grafanaVars.Replace(q.Expr),
			})
		}
	}

	// JSON is YAML: promtool reads the rules file as it reads alerts.yml.
	file, err := json.MarshalIndent(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
}

// grafanaVars stands Grafana's interval variables in for promtool.
var grafanaVars = strings.NewReplacer("${__rate_interval}", "5m", "$__rate_interval", "5m",
	"${__interval}", "1m", "$__interval", "1m", "${__range}", "1h", "$__range", "1h")

// TestExprMetricNames: metric names only, a histogram's by its own name.
func TestExprMetricNames(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string]string{
		`histogram_quantile(0.99, sum by (item_type, le) (rate(paydispatch_dispatch_execution_lag_seconds_bucket[5m]))) > 5`: "paydispatch_dispatch_execution_lag_seconds",
		`sum(rate(x_sum[$__rate_interval])) / sum(rate(x_count[${__rate_interval}]))`:                                        "x x",
		`sum by (status) (paydispatch_queue_depth{status!="COMPLETED", item_type=~"PAY.*|on(x)"})`:                           "paydispatch_queue_depth",
		`max(a) by (le) > bool on (instance) group_left (job) b offset 5m unless c @ start()`:                                "a b c",
		`increase(total{state="FAILED"}[10m:1m]) > 1e3 and ignoring(call) topk(5, y) or count_values("v", z) > Inf`:          "total y z",
		`{__name__="ignored"} or sum without (le) (label_replace(w, "dst", "$1", "src", "(.*)"))`:                            "w",
		`paydispatch_webhook_dead_letters > 0`:                                                                               "paydispatch_webhook_dead_letters",
	} {
		if got := strings.Join(ExprMetricNames(expr), " "); got != want {
			t.Errorf("ExprMetricNames(%s) = %q, want %q", expr, got, want)
		}
	}
}

// TestMetricNames: the alert rules' and the dashboard's metrics, read
// whole, are names and nothing else.
func TestMetricNames(t *testing.T) {
	t.Parallel()
	alerts, err := alertExprs()
	if err != nil {
		t.Fatal(err)
	}
	if len(alerts) < 14 {
		t.Errorf("%d alert exprs", len(alerts))
	}
	names, err := MetricNames()
	if err != nil {
		t.Fatal(err)
	}
	valid := regexp.MustCompile(`^paydispatch_[a-z_]+[a-z]$`)
	for _, n := range names {
		if !valid.MatchString(n) || strings.HasSuffix(n, "_bucket") {
			t.Errorf("metric name %q", n)
		}
	}
	for _, n := range []string{"paydispatch_dispatch_execution_lag_seconds", "paydispatch_process_compensation_failed",
		"paydispatch_pacing_limit_per_second", "paydispatch_queue_depth", "paydispatch_outbox_in_flight", "paydispatch_webhook_dead_letters"} {
		if !slices.Contains(names, n) {
			t.Errorf("MetricNames has no %s: %q", n, names)
		}
	}
}

// TestTenantMetricsNeedTheirSetting: the metric that names tenants is
// exported only with PAYDISPATCH_METRICS_TENANT_LABELS=true, so no
// alert rule reads it (it would never fire by default), and a panel
// that does says which setting fills it.
func TestTenantMetricsNeedTheirSetting(t *testing.T) {
	t.Parallel()
	const metric, setting = "paydispatch_dispatch_executions_by_tenant_total", "PAYDISPATCH_METRICS_TENANT_LABELS=true"
	alerts, err := alertExprs()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range alerts {
		if slices.Contains(ExprMetricNames(e), metric) || strings.Contains(e, "tenant") {
			t.Errorf("an alert reads the tenants' executions, off by default: %s", e)
		}
	}
	panels, err := dashboardPanels()
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, p := range panels {
		for _, q := range p.Targets {
			if !slices.Contains(ExprMetricNames(q.Expr), metric) && !strings.Contains(q.Expr, "tenant") {
				continue
			}
			read++
			if !strings.Contains(p.Description, setting) {
				t.Errorf("panel %q reads %s, off by default, and its description does not name %s: %q", p.Title, metric, setting, p.Description)
			}
		}
	}
	if read == 0 {
		t.Logf("no panel reads %s", metric)
	}
}
