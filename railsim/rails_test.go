package railsim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// clock is a settable clock for the simulator's Now.
type clock struct{ t atomic.Pointer[time.Time] }

func (c *clock) set(t time.Time)        { c.t.Store(&t) }
func (c *clock) now() time.Time         { return *c.t.Load() }
func newClock(t time.Time) *clock       { c := &clock{}; c.set(t); return c }
func at(c client, prefix string) client { return client{t: c.t, base: c.base + prefix} }

// TestSeveralRails: the simulator plays several rails at once, each
// under its own path prefix with its own ledger (the unprefixed routes
// are DEFAULT's); it records when each instruction arrived; and a rail
// with a cut-off refuses (TM01, which package rail classifies terminal)
// an instruction that arrives at or after the cut-off of its value date,
// recording it as refused.
func TestSeveralRails(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// instruction()'s value date is 2026-11-23; TARGET2-HV closes at 16:00
	// Berlin time.
	cutoff := time.Date(2026, 11, 23, 16, 0, 0, 0, berlin)
	clk := newClock(cutoff.Add(-time.Hour))
	sim := railsim.New(railsim.Options{
		Cutoffs: map[string]railsim.Cutoff{"TARGET2-HV": {TimeOfDay: 16 * time.Hour, Zone: berlin}},
		Now:     clk.now,
	})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	root := client{t: t, base: srv.URL}
	sepa, target2 := at(root, "/rails/SEPA"), at(root, "/rails/TARGET2-HV")

	// One key on three rails: three rails, three ledgers, no duplicate.
	for _, c := range []client{root, sepa, target2} {
		if status, a := c.send("k1", "p", 1, ""); status != http.StatusCreated || a.Status != rail.StatusAccepted {
			t.Fatalf("%s: %d %+v", c.base, status, a)
		}
	}
	// A pacs.008 through the adapter, at a base URL with a path prefix.
	pacs, err := rail.NewPacs008Rail(rail.Pacs008Config{Config: rail.Config{BaseURL: target2.base}})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(instruction("k2", ""))
	pm := outbox.Message{InstructionID: "k2", IdempotencyKey: "k2", ParticipantID: "p", SequenceID: 2, RailType: rail.RailPacs008, Payload: payload, Attempt: 1}
	firstArrival := clk.now()
	if got := pacs.Send(t.Context(), pm); got.Outcome != outbox.Delivered || !strings.HasPrefix(got.Reference, "SIM-TARGET2-HV-") {
		t.Fatalf("pacs.008 to TARGET2-HV: %+v", got)
	}

	// Late: at the cut-off and after it, TARGET2-HV refuses; SEPA (no
	// cut-off) takes the same.
	late := cutoff
	for i, when := range []time.Time{cutoff, cutoff.Add(26 * time.Hour)} {
		clk.set(when)
		key := []string{"late-1", "late-2"}[i]
		status, a := target2.send(key, "p", int64(3+i), "")
		if status != http.StatusUnprocessableEntity || a.Status != rail.StatusRejected || a.Code != railsim.CodeCutoff {
			t.Fatalf("at %v: %d %+v", when, status, a)
		}
		if outcome, _ := rail.ClassifyAnswer(status, a.Code); outcome != outbox.Terminal {
			t.Fatalf("%s is %s to the adapters, want terminal", a.Code, outcome)
		}
		if status, a := sepa.send(key, "p", int64(3+i), ""); status != http.StatusCreated {
			t.Fatalf("SEPA has no cut-off: %d %+v", status, a)
		}
	}
	// A refusal is the key's answer: the inquiry reports it.
	if status, a := target2.inquire("late-1"); status != http.StatusOK || a.Status != rail.StatusRejected || a.Code != railsim.CodeCutoff {
		t.Fatalf("inquiry of a late key: %d %+v", status, a)
	}
	// Each rail answers only for what it holds.
	if status, _ := at(root, "/rails/OTHER").inquire("k1"); status != http.StatusNotFound {
		t.Fatalf("a rail never sent to knows k1: %d", status)
	}
	if status, _ := root.inquire("k2"); status != http.StatusNotFound {
		t.Fatalf("DEFAULT knows TARGET2-HV's k2: %d", status)
	}

	var l railsim.LedgerView
	root.getJSON("/ledger?instructions=true", &l)
	if l.Rail != railsim.DefaultRail || l.Unique != 1 || len(l.Rails) != 3 {
		t.Fatalf("ledger %+v", l)
	}
	want := map[string]struct{ unique, refused, late int64 }{
		"DEFAULT": {1, 0, 0}, "SEPA": {3, 0, 0}, "TARGET2-HV": {2, 2, 2},
	}
	for name, w := range want {
		v := l.Rails[name]
		if v.Rail != name || v.Unique != w.unique || v.Refused != w.refused || v.Late != w.late || v.Duplicates != 0 {
			t.Errorf("%s: %+v, want unique %d refused %d late %d", name, v, w.unique, w.refused, w.late)
		}
		if len(v.Instructions) != int(w.unique+w.refused) {
			t.Errorf("%s: instructions %+v", name, v.Instructions)
		}
	}
	if v := l.Rails["TARGET2-HV"]; v.Cutoff != "16:00:00" || v.TimeZone != "Europe/Berlin" {
		t.Errorf("TARGET2-HV's cut-off shows as %q %q", v.Cutoff, v.TimeZone)
	}
	got := l.Rails["TARGET2-HV"].Instructions
	wantReceipts := []railsim.Receipt{
		{Key: "k1", ParticipantID: "p", SequenceID: 1, ValueDate: "2026-11-23", ReceivedAt: firstArrival, Status: "ACCEPTED"},
		{Key: "k2", ParticipantID: "p", SequenceID: 2, ValueDate: "2026-11-23", ReceivedAt: firstArrival, Status: "ACCEPTED"},
		{Key: "late-1", ParticipantID: "p", SequenceID: 3, ValueDate: "2026-11-23", ReceivedAt: late, Status: "REJECTED", Code: railsim.CodeCutoff},
		{Key: "late-2", ParticipantID: "p", SequenceID: 4, ValueDate: "2026-11-23", ReceivedAt: late.Add(26 * time.Hour), Status: "REJECTED", Code: railsim.CodeCutoff},
	}
	for i, w := range wantReceipts {
		if i >= len(got) {
			break
		}
		g := got[i]
		if g.Key != w.Key || g.SequenceID != w.SequenceID || g.ValueDate != w.ValueDate || !g.ReceivedAt.Equal(w.ReceivedAt) || g.Status != w.Status || g.Code != w.Code {
			t.Errorf("TARGET2-HV receipt %d: %+v, want %+v", i, g, w)
		}
	}
	// Without ?instructions the ledger stays counters.
	var counters railsim.LedgerView
	root.getJSON("/rails/TARGET2-HV/ledger", &counters)
	if counters.Instructions != nil || counters.Late != 2 {
		t.Fatalf("GET /rails/TARGET2-HV/ledger: %+v", counters)
	}
	if v, ok := sim.RailLedger("SEPA", true); !ok || len(v.Instructions) != 3 {
		t.Fatalf("RailLedger(SEPA): %+v", v)
	}
}

