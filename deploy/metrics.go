package deploy

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// alertRules is prometheus/alerts.yml; dashboard is grafana/paydispatch.json.
var (
	//go:embed prometheus/alerts.yml
	alertRules []byte
	//go:embed grafana/paydispatch.json
	dashboard []byte
)

// MetricNames are the metrics the alert rules and the dashboard read,
// sorted, each once: a histogram read as _bucket, _sum or _count by its
// own name. Every one must be exported at serve's /metrics (the cmd
// tests check it).
func MetricNames() ([]string, error) {
	alerts, err := alertExprs()
	if err != nil {
		return nil, err
	}
	panels, err := dashboardExprs()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range slices.Concat(alerts, panels) {
		names = append(names, ExprMetricNames(e)...)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

var exprLine = regexp.MustCompile(`(?m)^\s*expr:\s*(.*?)\s*$`)

// alertExprs are the alert rules' expressions, in order. Each must be on
// its expr line (a YAML block scalar is refused): the rules file is read
// without a YAML parser.
func alertExprs() ([]string, error) {
	var out []string
	for _, m := range exprLine.FindAllStringSubmatch(string(alertRules), -1) {
		e := m[1]
		switch {
		case e == "" || strings.HasPrefix(e, "|") || strings.HasPrefix(e, ">"):
			return nil, fmt.Errorf("alerts.yml: an expr on lines of its own (%q): keep each on its expr line", e)
		case len(e) >= 2 && (e[0] == '"' || e[0] == '\'') && e[len(e)-1] == e[0]:
			if e[0] == '"' {
				if err := json.Unmarshal([]byte(e), &e); err != nil {
					return nil, fmt.Errorf("alerts.yml: expr %s: %w", m[1], err)
				}
			} else {
				e = strings.ReplaceAll(e[1:len(e)-1], "''", "'")
			}
		}
		out = append(out, e)
	}
	if n := strings.Count(string(alertRules), "- alert:"); n != len(out) {
		return nil, fmt.Errorf("alerts.yml: %d alerts, %d exprs read", n, len(out))
	}
	return out, nil
}

// dashboardPanel is what the dashboard's checks read of a panel.
type dashboardPanel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	GridPos     *struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Datasource *struct {
		Type, UID string
	} `json:"datasource"`
	Targets []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource *struct {
			Type, UID string
		} `json:"datasource"`
	} `json:"targets"`
}

// dashboardPanels reads the dashboard's panels.
func dashboardPanels() ([]dashboardPanel, error) {
	var d struct {
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		return nil, fmt.Errorf("grafana/paydispatch.json: %w", err)
	}
	return d.Panels, nil
}

// dashboardExprs are the dashboard's queries, panel by panel.
func dashboardExprs() ([]string, error) {
	panels, err := dashboardPanels()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range panels {
		for _, t := range p.Targets {
			out = append(out, t.Expr)
		}
	}
	return out, nil
}

var (
	// Quoted strings: label values, and regular expressions in them.
	promString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'` + "|`[^`]*`")
	// Label matchers, ranges and subqueries, and Grafana's variables.
	promBraces = regexp.MustCompile(`\{[^{}]*\}|\[[^\[\]]*\]|\$\{[^}]*\}|\$\w+`)
	// Label lists: by (...), without (...), on (...), ignoring (...),
	// group_left (...), group_right (...).
	promLabelList = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	// An identifier (a number's exponent or unit is consumed with it),
	// and whether a call's parenthesis follows.
	promToken = regexp.MustCompile(`[0-9][0-9a-zA-Z_.]*|([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?`)
)

// promKeywords are PromQL's words that are not metrics.
var promKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true,
	"on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true,
	"atan2": true, "start": true, "end": true,
}

// ExprMetricNames are the metric names a PromQL expression reads (in
// order, repeats kept): not its functions and aggregations, label names
// and values, keywords, numbers and durations, nor Grafana's variables.
// A name ending in _bucket, _sum or _count is given as its histogram's.
func ExprMetricNames(expr string) []string {
	s := promString.ReplaceAllString(expr, `""`)
	for {
		t := promBraces.ReplaceAllString(s, " ")
		if t == s {
			break
		}
		s = t
	}
	s = promLabelList.ReplaceAllString(s, " ")
	var out []string
	for _, m := range promToken.FindAllStringSubmatch(s, -1) {
		name, call := m[1], m[2]
		if name == "" || call != "" || promKeywords[strings.ToLower(name)] {
			continue
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && base != "" {
				name = base
				break
			}
		}
		out = append(out, name)
	}
	return out
}
