package rail

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/moov-io/iso20022/pkg/pacs_v09"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/money"
)

// MaxPacs008Bytes bounds a pacs.008 document read by ParsePacs008; one
// transaction is a few KiB.
const MaxPacs008Bytes = 256 << 10

// Pacs008Transfer is what a rail reads from a pacs.008 carrying one
// credit transfer.
type Pacs008Transfer struct {
	MsgID          string
	InstrID        string
	EndToEndID     string
	TxID           string
	UETR           string
	Amount         decimal.Decimal
	Currency       string
	SettlementDate string // YYYY-MM-DD
	ChargeBearer   string
	DebtorName     string
	DebtorBIC      string
	CreditorName   string
	CreditorIBAN   string
	CreditorBIC    string
	RemittanceInfo string
	// Details are those at their ISO paths in CdtTrfTxInf.
	txdetail.Details
}

// xsdAmount is ActiveCurrencyAndAmount_SimpleType's lexical space as this
// package accepts it: at most 18 digits, at most 5 after the point, no
// sign or exponent (XSD decimal collapses surrounding white space).
var xsdAmount = regexp.MustCompile(`^[0-9]{1,18}(\.[0-9]{1,5})?$`)

// ParsePacs008 reads a pacs.008.001.09 document with one transaction,
// as the rail side does. The document is decoded into moov-io/iso20022's
// types and validated with its validation (of every element this package
// renders), and then checked for what that library cannot check: its XSD
// choices are modelled as sequences, so accounts are checked here as the
// IBAN-or-other choice they are; its amounts are float64, so the amount is
// re-read as exact decimal text and checked against the currency's minor
// units. Errors do not quote account numbers.
func ParsePacs008(doc []byte) (t Pacs008Transfer, err error) {
	if len(doc) > MaxPacs008Bytes {
		return t, fmt.Errorf("larger than %d bytes", MaxPacs008Bytes)
	}
	trimmed := bytes.TrimLeft(doc, " \t\r\n\ufeff")
	if len(trimmed) == 0 || trimmed[0] != '<' {
		return t, errors.New("not an XML document")
	}
	// The library walks the document by reflection; a fault in it on
	// some input must refuse that input, not take the rail down.
	defer func() {
		if p := recover(); p != nil {
			t, err = Pacs008Transfer{}, fmt.Errorf("malformed document (parser fault: %v)", p)
		}
	}()
	msg, err := decodePacs008(doc)
	if err != nil {
		return t, err
	}
	if err := msg.GrpHdr.Validate(); err != nil {
		return t, fmt.Errorf("GrpHdr: %w", err)
	}
	if msg.GrpHdr.NbOfTxs != "1" || len(msg.CdtTrfTxInf) != 1 {
		return t, fmt.Errorf("NbOfTxs %q with %d CdtTrfTxInf: want exactly one transaction", plaintext.Clip(string(msg.GrpHdr.NbOfTxs), 16), len(msg.CdtTrfTxInf))
	}
	tx := msg.CdtTrfTxInf[0]
	dbtrAcct, cdtrAcct := tx.DbtrAcct, tx.CdtrAcct
	tx.DbtrAcct, tx.CdtrAcct = nil, nil // checked below, as choices
	withoutDetails(&tx)
	if err := tx.Validate(); err != nil {
		return t, fmt.Errorf("CdtTrfTxInf: %w", err)
	}
	if err := checkAccount("DbtrAcct", dbtrAcct, false); err != nil {
		return t, err
	}
	if err := checkAccount("CdtrAcct", cdtrAcct, true); err != nil {
		return t, err
	}
	if cdtrAcct.Id.IBAN == "" {
		return t, errors.New("CdtrAcct: the creditor account must be an IBAN")
	}
	if tx.IntrBkSttlmDt == nil || time.Time(*tx.IntrBkSttlmDt).IsZero() {
		return t, errors.New("IntrBkSttlmDt: required")
	}
	debtorBIC, err := agentBIC("DbtrAgt", tx.DbtrAgt)
	if err != nil {
		return t, err
	}
	creditorBIC, err := agentBIC("CdtrAgt", tx.CdtrAgt)
	if err != nil {
		return t, err
	}
	amount, currency, err := exactAmount(doc)
	if err != nil {
		return t, err
	}
	details, err := detailsIn(doc)
	if err != nil {
		return t, err
	}

	t = Pacs008Transfer{
		MsgID:          string(msg.GrpHdr.MsgId),
		EndToEndID:     string(tx.PmtId.EndToEndId),
		Amount:         amount,
		Currency:       currency,
		SettlementDate: time.Time(*tx.IntrBkSttlmDt).Format(time.DateOnly),
		ChargeBearer:   string(tx.ChrgBr),
		DebtorBIC:      debtorBIC,
		CreditorIBAN:   string(cdtrAcct.Id.IBAN),
		CreditorBIC:    creditorBIC,
		Details:        details,
	}
	if tx.PmtId.InstrId != nil {
		t.InstrID = string(*tx.PmtId.InstrId)
	}
	if tx.PmtId.TxId != nil {
		t.TxID = string(*tx.PmtId.TxId)
	}
	if tx.PmtId.UETR != nil {
		t.UETR = string(*tx.PmtId.UETR)
	}
	if tx.Dbtr.Nm != nil {
		t.DebtorName = string(*tx.Dbtr.Nm)
	}
	if tx.Cdtr.Nm != nil {
		t.CreditorName = string(*tx.Cdtr.Nm)
	}
	if tx.RmtInf != nil {
		parts := make([]string, len(tx.RmtInf.Ustrd))
		for i, u := range tx.RmtInf.Ustrd {
			parts[i] = string(u)
		}
		t.RemittanceInfo = strings.Join(parts, " ")
	}
	return t, nil
}

