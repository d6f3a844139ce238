package rail

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"time"

	"github.com/moov-io/iso20022/pkg/common"
	"github.com/moov-io/iso20022/pkg/pacs_v09"

	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/outbox"
)

// Pacs008Namespace is the message version rendered and accepted: the
// pacs.008 version whose XSD moov-io/iso20022 ships.
const Pacs008Namespace = "urn:iso:std:iso:20022:tech:xsd:pacs.008.001.09"

// Pacs008Config configures a pacs.008 rail.
type Pacs008Config struct {
	Config
	// ChargeBearer is ChrgBr: SLEV (default, following the scheme's
	// service level, as SEPA requires), SHAR, DEBT or CRED.
	ChargeBearer string
	// DebtorAgentBIC is the DbtrAgt of an instruction that names no
	// debtor BIC: the sending institution, this deployment's own BIC
	// (the payment domain does not put one in its instructions). Empty:
	// such an instruction is refused, as pacs.008 needs a debtor agent.
	DebtorAgentBIC string
	// Now stamps GrpHdr/CreDtTm; default time.Now.
	Now func() time.Time
}

// Pacs008Rail delivers instructions as ISO 20022 pacs.008 FI-to-FI
// customer credit transfers (one transaction per message) to
// POST {base}/v1/pacs008, with the same headers, answers and inquiry as
// HTTPRail. It implements outbox.Sender and is safe for concurrent use.
type Pacs008Rail struct {
	railType     string
	chargeBearer string
	debtorAgent  string
	now          func() time.Time
	call         *caller
}

