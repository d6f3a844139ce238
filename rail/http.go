package rail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/outbox"
)

// Rail types served by the adapters of this package, as the outbox's
// rail_type column names them.
const (
	RailSEPAJSON = "SEPA_JSON"
	RailPacs008  = "PACS008"
)

// HTTPRail delivers instructions as JSON to a rail's HTTP API (doc.go).
// It implements outbox.Sender and is safe for concurrent use.
type HTTPRail struct {
	railType string
	call     *caller
}

// NewHTTPRail returns a JSON rail for cfg (RailType defaults to
// RailSEPAJSON).
func NewHTTPRail(cfg Config) (*HTTPRail, error) {
	c, err := newCaller(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.RailType == "" {
		cfg.RailType = RailSEPAJSON
	}
	return &HTTPRail{railType: cfg.RailType, call: c}, nil
}

// Type is the rail type this rail serves.
func (r *HTTPRail) Type() string { return r.railType }

// Validate checks m before any call; an error is a terminal failure.
func (r *HTTPRail) Validate(m outbox.Message) error {
	_, err := parseMessage(m, r.railType, FormatJSON, "")
	return err
}

// Send POSTs the instruction once. An invalid message is Terminal and is
// not sent.
func (r *HTTPRail) Send(ctx context.Context, m outbox.Message) outbox.Result {
	in, err := parseMessage(m, r.railType, FormatJSON, "")
	if err != nil {
		return invalid(err)
	}
	body, err := json.Marshal(JSONRequest{Instruction: in, ParticipantID: m.ParticipantID, SequenceID: m.SequenceID})
	if err != nil {
		return invalid(fmt.Errorf("encoding the request: %w", err))
	}
	return r.call.send(ctx, PathInstructions, "application/json", body, m)
}

// Inquire asks the rail what it holds under m's idempotency key.
func (r *HTTPRail) Inquire(ctx context.Context, m outbox.Message) outbox.Result {
	if err := CheckMessage(m); err != nil {
		return outbox.Result{Outcome: outbox.Unknown, Code: CodeInvalidPayload, Message: err.Error()}
	}
	return r.call.inquire(ctx, m)
}

// parseMessage checks everything Validate checks and returns the decoded
// instruction, its debtor's BIC defaulted to debtorAgent.
func parseMessage(m outbox.Message, railType string, f Format, debtorAgent string) (Instruction, error) {
	var fields []field.Error
	collect := func(err error) {
		var ve *field.Invalid
		if errors.As(err, &ve) {
			fields = append(fields, ve.Fields...)
		}
	}
	if m.RailType != railType {
		fields = append(fields, field.Error{Field: "railType", Detail: fmt.Sprintf("%q is not this rail's type %q", plaintext.Clip(m.RailType, 32), railType)})
	}
	collect(CheckMessage(m))
	in, err := DecodeInstruction(m.Payload)
	if err != nil {
		collect(err)
	} else {
		if in.Debtor.BIC == "" {
			in.Debtor.BIC = debtorAgent
		}
		collect(CheckInstruction(in, f))
	}
	if len(fields) > 0 {
		return Instruction{}, badInstruction(fields...)
	}
	return in, nil
}

func invalid(err error) outbox.Result {
	return outbox.Result{Outcome: outbox.Terminal, Code: CodeInvalidPayload, Message: err.Error()}
}
