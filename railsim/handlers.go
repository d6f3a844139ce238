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
	"github.com/paydispatch/paydispatch/internal/wait"
	"github.com/paydispatch/paydispatch/rail"
)

// maxBody bounds a request body the simulator reads.
const maxBody = 1 << 20

// rejectTrigger in an instruction's remittance information, followed by a
// code, makes the simulator refuse it with that code: a demo can plant
// refusals without touching the behaviour.
const rejectTrigger = "RAIL-REJECT:"

// Handler serves the rail API, the admin and ledger endpoints and
// /healthz. The admin and ledger endpoints answer only requests
// addressed to a loopback name (package loopback): they read and change
// the simulator with no token, so a web page whose name is rebound to
// the simulator's address must not reach them; from another machine,
// reach them through a tunnel or a port forward to localhost.
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+rail.PathInstructions, s.handleJSON)
	mux.HandleFunc("POST "+rail.PathPacs008, s.handlePacs008)
	mux.HandleFunc("GET "+rail.PathInstructions+"/{key}", s.handleInquiry)
	admin := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, loopback.Only(h)) }
	admin("GET /admin/behaviour", s.handleGetBehaviour)
	admin("PUT /admin/behaviour", s.handlePutBehaviour)
	admin("POST /admin/refusals/{key}/lift", func(w http.ResponseWriter, r *http.Request) {
		if !s.Lift(r.PathValue("key")) {
			writeJSON(w, http.StatusNotFound, rail.Answer{Code: "NOT_REFUSED", Message: "no refused instruction under this key"})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	admin("GET /ledger", s.handleLedger)
	admin("POST /ledger/reset", s.handleResetLedger)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return mux
}

// send is one send call as the rail read it.
type send struct {
	key, participant string
	seq              int64
	remittance       string
	// malformed is why the body cannot be processed (FF01), if it cannot.
	malformed string
}

func (s *Simulator) handleJSON(w http.ResponseWriter, r *http.Request) {
	s.handleSend(w, r, func(body []byte, c *send) {
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
			c.remittance = req.RemittanceInfo
		}
	})
}

func (s *Simulator) handlePacs008(w http.ResponseWriter, r *http.Request) {
	s.handleSend(w, r, func(body []byte, c *send) {
		t, err := rail.ParsePacs008(body)
		if err != nil {
			c.malformed = "pacs.008: " + err.Error()
			return
		}
		c.remittance = t.RemittanceInfo
	})
}

// handleSend is a send's life: headers, body, latency, the per-attempt
// retryable draw, the ledger (which decides and records acceptance or a
// terminal refusal once per key), the per-attempt timeout draw, answer.
func (s *Simulator) handleSend(w http.ResponseWriter, r *http.Request, parse func(body []byte, c *send)) {
	arrived := time.Now()
	c, err := sendHeaders(r)
	if err != nil {
		s.led.count(func(v *LedgerView) { v.Malformed++ })
		writeJSON(w, http.StatusBadRequest, rail.Answer{Status: rail.StatusRejected, Code: "FF01", Message: err.Error()})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		// A body that did not arrive whole is not an instruction the rail
		// can have taken: nothing is recorded.
		s.led.count(func(v *LedgerView) { v.Malformed++ })
		writeJSON(w, http.StatusBadRequest, rail.Answer{Status: rail.StatusRejected, Code: "FF01", Message: "body: " + err.Error()})
		return
	}
	parse(body, &c)

	b := s.Behaviour()
	if !wait.For(r.Context(), time.Duration(b.Latency)+s.jitter(time.Duration(b.Jitter))) {
		return // the client is gone
	}
	if s.chance(b.RetryableFraction) {
		s.led.count(func(v *LedgerView) { v.RetryableAnswers++ })
		status := http.StatusServiceUnavailable
		if b.RetryableCode == "RATE_LIMITED" {
			status = http.StatusTooManyRequests
		}
		writeJSON(w, status, rail.Answer{Code: b.RetryableCode, Message: "the rail did not take the instruction; send it again later"})
		return
	}

	rec, duplicate := s.led.take(c.key, c.participant, c.seq, arrived, func() (string, string) {
		switch {
		case c.malformed != "":
			return "FF01", c.malformed
		case triggeredCode(c.remittance) != "":
			return triggeredCode(c.remittance), "refused on request (" + rejectTrigger + ")"
		case keyFraction(b.Seed, c.key) < b.TerminalFraction:
			return b.TerminalCode, "refused (simulated)"
		}
		return "", ""
	})
	if c.malformed != "" {
		s.led.count(func(v *LedgerView) { v.Malformed++ })
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
		s.led.count(func(v *LedgerView) { v.TimeoutsAfterAccept++ })
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

func (s *Simulator) handleInquiry(w http.ResponseWriter, r *http.Request) {
	b := s.Behaviour()
	if !wait.For(r.Context(), time.Duration(b.Latency)+s.jitter(time.Duration(b.Jitter))) {
		return
	}
	rec, ok := s.led.lookup(r.PathValue("key"))
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

func (s *Simulator) handleLedger(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Ledger())
}

func (s *Simulator) handleResetLedger(w http.ResponseWriter, _ *http.Request) {
	s.ResetLedger()
	writeJSON(w, http.StatusOK, s.Ledger())
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