// TestPutRailCutoff: PUT /admin/rails/{name} sets a rail's cut-off at run
// time (a new rail is made), GET /admin/rails lists them, and bad input
// is a 400 problem that changes nothing.
func TestPutRailCutoff(t *testing.T) {
	t.Parallel()
	// 2026-11-23 15:30 UTC is 16:30 in Berlin.
	clk := newClock(time.Date(2026, 11, 23, 15, 30, 0, 0, time.UTC))
	sim := railsim.New(railsim.Options{Now: clk.now})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	root := client{t: t, base: srv.URL}
	put := func(name, body string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/admin/rails/"+name, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(raw)
	}

	if status, a := at(root, "/rails/SEPA").send("before", "p", 1, ""); status != http.StatusCreated {
		t.Fatalf("no cut-off yet: %d %+v", status, a)
	}
	status, _, body := put("SEPA", `{"cutoff":"16:00:00","timeZone":"Europe/Berlin"}`)
	var rs railsim.RailSettings
	if status != http.StatusOK || json.Unmarshal([]byte(body), &rs) != nil || rs != (railsim.RailSettings{Name: "SEPA", Cutoff: "16:00:00", TimeZone: "Europe/Berlin"}) {
		t.Fatalf("PUT: %d %s", status, body)
	}
	if status, a := at(root, "/rails/SEPA").send("after", "p", 2, ""); status != http.StatusUnprocessableEntity || a.Code != railsim.CodeCutoff {
		t.Fatalf("after the cut-off: %d %+v", status, a)
	}
	// The unprefixed routes are DEFAULT's, which has none.
	if status, _ := root.send("after", "p", 2, ""); status != http.StatusCreated {
		t.Fatalf("DEFAULT: %d", status)
	}
	// A new rail by PUT, at 17:00 UTC; then none again.
	if status, _, body := put("TARGET2-HV", `{"cutoff":"17:00"}`); status != http.StatusOK || !strings.Contains(body, `"timeZone":"UTC"`) {
		t.Fatalf("PUT TARGET2-HV: %d %s", status, body)
	}
	var rails []railsim.RailSettings
	root.getJSON("/admin/rails", &rails)
	if len(rails) != 3 || rails[0].Name != "DEFAULT" || rails[1] != rs || rails[2].Cutoff != "17:00:00" {
		t.Fatalf("GET /admin/rails: %+v", rails)
	}
	if status, _, _ := put("SEPA", `{"cutoff":""}`); status != http.StatusOK {
		t.Fatal(status)
	}
	if status, _ := at(root, "/rails/SEPA").send("after-2", "p", 3, ""); status != http.StatusCreated {
		t.Fatalf("cut-off lifted: %d", status)
	}

	for _, tc := range []struct{ name, body string }{
		{"SEPA", `{"cutoff":"25:00:00"}`},
		{"SEPA", `{"cutoff":"00:00"}`},
		{"SEPA", `{"cutoff":"16:00:00","timeZone":"Mars/Olympus"}`},
		{"SEPA", `{"cutoff":"16:00:00","timeZone":"Local"}`},
		{"SEPA", `{"cutoff":"16:00:00","zone":"UTC"}`},
		{"SEPA", `{"cutoff":16}`},
		{"SEPA", `{"cutoff":"16:00:00"} {}`},
		{"SEPA", `{"cutoff":"16:00:00"} }`},
		{"SEPA", `{"name":"OTHER","cutoff":"16:00:00"}`},
		{"SEPA", `not json`},
		{"bad%20name", `{"cutoff":"16:00:00"}`},
		{strings.Repeat("x", 65), `{"cutoff":"16:00:00"}`},
	} {
		status, ctype, body := put(tc.name, tc.body)
		var p struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		}
		if status != http.StatusBadRequest || ctype != "application/problem+json" || json.Unmarshal([]byte(body), &p) != nil || p.Status != 400 || p.Detail == "" {
			t.Errorf("PUT %s %s: %d %s %s, want a 400 problem", tc.name, tc.body, status, ctype, body)
		}
	}
	if v, _ := sim.RailLedger("SEPA", false); v.Cutoff != "" {
		t.Fatalf("a refused PUT changed SEPA: %+v", v)
	}
	if status, _ := at(root, "/rails/bad name").send("x", "p", 9, ""); status == http.StatusCreated {
		t.Fatal("a rail with a bad name took a send")
	}
}

