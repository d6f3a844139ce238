package railsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/internal/loopback"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/internal/wait"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/routing"
)

// maxBody bounds a request body the simulator reads.
const maxBody = 1 << 20

// rejectTrigger in an instruction's remittance information, followed by a
// code, makes the simulator refuse it with that code: a demo can plant
// refusals without touching the behaviour.
const rejectTrigger = "RAIL-REJECT:"

// Handler serves the rail API, the admin and ledger endpoints and
// /healthz. The rail API is served at the root for DefaultRail and under
// /rails/{name} for every other rail (a rail is made by its first send).
// The admin and ledger endpoints answer only requests addressed to a
// loopback name (package loopback): they read and change the simulator
// with no token, so a web page whose name is rebound to the simulator's
// address must not reach them; from another machine, reach them through
// a tunnel or a port forward to localhost.
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, prefix := range []string{"", "/rails/{rail}"} {
		mux.HandleFunc("POST "+prefix+rail.PathInstructions, s.onRail(true, s.handleJSON))
		mux.HandleFunc("POST "+prefix+rail.PathPacs008, s.onRail(true, s.handlePacs008))
		mux.HandleFunc("GET "+prefix+rail.PathInstructions+"/{key}", s.handleInquiry)
	}
	admin := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, loopback.Only(h)) }
	admin("GET /admin/behaviour", s.handleGetBehaviour)
	admin("PUT /admin/behaviour", s.handlePutBehaviour)
	admin("GET /admin/rails", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Rails()) })
	admin("PUT /admin/rails/{rail}", s.handlePutRail)
	admin("POST /admin/refusals/{key}/lift", s.handleLift)
	admin("POST /admin/rails/{rail}/refusals/{key}/lift", s.handleLift)
	admin("GET /ledger", s.handleLedger)
	admin("GET /rails/{rail}/ledger", s.handleRailLedger)
	admin("POST /ledger/reset", s.handleResetLedger)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return mux
}

// onRail hands h the rail the path names ({rail}; none: DefaultRail),
// made on first use when create is set. A name no rail can have, or a
// rail past MaxRails, is 404 UNKNOWN_RAIL.
func (s *Simulator) onRail(create bool, h func(http.ResponseWriter, *http.Request, *simRail)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("rail")
		if name == "" {
			h(w, r, s.def)
			return
		}
		sr, err := s.railOrErr(name, create)
		if err != nil || sr == nil {
			msg := "no rail of that name"
			if err != nil {
				msg = err.Error()
			}
			writeJSON(w, http.StatusNotFound, rail.Answer{Code: "UNKNOWN_RAIL", Message: msg})
			return
		}
		h(w, r, sr)
	}
}

// send is one send call as the rail read it.
type send struct {
	key, participant string
	seq              int64
	remittance       string
	valueDate        string
	// malformed is why the body cannot be processed (FF01), if it cannot.
	malformed string
	// late: it arrived at or after the rail's cut-off for its value date.
	late bool
}

func (s *Simulator) handleJSON(w http.ResponseWriter, r *http.Request, sr *simRail) {
	s.handleSend(w, r, sr, func(body []byte, c *send) {
		req, err := rail.DecodeJSONRequest(body)
		if err == nil {
			err = rail.CheckInstruction(req.Instruction, rail.FormatJSON)
		}
		switch {
		case err != nil:
			c.malformed = err.Error()
		case req.ParticipantID != c.participant || req.SequenceID != c.seq:
			c.malformed = "participantId and sequenceId differ from the headers"
		default:
			c.remittance, c.valueDate = req.RemittanceInfo, req.ValueDate
		}
	})
}

func (s *Simulator) handlePacs008(w http.ResponseWriter, r *http.Request, sr *simRail) {
	s.handleSend(w, r, sr, func(body []byte, c *send) {
		t, err := rail.ParsePacs008(body)
		if err != nil {
			c.malformed = "pacs.008: " + err.Error()
			return
		}
		c.remittance, c.valueDate = t.RemittanceInfo, t.SettlementDate
	})
}