// decodePacs008 decodes the document into moov-io/iso20022's
// pacs.008.001.09 message type, in one pass. The library's
// ParseIso20022Document would make four (it tries the bytes as JSON, then
// re-reads them to find the format and namespace) and links every message
// type of every version into the binary. The root must be a
// pacs.008.001.09 Document, and nothing but white space, comments and
// processing instructions may follow it.
func decodePacs008(doc []byte) (*pacs_v09.FIToFICustomerCreditTransferV09, error) {
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var root xml.StartElement
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not an ISO 20022 document: %w", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			root = tok
		case xml.CharData, xml.Comment, xml.ProcInst, xml.Directive:
			continue
		}
		break
	}
	if root.Name.Local != "Document" {
		return nil, errors.New("root element is not Document")
	}
	if root.Name.Space != Pacs008Namespace {
		return nil, fmt.Errorf("namespace %q: want %s", plaintext.Clip(root.Name.Space, 80), Pacs008Namespace)
	}
	var d struct {
		Msgs []pacs_v09.FIToFICustomerCreditTransferV09 `xml:"FIToFICstmrCdtTrf"`
	}
	if err := dec.DecodeElement(&d, &root); err != nil {
		return nil, fmt.Errorf("not a pacs.008 document: %w", err)
	}
	if len(d.Msgs) != 1 {
		return nil, errors.New("want one FIToFICstmrCdtTrf message in the Document")
	}
	msg := &d.Msgs[0]
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return msg, nil
		}
		if err != nil {
			return nil, fmt.Errorf("after the document: %w", err)
		}
		switch tok := tok.(type) {
		case xml.Comment, xml.ProcInst:
		case xml.CharData:
			if len(bytes.TrimSpace(tok)) != 0 {
				return nil, errors.New("text after the document")
			}
		default:
			return nil, errors.New("content after the document")
		}
	}
}