// NewPacs008Rail returns a pacs.008 rail for cfg (RailType defaults to
// RailPacs008).
func NewPacs008Rail(cfg Pacs008Config) (*Pacs008Rail, error) {
	c, err := newCaller(cfg.Config)
	if err != nil {
		return nil, err
	}
	r := &Pacs008Rail{railType: cfg.RailType, chargeBearer: cfg.ChargeBearer, debtorAgent: cfg.DebtorAgentBIC, now: cfg.Now, call: c}
	if r.railType == "" {
		r.railType = RailPacs008
	}
	if r.debtorAgent != "" {
		var ck checker
		ck.bic("debtorAgentBIC", r.debtorAgent)
		if err := ck.err(); err != nil {
			return nil, fmt.Errorf("rail: %w", err)
		}
	}
	switch r.chargeBearer {
	case "":
		r.chargeBearer = "SLEV"
	case "SLEV", "SHAR", "DEBT", "CRED":
	default:
		return nil, fmt.Errorf("rail: charge bearer %q: want SLEV, SHAR, DEBT or CRED", cfg.ChargeBearer)
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r, nil
}

// Type is the rail type this rail serves.
func (r *Pacs008Rail) Type() string { return r.railType }

// Validate checks m as HTTPRail does, with the pacs.008 rules (both
// agents' BICs are required; the debtor's defaults to DebtorAgentBIC),
// and renders it: an instruction that cannot
// become a pacs.008 is refused before any call. It does not read the
// document back through ParsePacs008 (about a millisecond of CPU per
// message in moov-io/iso20022's reflection and regular expressions):
// FuzzDecodeInstruction checks that whatever passes these checks renders
// to a document ParsePacs008 accepts with the same amount.
func (r *Pacs008Rail) Validate(m outbox.Message) error {
	_, err := r.Render(m)
	return err
}

// Render returns m's pacs.008 document, after the checks of Validate
// other than re-reading the document.
func (r *Pacs008Rail) Render(m outbox.Message) ([]byte, error) {
	in, err := parseMessage(m, r.railType, FormatPacs008, r.debtorAgent)
	if err != nil {
		return nil, err
	}
	return renderPacs008(m, in, r.chargeBearer, r.now())
}

// Send POSTs the pacs.008 document once. An invalid message is Terminal
// and is not sent.
func (r *Pacs008Rail) Send(ctx context.Context, m outbox.Message) outbox.Result {
	doc, err := r.Render(m)
	if err != nil {
		return invalid(err)
	}
	return r.call.send(ctx, PathPacs008, "application/xml", doc, m)
}

// Inquire asks the rail what it holds under m's idempotency key.
func (r *Pacs008Rail) Inquire(ctx context.Context, m outbox.Message) outbox.Result {
	if err := CheckMessage(m); err != nil {
		return outbox.Result{Outcome: outbox.Unknown, Code: CodeInvalidPayload, Message: err.Error()}
	}
	return r.call.inquire(ctx, m)
}

// The document as rendered. moov-io/iso20022's component types are used
// for everything but two things its generated types get wrong:
// amounts are float64 there (0.10 would render as 0.1, 1234567.89 as
// 1.23456789e+06), and XSD choices are plain sequences (an account would
// render an empty <Othr> beside its <IBAN>). Element order follows
// CreditTransferTransaction43 of the pacs.008.001.09 XSD.
type pacsDocument struct {
	XMLName xml.Name    `xml:"urn:iso:std:iso:20022:tech:xsd:pacs.008.001.09 Document"`
	Msg     pacsMessage `xml:"FIToFICstmrCdtTrf"`
}

type pacsMessage struct {
	GrpHdr      pacs_v09.GroupHeader93 `xml:"GrpHdr"`
	CdtTrfTxInf pacsTransaction        `xml:"CdtTrfTxInf"`
}

type pacsTransaction struct {
	PmtId          pacs_v09.PaymentIdentification13                      `xml:"PmtId"`
	IntrBkSttlmAmt pacsAmount                                            `xml:"IntrBkSttlmAmt"`
	IntrBkSttlmDt  common.ISODate                                        `xml:"IntrBkSttlmDt"`
	ChrgBr         pacs_v09.ChargeBearerType1Code                        `xml:"ChrgBr"`
	Dbtr           pacs_v09.PartyIdentification135                       `xml:"Dbtr"`
	DbtrAcct       *pacsAccount                                          `xml:"DbtrAcct,omitempty"`
	DbtrAgt        pacs_v09.BranchAndFinancialInstitutionIdentification6 `xml:"DbtrAgt"`
	CdtrAgt        pacs_v09.BranchAndFinancialInstitutionIdentification6 `xml:"CdtrAgt"`
	Cdtr           pacs_v09.PartyIdentification135                       `xml:"Cdtr"`
	CdtrAcct       *pacsAccount                                          `xml:"CdtrAcct,omitempty"`
	RmtInf         *pacs_v09.RemittanceInformation16                     `xml:"RmtInf,omitempty"`
	// details are written at their ISO paths, among the elements above
	// in the schema's order.
	details txdetail.Details
}

// creditTransferTransaction43 is the sequence of CdtTrfTxInf's elements
// in the pacs.008.001.09 XSD: where each element, a detail's too, goes.
var creditTransferTransaction43 = []string{"PmtId", "PmtTpInf", "IntrBkSttlmAmt", "IntrBkSttlmDt", "SttlmPrty",
	"SttlmTmIndctn", "SttlmTmReq", "AccptncDtTm", "PoolgAdjstmntDt", "InstdAmt", "XchgRate", "AgrdRate", "ChrgBr", "ChrgsInf",
	"MndtRltdInf", "PrvsInstgAgt1", "PrvsInstgAgt1Acct", "PrvsInstgAgt2", "PrvsInstgAgt2Acct", "PrvsInstgAgt3",
	"PrvsInstgAgt3Acct", "InstgAgt", "InstdAgt", "IntrmyAgt1", "IntrmyAgt1Acct", "IntrmyAgt2", "IntrmyAgt2Acct",
	"IntrmyAgt3", "IntrmyAgt3Acct", "UltmtDbtr", "InitgPty", "Dbtr", "DbtrAcct", "DbtrAgt", "DbtrAgtAcct", "CdtrAgt",
	"CdtrAgtAcct", "Cdtr", "CdtrAcct", "UltmtCdtr", "InstrForCdtrAgt", "InstrForNxtAgt", "Purp", "RgltryRptg", "Tax",
	"RltdRmtInf", "RmtInf", "SplmtryData"}

// MarshalXML writes the transaction with its details in place.
func (t pacsTransaction) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return txdetail.EncodeAmong(e, start, t, t.details, creditTransferTransaction43)
}

// pacsAmount is ActiveCurrencyAndAmount with its value as exact decimal
// text.
type pacsAmount struct {
	Value string `xml:",chardata"`
	Ccy   string `xml:"Ccy,attr"`
}

// pacsAccount is CashAccount38 with AccountIdentification4Choice as the
// choice it is.
type pacsAccount struct {
	Id pacsAccountID `xml:"Id"`
}

type pacsAccountID struct {
	IBAN string                                  `xml:"IBAN,omitempty"`
	Othr *pacs_v09.GenericAccountIdentification1 `xml:"Othr,omitempty"`
}

