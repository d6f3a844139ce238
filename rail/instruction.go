package rail

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"

	"github.com/paydispatch/paydispatch/internal/txdetail"
)

// Instruction is the payload the payment domain puts in outbox.Message:
// one credit transfer, in rail-neutral terms. doc.go documents the JSON.
type Instruction struct {
	PaymentID  string `json:"paymentId"`
	EndToEndID string `json:"endToEndId"`
	// Amount is a plain decimal string ("125.00"), never a JSON number:
	// a number passes through float64 in too many decoders.
	Amount         string   `json:"amount"`
	Currency       string   `json:"currency"`
	ValueDate      string   `json:"valueDate"`
	Debtor         Debtor   `json:"debtor"`
	Creditor       Creditor `json:"creditor"`
	RemittanceInfo string   `json:"remittanceInfo,omitempty"`
	TenantID       string   `json:"tenantId"`
	// Details are the payment's optional details, each declared once in
	// package txdetail: its JSON members, checks and ISO paths.
	txdetail.Details
}

// Debtor is the paying party. Account is the debtor's account at its
// bank in whatever form the bank keeps it; IBAN and BIC are optional
// except where a rail needs them (pacs.008 needs the BIC).
type Debtor struct {
	Name    string `json:"name"`
	Account string `json:"account"`
	IBAN    string `json:"iban,omitempty"`
	BIC     string `json:"bic,omitempty"`
}

// Creditor is the receiving party, reachable by IBAN (and BIC, which
// pacs.008 rails need).
type Creditor struct {
	Name string `json:"name"`
	IBAN string `json:"iban"`
	BIC  string `json:"bic,omitempty"`
}

// MaxPayloadBytes bounds an instruction's JSON: a real one is under 1 KiB.
const MaxPayloadBytes = 16 << 10

// The exact member names of each object. encoding/json matches names
// case-insensitively, so {"amount":"1","AMOUNT":"1000"} would decode to
// whichever comes last while a JSONB column or another reader keeps both:
// two readers disagreeing about an amount. Names are therefore checked
// byte for byte before the struct is decoded.
var (
	instructionFields = fieldSet(append([]string{"paymentId", "endToEndId", "amount", "currency", "valueDate", "debtor", "creditor", "remittanceInfo", "tenantId"},
		detailNames()...)...)
	debtorFields   = fieldSet("name", "account", "iban", "bic")
	creditorFields = fieldSet("name", "iban", "bic")
)

// detailNames are txdetail.Details' member names.
func detailNames() []string {
	var out []string
	for _, f := range txdetail.Fields {
		out = append(out, f.Name)
	}
	return out
}

func fieldSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// DecodeInstruction decodes a payload strictly: one JSON object, member
// names exactly as documented, no unknown or repeated member, nothing
// after it. It checks the shape only; CheckInstruction checks the values.
// Errors name the field and never quote the payload.
func DecodeInstruction(payload []byte) (Instruction, error) {
	var in Instruction
	if err := decodeStrict(payload, instructionFields, &in); err != nil {
		return Instruction{}, err
	}
	return in, nil
}

// decodeStrict decodes payload into v (an Instruction or a type that
// embeds one) after checking member names against top and the party
// objects' names against theirs.
func decodeStrict(payload []byte, top map[string]bool, v any) error {
	if len(payload) > MaxPayloadBytes {
		return fieldErr("payload", "larger than %d bytes", MaxPayloadBytes)
	}
	members, err := objectMembers(payload, "payload", top)
	if err != nil {
		return err
	}
	if raw, ok := members["debtor"]; ok && !isNull(raw) {
		if _, err := objectMembers(raw, "debtor", debtorFields); err != nil {
			return err
		}
	}
	if raw, ok := members["creditor"]; ok && !isNull(raw) {
		if _, err := objectMembers(raw, "creditor", creditorFields); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fieldErr(typeErrorField(te), "must be a JSON %s", jsonKind(te.Type.Kind()))
		}
		return fieldErr("payload", "not a JSON instruction: %v", err)
	}
	return nil
}

// objectMembers reads one JSON object and returns its members, refusing a
// name that is not in allowed (compared exactly) or that repeats, and
// anything after the object.
func objectMembers(raw []byte, path string, allowed map[string]bool) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, fieldErr(path, "not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fieldErr(path, "must be a JSON object")
	}
	members := make(map[string]json.RawMessage, len(allowed))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fieldErr(path, "not JSON: %v", err)
		}
		name, _ := tok.(string)
		field := join(path, name)
		if !allowed[name] {
			return nil, fieldErr(field, "unknown field")
		}
		if _, dup := members[name]; dup {
			return nil, fieldErr(field, "appears twice")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fieldErr(field, "not JSON: %v", err)
		}
		members[name] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fieldErr(path, "not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fieldErr(path, "data after the JSON object")
	}
	return members, nil
}

func join(path, name string) string {
	if path == "payload" {
		return name
	}
	return path + "." + name
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// typeErrorField turns encoding/json's Go-side path into the JSON one.
func typeErrorField(te *json.UnmarshalTypeError) string {
	if te.Field != "" {
		return te.Field
	}
	return "payload"
}

// jsonKind names the JSON type a Go kind is decoded from.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Bool:
		return "boolean"
	}
	return "number"
}