func TestParseCutoffs(t *testing.T) {
	t.Parallel()
	got, err := railsim.ParseCutoffs(" SEPA=16:00:00@Europe/Berlin , DEFAULT=17:30,TARGET2-HV=24:00@UTC")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["SEPA"].TimeOfDay != 16*time.Hour || got["SEPA"].Zone.String() != "Europe/Berlin" ||
		got["DEFAULT"].TimeOfDay != 17*time.Hour+30*time.Minute || got["DEFAULT"].Zone != nil || got["TARGET2-HV"].TimeOfDay != 24*time.Hour {
		t.Fatalf("%+v", got)
	}
	if got, err := railsim.ParseCutoffs(""); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"SEPA", "SEPA=", "=16:00", "SEPA=4pm", "SEPA=16:00@Nowhere/City", "a b=16:00", "SEPA=16:00,SEPA=17:00", "SEPA=16:00,"} {
		if _, err := railsim.ParseCutoffs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := (railsim.Options{Cutoffs: map[string]railsim.Cutoff{"bad name": {TimeOfDay: time.Hour}}}).Validate(); err == nil {
		t.Error("a bad rail name in Options accepted")
	}
	if err := (railsim.Options{Cutoffs: map[string]railsim.Cutoff{"SEPA": {TimeOfDay: 25 * time.Hour}}}).Validate(); err == nil {
		t.Error("a cut-off at 25:00 in Options accepted")
	}
}
