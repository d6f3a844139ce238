package rail

// The rail HTTP API (doc.go describes it in full).
const (
	PathInstructions = "/v1/instructions"
	PathPacs008      = "/v1/pacs008"

	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderParticipantID  = "X-Participant-Id"
	HeaderSequenceID     = "X-Sequence-Id"

	StatusAccepted = "ACCEPTED"
	StatusRejected = "REJECTED"
)

// JSONRequest is the body of POST /v1/instructions: the instruction and
// its place in the participant's sequence.
type JSONRequest struct {
	Instruction
	ParticipantID string `json:"participantId"`
	SequenceID    int64  `json:"sequenceId"`
}

var jsonRequestFields = func() map[string]bool {
	m := fieldSet("participantId", "sequenceId")
	for k := range instructionFields {
		m[k] = true
	}
	return m
}()

// DecodeJSONRequest decodes a JSON rail request as strictly as
// DecodeInstruction decodes a payload (the rail side uses it).
func DecodeJSONRequest(body []byte) (JSONRequest, error) {
	var r JSONRequest
	if err := decodeStrict(body, jsonRequestFields, &r); err != nil {
		return JSONRequest{}, err
	}
	return r, nil
}

// Answer is the body of every rail answer: an acceptance (Status
// ACCEPTED, Reference), a refusal (Status REJECTED or an error status,
// Code, Message), or an inquiry's report of either.
type Answer struct {
	Status    string `json:"status,omitempty"`
	Reference string `json:"reference,omitempty"`
	Code      string `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
}