// renderPacs008 renders a checked instruction. Identifiers are derived
// from the message, never random, so every attempt of one instruction
// carries the same MsgId, InstrId, TxId and UETR; only CreDtTm changes.
func renderPacs008(m outbox.Message, in Instruction, chargeBearer string, now time.Time) ([]byte, error) {
	amount, err := ParseAmount(in.Amount)
	if err != nil {
		return nil, fieldErr("amount", "%v", err)
	}
	units, _ := money.MinorUnits(in.Currency)
	valueDate, err := time.Parse(time.DateOnly, in.ValueDate)
	if err != nil {
		return nil, fieldErr("valueDate", "not a date in the form YYYY-MM-DD")
	}
	msgID := common.Max35Text(max35("M", m.IdempotencyKey))
	instrID := common.Max35Text(max35("I", m.InstructionID))
	if m.InstructionID == "" {
		instrID = msgID
	}
	txID := common.Max35Text(max35("T", in.PaymentID))
	uetr := common.UUIDv4Identifier(uuid4From(m.IdempotencyKey))
	debtorBIC := common.BICFIDec2014Identifier(in.Debtor.BIC)
	creditorBIC := common.BICFIDec2014Identifier(in.Creditor.BIC)
	debtorName := common.Max140Text(in.Debtor.Name)
	creditorName := common.Max140Text(in.Creditor.Name)

	tx := pacsTransaction{
		PmtId:          pacs_v09.PaymentIdentification13{InstrId: &instrID, EndToEndId: common.Max35Text(in.EndToEndID), TxId: &txID, UETR: &uetr},
		IntrBkSttlmAmt: pacsAmount{Value: amount.StringFixed(units), Ccy: in.Currency},
		IntrBkSttlmDt:  common.ISODate(valueDate),
		ChrgBr:         pacs_v09.ChargeBearerType1Code(chargeBearer),
		Dbtr:           pacs_v09.PartyIdentification135{Nm: &debtorName},
		DbtrAcct:       debtorAccount(in.Debtor),
		DbtrAgt:        pacs_v09.BranchAndFinancialInstitutionIdentification6{FinInstnId: pacs_v09.FinancialInstitutionIdentification18{BICFI: &debtorBIC}},
		CdtrAgt:        pacs_v09.BranchAndFinancialInstitutionIdentification6{FinInstnId: pacs_v09.FinancialInstitutionIdentification18{BICFI: &creditorBIC}},
		Cdtr:           pacs_v09.PartyIdentification135{Nm: &creditorName},
		CdtrAcct:       &pacsAccount{Id: pacsAccountID{IBAN: in.Creditor.IBAN}},
		details:        in.Details,
	}
	if in.RemittanceInfo != "" {
		tx.RmtInf = &pacs_v09.RemittanceInformation16{Ustrd: []common.Max140Text{common.Max140Text(in.RemittanceInfo)}}
	}
	doc := pacsDocument{Msg: pacsMessage{
		GrpHdr: pacs_v09.GroupHeader93{
			MsgId:    msgID,
			CreDtTm:  common.ISODateTime(now.UTC().Truncate(time.Millisecond)),
			NbOfTxs:  "1",
			SttlmInf: pacs_v09.SettlementInstruction7{SttlmMtd: "CLRG"},
		},
		CdtTrfTxInf: tx,
	}}
	out, err := xml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("rendering pacs.008: %w", err)
	}
	return append([]byte(xml.Header), out...), nil
}

// debtorAccount: the IBAN when the instruction has one, else the bank's
// own account id.
func debtorAccount(d Debtor) *pacsAccount {
	if d.IBAN != "" {
		return &pacsAccount{Id: pacsAccountID{IBAN: d.IBAN}}
	}
	return &pacsAccount{Id: pacsAccountID{Othr: &pacs_v09.GenericAccountIdentification1{Id: common.Max34Text(d.Account)}}}
}

// max35 fits an identifier into Max35Text: as it is when it fits, else a
// prefix and 34 hex digits of its SHA-256 (stable, and distinct for
// distinct values in practice).
func max35(prefix, s string) string {
	if s != "" && len(s) <= 35 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return prefix + hex.EncodeToString(sum[:])[:34]
}

// uuid4From derives a UETR in UUID version 4 form from key, so the same
// instruction keeps its UETR across attempts.
func uuid4From(key string) string {
	b := sha256.Sum256([]byte("uetr:" + key))
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