// checkAccount checks CashAccount38's Id as the XSD choice it is: exactly
// one of IBAN and Othr, each valid by the library's own type checks.
func checkAccount(name string, acct *pacs_v09.CashAccount38, required bool) error {
	if acct == nil {
		if required {
			return fmt.Errorf("%s: required", name)
		}
		return nil
	}
	id := acct.Id
	hasIBAN, hasOthr := id.IBAN != "", id.Othr.Id != "" || id.Othr.SchmeNm != nil || id.Othr.Issr != nil
	switch {
	case hasIBAN == hasOthr:
		return fmt.Errorf("%s/Id: exactly one of IBAN and Othr", name)
	case hasIBAN:
		if err := id.IBAN.Validate(); err != nil {
			return fmt.Errorf("%s/Id/IBAN: %w", name, err)
		}
		if err := bankid.CheckIBAN(string(id.IBAN)); err != nil {
			return fmt.Errorf("%s/Id/IBAN: %w (%s)", name, err, bankid.Mask(string(id.IBAN)))
		}
	default:
		if err := id.Othr.Validate(); err != nil {
			return fmt.Errorf("%s/Id/Othr: %w", name, err)
		}
	}
	for _, v := range []interface{ Validate() error }{optional(acct.Tp), optional(acct.Ccy), optional(acct.Nm), optional(acct.Prxy)} {
		if v != nil {
			if err := v.Validate(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// optional turns a possibly nil pointer to a validatable element into an
// interface that is nil when the element is absent.
func optional[T interface{ Validate() error }](p *T) interface{ Validate() error } {
	if p == nil {
		return nil
	}
	return *p
}

// agentBIC returns an agent's BIC, which every rail here requires.
func agentBIC(name string, a pacs_v09.BranchAndFinancialInstitutionIdentification6) (string, error) {
	if a.FinInstnId.BICFI == nil {
		return "", fmt.Errorf("%s/FinInstnId/BICFI: required", name)
	}
	bic := string(*a.FinInstnId.BICFI)
	if err := bankid.CheckBIC(bic); err != nil {
		return "", fmt.Errorf("%s/FinInstnId/BICFI: %w", name, err)
	}
	return bic, nil
}

// withoutDetails takes the details' elements out of tx before the
// library validates it: detailsIn checks each by its own rule, and the
// library models their XSD choices as sequences (Purp's Cd and Prtry),
// so a valid Purp/Cd would fail for the empty Prtry beside it.
func withoutDetails(tx *pacs_v09.CreditTransferTransaction43) {
	v := reflect.ValueOf(tx).Elem()
	for _, f := range txdetail.Fields {
		if f.Path == nil {
			continue
		}
		if e := v.FieldByName(f.Path[0]); e.IsValid() && e.CanSet() {
			e.SetZero()
		}
	}
}

// detailsIn reads the transaction's details at their ISO paths, and
// checks them as an instruction's are.
func detailsIn(doc []byte) (txdetail.Details, error) {
	var d txdetail.Details
	if len(txdetail.Fields) == 0 {
		return d, nil
	}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var names []string
	var text []byte
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return d, fmt.Errorf("CdtTrfTxInf: %w", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			names, text = append(names, tok.Name.Local), text[:0]
		case xml.CharData:
			text = append(text, tok...)
		case xml.EndElement:
			// Document/FIToFICstmrCdtTrf/CdtTrfTxInf/...
			if len(names) > 3 && names[2] == "CdtTrfTxInf" {
				if f, ok := txdetail.At(names[3:]); ok {
					f.Set(&d, strings.TrimSpace(string(text)))
				}
			}
			names = names[:len(names)-1]
		}
	}
	for _, fe := range txdetail.Check(d, "") {
		f, _ := txdetail.ByName(fe.Field)
		return d, fmt.Errorf("CdtTrfTxInf/%s: %s", strings.Join(f.Path, "/"), fe.Detail)
	}
	return d, nil
}

// exactAmount re-reads IntrBkSttlmAmt as text: the library's float64
// cannot hold 0.10 or 1234567.89 exactly.
func exactAmount(doc []byte) (decimal.Decimal, string, error) {
	var x struct {
		Tx []struct {
			Amt []struct {
				Value string `xml:",chardata"`
				Ccy   string `xml:"Ccy,attr"`
			} `xml:"IntrBkSttlmAmt"`
		} `xml:"FIToFICstmrCdtTrf>CdtTrfTxInf"`
	}
	if err := xml.Unmarshal(doc, &x); err != nil {
		return decimal.Decimal{}, "", fmt.Errorf("IntrBkSttlmAmt: %w", err)
	}
	if len(x.Tx) != 1 || len(x.Tx[0].Amt) != 1 {
		return decimal.Decimal{}, "", errors.New("IntrBkSttlmAmt: exactly one required")
	}
	a := x.Tx[0].Amt[0]
	text := strings.TrimSpace(a.Value)
	if !xsdAmount.MatchString(text) {
		return decimal.Decimal{}, "", fmt.Errorf("IntrBkSttlmAmt: %q is not a decimal of at most 18 digits and 5 decimals", plaintext.Clip(text, 40))
	}
	amount, err := decimal.NewFromString(text)
	if err != nil {
		return decimal.Decimal{}, "", fmt.Errorf("IntrBkSttlmAmt: %w", err)
	}
	if !amount.IsPositive() {
		return decimal.Decimal{}, "", errors.New("IntrBkSttlmAmt: must be greater than zero")
	}
	units, ok := money.MinorUnits(a.Ccy)
	if !ok {
		return decimal.Decimal{}, "", fmt.Errorf("IntrBkSttlmAmt/@Ccy: %q is not an active ISO 4217 currency", plaintext.Clip(a.Ccy, 8))
	}
	if !amount.Equal(amount.Truncate(units)) {
		return decimal.Decimal{}, "", fmt.Errorf("IntrBkSttlmAmt: %s has %d minor units", a.Ccy, units)
	}
	return amount, a.Ccy, nil
}
