package rail

import (
	"encoding/json"

	"github.com/google/uuid"

	"github.com/paydispatch/paydispatch/outbox"
)

// goodInstruction passes every check of both formats.
func goodInstruction() Instruction {
	return Instruction{
		PaymentID:  "pay-0001",
		EndToEndID: "E2E-0001",
		Amount:     "125.00",
		Currency:   "EUR",
		ValueDate:  "2026-11-23",
		Debtor: Debtor{
			Name:    "ACME Corp",
			Account: "ACC-1",
			IBAN:    "GB82WEST12345698765432",
			BIC:     "NWBKGB2L",
		},
		Creditor: Creditor{
			Name: "Jane Doe",
			IBAN: "DE89370400440532013000",
			BIC:  "COBADEFFXXX",
		},
		RemittanceInfo: "INV-42",
		TenantID:       "acme",
	}
}

func messageFor(in Instruction, railType string) outbox.Message {
	payload, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return outbox.Message{
		OutboxID:       uuid.New(),
		InstructionID:  "instr-" + in.PaymentID,
		ParticipantID:  "bank-a",
		SequenceID:     1,
		IdempotencyKey: "idem-" + in.PaymentID,
		RailType:       railType,
		Payload:        payload,
		Attempt:        1,
	}
}