// handleSend is a send's life on rail sr: headers, body, latency, the
// per-attempt retryable draw, the ledger (which decides and records
// acceptance or a terminal refusal once per key: malformed, past the
// cut-off, planted, drawn), the per-attempt timeout draw, answer.
func (s *Simulator) handleSend(w http.ResponseWriter, r *http.Request, sr *simRail, parse func(body []byte, c *send)) {
	arrived := s.now()
	c, err := sendHeaders(r)
	if err != nil {
		sr.led.count(func(v *LedgerView) { v.Malformed++ })
		writeJSON(w, http.StatusBadRequest, rail.Answer{Status: rail.StatusRejected, Code: "FF01", Message: err.Error()})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		// A body that did not arrive whole is not an instruction the rail
		// can have taken: nothing is recorded.
		sr.led.count(func(v *LedgerView) { v.Malformed++ })
		writeJSON(w, http.StatusBadRequest, rail.Answer{Status: rail.StatusRejected, Code: "FF01", Message: "body: " + err.Error()})
		return
	}
	parse(body, &c)
	if at, ok := sr.cutoff.Load().at(c.valueDate); ok && c.malformed == "" {
		c.late = !arrived.Before(at)
	}

	b := s.Behaviour()
	if !wait.For(r.Context(), time.Duration(b.Latency)+s.jitter(time.Duration(b.Jitter))) {
		return // the client is gone
	}
	if s.chance(b.RetryableFraction) {
		sr.led.count(func(v *LedgerView) { v.RetryableAnswers++ })
		status := http.StatusServiceUnavailable
		if b.RetryableCode == "RATE_LIMITED" {
			status = http.StatusTooManyRequests
		}
		writeJSON(w, status, rail.Answer{Code: b.RetryableCode, Message: "the rail did not take the instruction; send it again later"})
		return
	}

	rec, duplicate := sr.led.take(c, arrived, func() (string, string) {
		switch {
		case c.malformed != "":
			return "FF01", c.malformed
		case c.late:
			return CodeCutoff, "received after the cut-off time for value date " + c.valueDate
		case triggeredCode(c.remittance) != "":
			return triggeredCode(c.remittance), "refused on request (" + rejectTrigger + ")"
		case keyFraction(b.Seed, c.key) < b.TerminalFraction:
			return b.TerminalCode, "refused (simulated)"
		}
		return "", ""
	})
	if c.malformed != "" {
		sr.led.count(func(v *LedgerView) { v.Malformed++ })
	}
	if !rec.accepted {
		status := http.StatusUnprocessableEntity
		if rec.code == "FF01" {
			status = http.StatusBadRequest
		}
		writeJSON(w, status, rail.Answer{Status: rail.StatusRejected, Code: rec.code, Message: rec.message})
		return
	}

	if s.chance(b.TimeoutFraction) {
		sr.led.count(func(v *LedgerView) { v.TimeoutsAfterAccept++ })
		mode := b.TimeoutMode
		if mode == TimeoutMixed {
			mode = TimeoutDelay
			if s.chance(0.5) {
				mode = TimeoutClose
			}
		}
		if mode == TimeoutClose {
			cut(w)
			return
		}
		if !wait.For(r.Context(), time.Duration(b.TimeoutDelay)) {
			return
		}
	}
	if duplicate {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusCreated, rail.Answer{Status: rail.StatusAccepted, Reference: rec.reference})
}

// sendHeaders reads the headers every send must carry.
func sendHeaders(r *http.Request) (send, error) {
	c := send{
		key:         r.Header.Get(rail.HeaderIdempotencyKey),
		participant: r.Header.Get(rail.HeaderParticipantID),
	}
	if c.key == "" {
		return c, fmt.Errorf("header %s: required", rail.HeaderIdempotencyKey)
	}
	if c.participant == "" {
		return c, fmt.Errorf("header %s: required", rail.HeaderParticipantID)
	}
	seq, err := strconv.ParseInt(r.Header.Get(rail.HeaderSequenceID), 10, 64)
	if err != nil || seq <= 0 {
		return c, fmt.Errorf("header %s: want a number greater than zero", rail.HeaderSequenceID)
	}
	c.seq = seq
	return c, nil
}

// triggeredCode returns the code after RAIL-REJECT: in remittance info
// (letters, digits and _), or "" when there is none.
func triggeredCode(remittance string) string {
	i := strings.Index(remittance, rejectTrigger)
	if i < 0 {
		return ""
	}
	rest := remittance[i+len(rejectTrigger):]
	n := 0
	for n < len(rest) && n < 35 && (rest[n] >= 'A' && rest[n] <= 'Z' || rest[n] >= '0' && rest[n] <= '9' || rest[n] == '_') {
		n++
	}
	return rest[:n]
}

// cut closes the connection without an answer, as a rail that crashed
// after committing would.
func cut(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): net/http's documented way to abort a
		// response, which its server recovers without logging.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// handleInquiry answers from the rail the path names; a rail never sent
