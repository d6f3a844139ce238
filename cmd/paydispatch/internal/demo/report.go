package demo

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/svgchart"
)

// charts are the report's four charts, as inline SVG.
func charts(o Options, d *outcome) []template.HTML {
	// Queue status over time, sampled each second from the instant.
	var ready, dispatched, done []float64
	for _, s := range d.samples {
		if s.at < 0 {
			continue
		}
		ready = append(ready, float64(s.queue["READY"]))
		dispatched = append(dispatched, float64(s.queue["CLAIMED"]+s.queue["DISPATCHED"]))
		done = append(done, float64(s.queue["COMPLETED"]+s.queue["FAILED"]+s.queue["DEAD_LETTER"]))
	}
	// Intake → delivery, in 20 buckets.
	lat := append([]float64(nil), d.latencies...)
	sort.Float64s(lat)
	var hist []float64
	xLabel := "no payment delivered"
	if len(lat) > 0 {
		lo, hi := lat[0], lat[len(lat)-1]
		width := math.Max((hi-lo)/20, 0.001)
		hist = make([]float64, 20)
		for _, v := range lat {
			hist[min(int((v-lo)/width), 19)]++
		}
		xLabel = fmt.Sprintf("seconds from intake to DELIVERED, %.0f to %.0f in 20 buckets; p50 %.1f s, p99 %.1f s",
			lo, hi, lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)])
	}
	var names []string
	var shares []float64
	total := 0
	for _, t := range d.tenants {
		total += t.executed
	}
	for _, t := range d.tenants {
		names = append(names, fmt.Sprintf("%s (%.0f %%)", t.tenant, 100*float64(t.executed)/float64(max(total, 1))))
		shares = append(shares, float64(t.executed))
	}
	return []template.HTML{
		template.HTML(svgchart.Columns("Executions per second against the limit",
			fmt.Sprintf("seconds after the instant; red: the limit, %d/s; green: ±5 %%", o.Rate), d.perSecond, float64(o.Rate), 0.05)),
		template.HTML(svgchart.Lines("Queue items by status", "seconds after the instant",
			[]svgchart.Series{{Name: "READY", Values: ready}, {Name: "CLAIMED or DISPATCHED", Values: dispatched}, {Name: "settled", Values: done}})),
		template.HTML(svgchart.Columns("Intake to delivery", xLabel, hist, 0, 0)),
		template.HTML(svgchart.HBars("Executions per tenant", names, shares)),
	}
}

var reportPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>paydispatch demo report</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 900px; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 10px; text-align: left; }
td.n { text-align: right; }
.ok { color: #2e7d32; font-weight: bold; } .bad { color: #c62828; font-weight: bold; }
table.small td, table.small th { font-size: 90%; padding: 3px 6px; }
svg.chart { display: block; margin: 1.5em 0; max-width: 100%; height: auto; }
</style></head>
<body>
<h1>paydispatch demo</h1>
<p>{{.Payments}} payments due at {{.Instant}}, paced at {{.Rate}} a second; the last one settled {{.Drain}} after the instant; an execution started {{.LagP50}} ms after its slot at the median, {{.LagP99}} ms at the 99th percentile. Verification: {{if .Passed}}<span class="ok">passed</span>{{else}}<span class="bad">FAILED</span>{{end}}.</p>
<h2>Outcome</h2>
<table><tr><th>status</th><th>reason</th><th>payments</th></tr>
{{range .Rows}}<tr><td>{{.Status}}</td><td>{{.Reason}}</td><td class="n">{{.N}}</td></tr>
{{end}}</table>
{{with .Rails}}<h2>Rails</h2>
<p>Two rails on the rail simulator, in the zone {{.Zone}} (where the run is around midday, so that the cut-offs fall on its business day, {{.Day}}; times below are this machine's), on the calendar DEMO, which closes {{.Closed}}: a payment rolled past a cut-off executes on {{.Next}}. Single calls and cobalt's file go by URGENT, the rest by SEPA; the files were sent one after another, each once Phase A had placed the one before. Past a cut-off, acme's payments roll, bravo's are rejected and cobalt's are held.</p>
<table id="rails" class="small"><tr><th>rail</th><th>rate</th><th>cut-off</th><th>sent (returned)</th><th>rolled</th><th>held</th><th>rejected</th><th>projected finish at the instant</th><th>the last instruction received</th><th>before the cut-off by</th><th>received at or after it</th></tr>
{{range .Rows}}<tr data-rail="{{.Name}}"><td>{{.Name}}</td><td class="n">{{.Rate}}/s</td><td>{{.Cutoff}}</td><td class="n">{{.Received}} ({{.Returned}})</td><td class="n">{{.Rolled}}</td><td class="n">{{.Held}}</td><td class="n">{{.Rejected}}</td><td>{{.Finish}}</td><td>{{.LastReceived}}</td><td class="n">{{.Margin}}</td><td class="n {{if .AfterCutoff}}bad{{else}}ok{{end}}">{{.AfterCutoff}}</td></tr>
{{end}}</table>
<h3>Projected at intake, against what happened</h3>
<table id="projection"><tr><th>file</th><th>rail</th><th></th><th>before the cut-off</th><th>first slot</th><th>last slot</th><th>rolled</th><th>held</th><th>rejected</th></tr>
{{range .Projections}}<tr><td rowspan="2">{{.Tenant}}</td><td rowspan="2">{{.Rail}}</td><td>projected (the 202)</td><td class="n">{{.P.Before}}</td><td>{{.P.First}}</td><td>{{.P.Last}}</td><td class="n">{{.P.Rolled}}</td><td class="n">{{.P.Held}}</td><td class="n">{{.P.Rejected}}</td></tr>
<tr><td>placed by Phase A{{if .Refused}} ({{.Refused}} refused: unknown account){{end}}</td><td class="n">{{.A.Before}}</td><td>{{.A.First}}</td><td>{{.A.Last}}</td><td class="n">{{.A.Rolled}}</td><td class="n">{{.A.Held}}</td><td class="n">{{.A.Rejected}}</td></tr>
{{end}}</table>{{end}}
<h2>Verification</h2>
<table><tr><th></th><th>check</th><th>detail</th></tr>
{{range .Checks}}<tr><td>{{if .OK}}<span class="ok">ok</span>{{else}}<span class="bad">FAILED</span>{{end}}</td><td>{{.Name}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>
<h2>Charts</h2>
{{range .Charts}}{{.}}{{end}}
<script>
// Marks how many charts the browser laid out with a size: what the
// report's headless-browser test reads back.
window.addEventListener("load", function () {
  var n = 0;
  document.querySelectorAll("svg.chart").forEach(function (s) {
    var b = s.getBBox();
    if (b.width > 0 && b.height > 0 && s.querySelectorAll("rect, polyline").length > 0) { n++; }
  });
  document.body.setAttribute("data-charts-rendered", String(n));
});
</script>
</body></html>
`))

type outcomeRow struct {
	Status, Reason string
	N              int
}

func outcomeRows(d *outcome) []outcomeRow {
	rows := []outcomeRow{{"DELIVERED", "", d.final.payments["DELIVERED"]}}
	atCutoff := 0
	for _, r := range d.final.rails {
		atCutoff += r.held
	}
	if atCutoff > 0 {
		rows = append(rows, outcomeRow{"HELD", "CUTOFF: at its rail's cut-off, for an operator to release", atCutoff})
	}
	if n := d.final.payments["HELD"] - atCutoff; n > 0 {
		rows = append(rows, outcomeRow{"HELD", "DUPLICATE: a suspected duplicate, for an operator to release or cancel", n})
	}
	rolled := 0
	for _, r := range d.final.rails {
		rolled += r.rolled
	}
	if rolled > 0 {
		rows = append(rows, outcomeRow{"SCHEDULED", "ROLLED past its rail's cut-off to " + d.rails.Next, rolled})
	}
	for _, r := range d.reasons {
		rows = append(rows, outcomeRow{r.status, r.code, r.n})
	}
	if n := d.final.payments["CANCELLED"]; n > 0 {
		rows = append(rows, outcomeRow{"CANCELLED", "by its tenant, before the instant", n})
	}
	if d.sub.refused > 0 {
		rows = append(rows, outcomeRow{"refused at intake", "invalid line in a file", d.sub.refused})
	}
	return rows
}

func drainTime(d *outcome) time.Duration {
	return d.final.at.Round(time.Second)
}

// railsReport is the report's rails section (nil without rails).
type railsReport struct {
	Zone, Day, Closed, Next string
	Rows                    []railRow
	Projections             []projectionRow
}

type railRow struct {
	Name, Cutoff, LastReceived, Margin, Finish                     string
	Rate, Delivered, Returned, Rolled, Held, Rejected, AfterCutoff int
	Received                                                       int64
}

type projectionRow struct {
	Tenant, Rail string
	Refused      int
	P, A         projectionCells
}

type projectionCells struct {
	First, Last                    string
	Before, Rolled, Held, Rejected int
}

func railsOfReport(d *outcome) *railsReport {
	if d.rails == nil {
		return nil
	}
	rs := d.rails
	out := &railsReport{Zone: rs.Zone, Day: rs.Day, Closed: rs.Closed, Next: rs.Next}
	for _, r := range d.railsOut {
		row := railRow{Name: r.name, Rate: r.rate, Cutoff: clock(r.cutoff) + " (" + clockIn(r.cutoff, rs.Zone) + " " + rs.Zone + ")",
			Delivered: r.delivered, Returned: r.returned, Rolled: r.rolled, Held: r.held, Rejected: r.rejected, Received: r.received,
			AfterCutoff: r.afterCutoff + int(r.late), LastReceived: "-", Margin: "-", Finish: "-"}
		// What the live table showed as the payments fell due.
		for _, sm := range d.samples {
			if x := sm.rails[r.name]; sm.at >= 0 && x.finish != nil {
				row.Finish = clock(*x.finish)
				break
			}
		}
		if !r.lastReceived.IsZero() {
			row.LastReceived = clock(r.lastReceived)
			row.Margin = fmt.Sprintf("%.1f s", r.cutoff.Sub(r.lastReceived).Seconds())
		}
		out.Rows = append(out.Rows, row)
	}
	for _, f := range d.projections {
		p, a := f.projected, f.placed
		out.Projections = append(out.Projections, projectionRow{Tenant: f.tenant, Rail: f.rail, Refused: a.refused,
			P: projectionCells{First: optClock(p.FirstSlot), Last: optClock(p.LastSlot), Before: p.BeforeCutoff, Rolled: p.Rolled, Held: p.Held, Rejected: p.Rejected},
			A: projectionCells{First: ptrClock(a.first), Last: ptrClock(a.last), Before: a.day, Rolled: a.rolled, Held: a.held, Rejected: a.rejected}})
	}
	return out
}

func writeReport(path string, o Options, d *outcome, res Result) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer f.Close()
	err = reportPage.Execute(f, map[string]any{
		"Payments": d.sub.takenIn, "Instant": d.instant.Format(time.RFC3339), "Rate": o.Rate, "Drain": drainTime(d),
		"LagP50": fmt.Sprintf("%.0f", d.lagP50), "LagP99": fmt.Sprintf("%.0f", d.lagP99),
		"Passed": res.Passed(), "Rows": outcomeRows(d), "Checks": res.Checks, "Charts": charts(o, d), "Rails": railsOfReport(d),
	})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return f.Close()
}

func printSummary(w io.Writer, d *outcome, res Result) {
	fmt.Fprintf(w, "\nall %d payments settled %s after the instant; execution after its slot: p50 %.0f ms, p99 %.0f ms\n\n",
		d.sub.takenIn, drainTime(d), d.lagP50, d.lagP99)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "status\treason\tpayments")
	for _, r := range outcomeRows(d) {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", r.Status, r.Reason, r.N)
	}
	tw.Flush()
	if r := railsOfReport(d); r != nil {
		fmt.Fprintln(w, "\nrails:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "rail\tcut-off\tdelivered\treturned\trolled\theld\trejected\tlast received\tbefore the cut-off by\tafter it")
		for _, x := range r.Rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\n", x.Name, x.Cutoff, x.Delivered, x.Returned, x.Rolled, x.Held, x.Rejected,
				x.LastReceived, x.Margin, x.AfterCutoff)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nverification:")
	for _, c := range res.Checks {
		mark := "ok    "
		if !c.OK {
			mark = "FAILED"
		}
		fmt.Fprintf(w, "  %s  %s: %s\n", mark, c.Name, c.Detail)
	}
	if res.Report != "" {
		fmt.Fprintf(w, "\nreport: %s\n", res.Report)
	}
	if d.secondsOver > 0 {
		// Every window's slots were within the limit (checked above); an
		// execution starts after its slot, so a late one counts in a later
		// second.
		fmt.Fprintf(w, "note: %d full seconds counted more executions than the limit, by at most %d: an execution starts after its slot (p99 above), so late ones count in a later second; the slots were within the limit\n",
			d.secondsOver, d.mostOver)
	}
}
