package payment

import "github.com/paydispatch/paydispatch/internal/txdetail"

// Instruction is an executed payment as it leaves for its rail: one credit
// transfer in rail-neutral terms, the JSON payload of its outbox message.
// Each rail type renders it its own way (package rail: the JSON rail
// sends it as is, pacs.008 writes an ISO 20022 message of it); the JSON
// is the contract between them (rail/doc.go), and the wiring's tests
// decode what this writes with the adapter's strict decoder.
type Instruction struct {
	PaymentID  string `json:"paymentId"`
	EndToEndID string `json:"endToEndId"`
	// Amount is a plain decimal string ("125.00") with the currency's
	// minor units, never a JSON number.
	Amount         string              `json:"amount"`
	Currency       string              `json:"currency"`
	ValueDate      string              `json:"valueDate"`
	Debtor         InstructionDebtor   `json:"debtor"`
	Creditor       InstructionCreditor `json:"creditor"`
	RemittanceInfo string              `json:"remittanceInfo,omitempty"`
	TenantID       string              `json:"tenantId"`
	// Details are the request's (package txdetail), which the rail
	// renders where its format has them (pacs.008: at their ISO paths).
	txdetail.Details
}

// InstructionDebtor is the paying party: the tenant and its account.
type InstructionDebtor struct {
	Name    string `json:"name"`
	Account string `json:"account"`
}

// InstructionCreditor is the party paid.
type InstructionCreditor struct {
	Name string `json:"name"`
	IBAN string `json:"iban"`
	BIC  string `json:"bic,omitempty"`
}