// to holds nothing (404 NOT_FOUND) and is not made by the question.
func (s *Simulator) handleInquiry(w http.ResponseWriter, r *http.Request) {
	b := s.Behaviour()
	if !wait.For(r.Context(), time.Duration(b.Latency)+s.jitter(time.Duration(b.Jitter))) {
		return
	}
	sr := s.def
	if name := r.PathValue("rail"); name != "" {
		sr, _ = s.rail(name, false)
	}
	var rec record
	ok := false
	if sr != nil {
		rec, ok = sr.led.lookup(r.PathValue("key"))
	}
	switch {
	case !ok:
		writeJSON(w, http.StatusNotFound, rail.Answer{Code: "NOT_FOUND", Message: "no instruction under this idempotency key"})
	case rec.accepted:
		writeJSON(w, http.StatusOK, rail.Answer{Status: rail.StatusAccepted, Reference: rec.reference})
	default:
		writeJSON(w, http.StatusOK, rail.Answer{Status: rail.StatusRejected, Code: rec.code, Message: rec.message})
	}
}

func (s *Simulator) handleGetBehaviour(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Behaviour())
}

// handlePutBehaviour changes the fields the body names and keeps the
// others, so a chaos test can flip one knob and later flip it back.
func (s *Simulator) handlePutBehaviour(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body: " + err.Error()})
		return
	}
	b := s.Behaviour()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "behaviour: " + err.Error()})
		return
	}
	if err := s.SetBehaviour(b); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "behaviour: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, s.Behaviour())
}

// handleLedger answers Ledger(); with ?instructions=true every rail's
// view lists its instructions.
func (s *Simulator) handleLedger(w http.ResponseWriter, r *http.Request) {
	withInstructions, err := instructionsParam(r)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "Bad query", err.Error())
		return
	}
	v := s.Ledger()
	if withInstructions {
		v.Instructions = s.def.led.receipts()
		for name, rv := range v.Rails {
			if sr, ok := s.rail(name, false); ok {
				rv.Instructions = sr.led.receipts()
				v.Rails[name] = rv
			}
		}
	}
	writeJSON(w, http.StatusOK, v)
}

// handleRailLedger answers one rail's ledger (?instructions=true: with
// its instructions).
func (s *Simulator) handleRailLedger(w http.ResponseWriter, r *http.Request) {
	withInstructions, err := instructionsParam(r)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "Bad query", err.Error())
		return
	}
	v, ok := s.RailLedger(r.PathValue("rail"), withInstructions)
	if !ok {
		writeProblem(w, http.StatusNotFound, "No such rail", "no rail of that name has been sent to or configured")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func instructionsParam(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("instructions")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("instructions: want true or false")
	}
	return b, nil
}

// handlePutRail sets a rail's cut-off from {"cutoff":"16:00:00",
// "timeZone":"Europe/Berlin"} (cutoff "" or absent: none), making the
// rail when it is new, and answers its settings.
func (s *Simulator) handlePutRail(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("rail")
	if !routing.ValidName(name) {
		writeProblem(w, http.StatusBadRequest, "Bad rail name", errRailName.Error())
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "Bad body", "body: "+err.Error())
		return
	}
	var rs RailSettings
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rs); err != nil {
		writeProblem(w, http.StatusBadRequest, "Bad rail settings", `want {"cutoff":"HH:MM:SS","timeZone":"Area/City"}: `+err.Error())
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		writeProblem(w, http.StatusBadRequest, "Bad rail settings", "data after the JSON object")
		return
	}
	if rs.Name != "" && rs.Name != name {
		writeProblem(w, http.StatusBadRequest, "Bad rail settings", "name: differs from the path's rail")
		return
	}
	c, err := ParseCutoff(rs.Cutoff, rs.TimeZone)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "Bad rail settings", err.Error())
		return
	}
	if err := s.SetCutoff(name, c); err != nil {
		writeProblem(w, http.StatusConflict, "Too many rails", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, c.settings(name))
}

// handleLift lifts a refusal on the rail the path names (none:
// DefaultRail).
func (s *Simulator) handleLift(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("rail")
	lifted := false
	if name == "" {
		lifted = s.Lift(r.PathValue("key"))
	} else {
		lifted = s.LiftOn(name, r.PathValue("key"))
	}
	if !lifted {
		writeJSON(w, http.StatusNotFound, rail.Answer{Code: "NOT_REFUSED", Message: "no refused instruction under this key"})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Simulator) handleResetLedger(w http.ResponseWriter, _ *http.Request) {
	s.ResetLedger()
	writeJSON(w, http.StatusOK, s.Ledger())
}

// writeProblem answers an admin request it cannot take with an RFC 9457
// problem.
func writeProblem(w http.ResponseWriter, status int, title, detail string) {
	body, _ := json.Marshal(map[string]any{"type": "about:blank", "title": title, "status": status, "detail": plaintext.Clip(detail, 300)})
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"code":"INTERNAL","message":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
