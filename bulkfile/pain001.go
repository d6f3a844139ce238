package bulkfile

import (
	"context"
	"embed"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/xmlschema"
)

// schemaFiles are the ISO 20022 pain.001 schemas as the ISO 20022
// Registration Authority publishes them, unmodified, one per version.
//
//go:embed schemas/pain.001.001.*.xsd
var schemaFiles embed.FS

// isoSchemas compiles the shipped schemas once, on first use, by target
// namespace. They are part of the program: one that does not compile is a
// bug (a test compiles them all), so it panics.
var isoSchemas = sync.OnceValue(func() map[string]*xmlschema.Schema {
	names, err := fs.Glob(schemaFiles, "schemas/*.xsd")
	if err != nil {
		panic(err)
	}
	m := make(map[string]*xmlschema.Schema, len(names))
	for _, name := range names {
		raw, err := schemaFiles.ReadFile(name)
		if err != nil {
			panic(err)
		}
		s, err := xmlschema.Compile(raw)
		if err != nil {
			panic(fmt.Sprintf("bulkfile: %s: %v", name, err))
		}
		m[s.TargetNamespace()] = s
	}
	return m
})

// painSchemas are the schemas by every namespace taken: ISO's versions,
// and each variant's namespace with its ISO version's schema.
var painSchemas = sync.OnceValue(func() map[string]*xmlschema.Schema {
	iso := isoSchemas()
	m := make(map[string]*xmlschema.Schema, len(iso)+len(variants))
	for ns, s := range iso {
		m[ns] = s
	}
	for _, v := range variants {
		s := iso[isoNS+v.ISO]
		if s == nil {
			panic(fmt.Sprintf("bulkfile: variant %s: no schema of %s", v.Namespace, v.ISO))
		}
		m[v.Namespace] = s.InNamespace(v.Namespace)
	}
	return m
})

// Pain001Namespaces lists ISO's pain.001 namespaces DecodePain001 takes,
// one per version, oldest first; Pain001Variants adds the national ones.
func Pain001Namespaces() []string { return isoPain001Namespaces() }

// ctxEvery is how many entries (tokens of a pain.001) a decoder reads
// between two looks at its context.
const ctxEvery = 256

func stopped(err error) error { return fmt.Errorf("bulkfile: decoding stopped: %w", err) }

// DecodePain001 reads an ISO 20022 pain.001 document (customer credit
// transfer initiation, a version Pain001Namespaces lists or a national
// variant Pain001Variants lists, checked against the ISO version it
// restricts; another message is refused, naming it). The file must
// validate against its version's schema, and its control figures must be
// right: GrpHdr/NbOfTxs the number of transactions, each PmtInf's
// NbOfTxs its own, and each CtrlSum given the sum of the amounts it
// covers; anything else refuses the whole file, naming the line and the
// element. The reading is streamed and checked as it goes, in time linear
// in the file; ctx stops it.
//
// Each credit transfer (CdtTrfTxInf) becomes a payment: its EndToEndId
// the payment id (InstrId when that is NOTPROVIDED), the payment
// information's debtor account (Othr/Id, else IBAN) the debtor account,
// ReqdExctnDt/DtTm its time, which must carry its UTC offset (a Dt, a date
// alone: 00:00 UTC that day, or at its offset if it has one). A
// transaction that cannot be a payment (no InstdAmt, a DtTm without an
// offset; an EqvtAmt to convert, a creditor account by Othr/Id, a
// charge bearer other than SLEV, a creditor reference whose check digits
// fail) is reported in Bad. A structured reference becomes the
// remittance text when there is no Ustrd. PmtTpInf/InstrPrty, of the
// transaction or else of its payment information, is the payment's
// priority (HIGH; NORM is NORMAL); none leaves it to the file's. Places number the transactions
// 1, 2, … in document order, and Declared is their count; Pain001 keeps
// the ids and flags a status report names.
func DecodePain001(ctx context.Context, r io.Reader) (File, error) {
	src := &watchedReader{r: r}
	dec := xmlschema.NewDecoder(src)
	var root xml.Name
	v := xmlschema.NewValidator(dec, func(name xml.Name) (*xmlschema.Schema, error) {
		root = name
		return choosePain001(name)
	})
	d := painDecoder{v: v}
	for tokens := 0; ; tokens++ {
		if tokens%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return File{}, stopped(err)
			}
		}
		tok, err := v.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var ve *xmlschema.Error
			if errors.As(err, &ve) && strings.Contains(ve.Detail, errOtherMessage.Error()) && src.err == nil {
				// Name the message by Document's first element when
				// its namespace does not say.
				return File{}, notPain001(ve.Line, root.Space, firstChild(dec))
			}
			return File{}, painError(src, err)
		}
		if err := d.token(tok); err != nil {
			return File{}, err
		}
	}
	variant, _ := variantOf(root.Space)
	d.origin.Namespace, d.origin.MsgNmID, d.origin.Version = root.Space, variant.MsgNmID, variant.ISO
	return d.finish()
}

// choosePain001 picks the schema of the root element's namespace: an ISO
// version's, or a variant's (its ISO version's schema in its namespace).
func choosePain001(root xml.Name) (*xmlschema.Schema, error) {
	if root.Local != "Document" {
		return nil, fmt.Errorf("want Document, the root of a pain.001 (CstmrCdtTrfInitn) message")
	}
	if s := painSchemas()[root.Space]; s != nil {
		return s, nil
	}
	return nil, errOtherMessage
}

// painError turns a failure to read into a refusal, unless the body itself
// could not be read (too large, cut off): that is returned as it is.
func painError(src *watchedReader, err error) error {
	if src.err != nil {
		return src.err
	}
	var (
		ve *xmlschema.Error
		se *xml.SyntaxError
	)
	switch {
	case errors.As(err, &ve):
		where, detail := fmt.Sprintf("line %d", ve.Line), ve.Detail
		if ve.Path != "" {
			where += ": element " + ve.Path
		} else {
			// Outside the root: text before it, a second root, trailing
			// content.
			detail = "the file is not one pain.001 Document: " + detail
		}
		return &FormatError{Where: where, Detail: detail}
	case errors.As(err, &se):
		return refuse(fmt.Sprintf("line %d", se.Line), "not well-formed XML: %s", se.Msg)
	case errors.Is(err, xmlschema.ErrNoRoot):
		return refuse("", "no XML element in the file: want a pain.001 Document")
	}
	return refuse("", "not a pain.001 document: %s", plaintext.Clip(err.Error(), 200))
}

// painDecoder takes what payments need from a document's tokens, which
// the validator has checked: the document is valid up to each token, so
// an element's place says what it is.
type painDecoder struct {
	v     *xmlschema.Validator
	names []string // the local names of the open elements, Document first
	f     File

	grpNb, grpSum         string
	grpNbLine, grpSumLine int
	sum                   sumOf // every transaction's amount

	pi  pmtInf
	pis int // PmtInf so far
	tx  txn

	origin payment.Pain001Origin
}

// sumOf adds amounts for a CtrlSum check; bad names the first amount
// that is not a plain decimal, which leaves the sum unknown.
type sumOf struct {
	total decimal.Decimal
	bad   string
}

// add adds the amount of PmtInf[pmt]/CdtTrfTxInf[tx].
func (s *sumOf) add(amount string, pmt, tx int) {
	if s.bad != "" {
		return
	}
	a, err := money.ParseDecimal(amount, money.Unsigned)
	if err != nil {
		s.bad = fmt.Sprintf("PmtInf[%d]/CdtTrfTxInf[%d] (%q)", pmt, tx, plaintext.Clip(amount, 48))
		return
	}
	s.total = s.total.Add(a)
}

type pmtInf struct {
	index            int
	nb, sum          string
	nbLine, sumLine  int
	txs              int
	amounts          sumOf
	othr, iban       string
	bare, dt, dtTm   string
	hasDt, hasDtTm   bool
	at               time.Time
	atErr            error
	atField          string
	dateTimeResolved bool
	id, chrgBr       string
	btchBookg        *bool
	priority         payment.Priority
	origins          []payment.TxOrigin
}

type txn struct {
	instrID, endToEnd       string
	amount, ccy, eqvtAmount string
	eqvtCcy, ccyOfTrf       string
	hasInstd, hasEqvt       bool
	bicfi, bic, name, iban  string
	othr                    string
	ustrd                   []string
	chrgBr                  string
	ref, refType            string
	hasRef                  bool
	priority                payment.Priority
	details                 txdetail.Details
}

func (d *painDecoder) token(tok xml.Token) error {
	switch t := tok.(type) {
	case xml.StartElement:
		d.names = append(d.names, t.Name.Local)
		rel := d.rel()
		switch {
		case is(rel, "PmtInf"):
			d.pis++
			d.pi = pmtInf{index: d.pis}
		case is(rel, "PmtInf", "CdtTrfTxInf"):
			d.tx = txn{}
		case is(rel, "PmtInf", "CdtTrfTxInf", "Amt", "InstdAmt"):
			d.tx.ccy = ccyOf(t)
		case is(rel, "PmtInf", "CdtTrfTxInf", "Amt", "EqvtAmt", "Amt"):
			d.tx.eqvtCcy = ccyOf(t)
		}
	case xml.EndElement:
		err := d.end(d.rel(), string(d.v.Text())) // "" for an element that holds elements
		d.names = d.names[:len(d.names)-1]
		return err
	}
	return nil
}

// ccyOf is an amount's Ccy attribute.
func ccyOf(t xml.StartElement) string {
	for _, a := range t.Attr {
		if a.Name.Space == "" && a.Name.Local == "Ccy" {
			return a.Value
		}
	}
	return ""
}

// rel is the path of the current element below Document/CstmrCdtTrfInitn.
func (d *painDecoder) rel() []string {
	if len(d.names) < 2 {
		return nil
	}
	return d.names[2:]
}

func (d *painDecoder) end(rel []string, text string) error {
	if len(rel) == 0 {
		return nil
	}
	line := d.v.Line()
	switch {
	case rel[0] == "GrpHdr" && len(rel) == 2:
		switch rel[1] {
		case "MsgId":
			d.origin.MsgID = strings.TrimSpace(text)
		case "CreDtTm":
			d.origin.CreDtTm = strings.TrimSpace(text)
		case "NbOfTxs":
			d.grpNb, d.grpNbLine = text, line
		case "CtrlSum":
			d.grpSum, d.grpSumLine = text, line
		}
	case rel[0] == "PmtInf":
		return d.endPmtInf(rel[1:], text, line)
	}
	return nil
}

// is reports whether rel is the path parts.
func is(rel []string, parts ...string) bool {
	if len(rel) != len(parts) {
		return false
	}
	for i := range parts {
		if rel[i] != parts[i] {
			return false
		}
	}
	return true
}

func (d *painDecoder) endPmtInf(rel []string, text string, line int) error {
	pi := &d.pi
	switch {
	case len(rel) == 0:
		d.origin.PmtInfs = append(d.origin.PmtInfs, payment.PmtInfOrigin{PmtInfID: pi.id, NbOfTxs: strings.TrimSpace(pi.nb),
			CtrlSum: strings.TrimSpace(pi.sum), BatchBooking: pi.btchBookg, ChargeBearer: pi.chrgBr, Txs: pi.origins})
		return d.checkPmtInf()
	case rel[0] == "CdtTrfTxInf":
		d.endTx(rel[1:], text)
	case is(rel, "PmtInfId"):
		pi.id = strings.TrimSpace(text)
	case is(rel, "BtchBookg"):
		b := strings.TrimSpace(text) == "true" || strings.TrimSpace(text) == "1"
		pi.btchBookg = &b
	case is(rel, "ChrgBr"):
		pi.chrgBr = strings.TrimSpace(text)
	case is(rel, "PmtTpInf", "InstrPrty"):
		pi.priority = instrPriority(text)
	case is(rel, "NbOfTxs"):
		pi.nb, pi.nbLine = text, line
	case is(rel, "CtrlSum"):
		pi.sum, pi.sumLine = text, line
	case is(rel, "ReqdExctnDt"):
		pi.bare = text // 001.001.03 to .07: the date itself
	case is(rel, "ReqdExctnDt", "Dt"):
		pi.dt, pi.hasDt = text, true
	case is(rel, "ReqdExctnDt", "DtTm"):
		pi.dtTm, pi.hasDtTm = text, true
	case is(rel, "DbtrAcct", "Id", "IBAN"):
		pi.iban = text
	case is(rel, "DbtrAcct", "Id", "Othr", "Id"):
		pi.othr = text
	}
	return nil
}

func (d *painDecoder) endTx(rel []string, text string) {
	tx := &d.tx
	switch {
	case len(rel) == 0:
		d.transaction()
	case is(rel, "PmtId", "InstrId"):
		tx.instrID = text
	case is(rel, "PmtId", "EndToEndId"):
		tx.endToEnd = text
	case is(rel, "Amt", "InstdAmt"):
		tx.amount, tx.hasInstd = text, true
	case is(rel, "Amt", "EqvtAmt", "Amt"):
		tx.eqvtAmount, tx.hasEqvt = text, true
	case is(rel, "Amt", "EqvtAmt", "CcyOfTrf"):
		tx.ccyOfTrf = strings.TrimSpace(text)
	case is(rel, "ChrgBr"):
		tx.chrgBr = strings.TrimSpace(text)
	case is(rel, "PmtTpInf", "InstrPrty"):
		tx.priority = instrPriority(text)
	case is(rel, "CdtrAcct", "Id", "Othr", "Id"):
		tx.othr = text
	case is(rel, "RmtInf", "Strd", "CdtrRefInf", "Ref"):
		if !tx.hasRef { // the first structured reference is the one kept
			tx.ref, tx.hasRef = strings.TrimSpace(text), true
		}
	case is(rel, "RmtInf", "Strd", "CdtrRefInf", "Tp", "CdOrPrtry", "Cd"),
		is(rel, "RmtInf", "Strd", "CdtrRefInf", "Tp", "CdOrPrtry", "Prtry"):
		if !tx.hasRef && tx.refType == "" {
			tx.refType = strings.TrimSpace(text)
		}
	case is(rel, "CdtrAgt", "FinInstnId", "BICFI"):
		tx.bicfi = text
	case is(rel, "CdtrAgt", "FinInstnId", "BIC"): // 001.001.03
		tx.bic = text
	case is(rel, "Cdtr", "Nm"):
		tx.name = text
	case is(rel, "CdtrAcct", "Id", "IBAN"):
		tx.iban = text
	case is(rel, "RmtInf", "Ustrd"):
		tx.ustrd = append(tx.ustrd, text)
	default:
		if f, ok := txdetail.At(rel); ok {
			f.Set(&tx.details, strings.TrimSpace(text))
		}
	}
}

// transaction turns the CdtTrfTxInf that just ended into a payment, or a
// line of Bad, and keeps its origin for the file's status report.
func (d *painDecoder) transaction() {
	pi, tx := &d.pi, &d.tx
	pi.txs++
	n := d.f.Declared + 1
	d.f.Declared = n
	amount, ccy := strings.TrimSpace(tx.amount), strings.TrimSpace(tx.ccy)
	if !tx.hasInstd {
		amount, ccy = strings.TrimSpace(tx.eqvtAmount), strings.TrimSpace(tx.eqvtCcy)
	}
	pi.amounts.add(amount, pi.index, pi.txs)
	d.sum.add(amount, pi.index, pi.txs)
	if !pi.dateTimeResolved {
		pi.at, pi.atField, pi.atErr = executionTime(pi)
		pi.dateTimeResolved = true
	}
	chrgBr := tx.chrgBr
	if chrgBr == "" {
		chrgBr = pi.chrgBr
	}
	ref := tx.ref
	pi.origins = append(pi.origins, payment.TxOrigin{Place: n, InstrID: strings.TrimSpace(tx.instrID), EndToEndID: strings.TrimSpace(tx.endToEnd),
		ChargeBearer: chrgBr, CreditorRef: ref, CreditorRefType: tx.refType})

	at := fmt.Sprintf("PmtInf[%d]/CdtTrfTxInf[%d]/", pi.index, pi.txs)
	var bad []field.Error
	add := func(name, format string, args ...any) {
		bad = append(bad, field.Error{Field: name, Detail: fmt.Sprintf(format, args...)})
	}
	if pi.atErr != nil {
		add(fmt.Sprintf("PmtInf[%d]/%s", pi.index, pi.atField), "%s", pi.atErr.Error())
	}
	switch {
	case tx.hasInstd:
	case !tx.hasEqvt:
		add(at+"Amt/InstdAmt", "required: the amount with its Ccy")
	case tx.ccyOfTrf != ccy:
		// EqvtAmt fixes the debit in one currency and asks for it to be
		// converted into CcyOfTrf; a payment here fixes the amount the
		// creditor is sent, and its debit follows from the rate. The
		// two are not the same order, so it is refused, not guessed.
		add(at+"Amt/EqvtAmt", "an equivalent amount of %s %s to be sent in %s cannot be taken: paydispatch fixes the amount sent, not the debit; give InstdAmt in %s",
			plaintext.Clip(amount, 24), plaintext.Clip(ccy, 8), plaintext.Clip(tx.ccyOfTrf, 8), plaintext.Clip(tx.ccyOfTrf, 8))
	}
	if strings.TrimSpace(tx.iban) == "" && strings.TrimSpace(tx.othr) != "" {
		add(at+"CdtrAcct/Id/Othr/Id", "the creditor's account %q is not an IBAN: every rail paydispatch sends to routes by the creditor's IBAN",
			plaintext.Clip(strings.TrimSpace(tx.othr), 40))
	}
	if chrgBr != "" && chrgBr != "SLEV" {
		add(at+"ChrgBr", "charge bearer %s cannot be honoured: paydispatch's rails apply the scheme's charges (SLEV) to every payment; send SLEV or leave ChrgBr out", chrgBr)
	}
	if tx.hasRef {
		if detail := checkCreditorRef(ref, tx.refType); detail != "" {
			add(at+"RmtInf/Strd/CdtrRefInf/Ref", "%s", detail)
		}
	}
	if len(bad) > 0 {
		d.f.Bad = append(d.f.Bad, payment.LineError{Line: n, Fields: bad})
		return
	}
	bic := tx.bicfi
	if bic == "" {
		bic = tx.bic
	}
	id := strings.TrimSpace(tx.endToEnd)
	if id == "" || id == "NOTPROVIDED" {
		id = strings.TrimSpace(tx.instrID)
	}
	debtor := strings.TrimSpace(pi.othr)
	if debtor == "" {
		debtor = strings.TrimSpace(pi.iban)
	}
	// The rail carries remittance as text only: a structured reference
	// alone becomes the text, so that the creditor still receives it;
	// beside Ustrd it is kept with the file (TxOrigin) only.
	remittance := strings.Join(tx.ustrd, " ")
	if remittance == "" {
		remittance = ref
	}
	priority := tx.priority
	if priority == "" {
		priority = pi.priority
	}
	d.f.Requests = append(d.f.Requests, payment.Request{
		PaymentID: id, DebtorAccount: debtor,
		Amount: amount, Currency: ccy,
		Creditor:               payment.Creditor{Name: strings.TrimSpace(tx.name), IBAN: strings.TrimSpace(tx.iban), BIC: strings.TrimSpace(bic)},
		RequestedExecutionTime: pi.at, RemittanceInfo: remittance, Priority: priority, Details: tx.details,
	})
	d.f.Places = append(d.f.Places, n)
}

// instrPriority is the payment's priority an instruction priority
// (Priority2Code, which the schema has checked) asks for: HIGH is HIGH,
// NORM is NORMAL.
func instrPriority(code string) payment.Priority {
	if strings.TrimSpace(code) == "HIGH" {
		return payment.PriorityHigh
	}
	return payment.PriorityNormal
}

// checkPmtInf checks a PmtInf's NbOfTxs and CtrlSum at its end.
func (d *painDecoder) checkPmtInf() error {
	pi := &d.pi
	name := fmt.Sprintf("PmtInf[%d]", pi.index)
	at := func(line int, child string) string {
		return fmt.Sprintf("line %d: element Document/CstmrCdtTrfInitn/%s/%s", line, name, child)
	}
	if pi.nb != "" {
		if err := checkCount(pi.nb, pi.txs); err != nil {
			return &FormatError{Where: at(pi.nbLine, "NbOfTxs"), Detail: fmt.Sprintf("%s/NbOfTxs says %s, %s has %d CdtTrfTxInf", name, err.Error(), name, pi.txs)}
		}
	}
	if pi.sum != "" {
		if detail := checkSum(pi.sum, pi.amounts, name+"/CtrlSum", "the amounts of "+name); detail != "" {
			return &FormatError{Where: at(pi.sumLine, "CtrlSum"), Detail: detail}
		}
	}
	return nil
}

// checkCount compares a declared NbOfTxs with the transactions found; the
// error's text is the figure as declared.
func checkCount(declared string, have int) error {
	s := strings.TrimSpace(declared)
	n, err := money.ParseDecimal(s, money.Unsigned)
	if err != nil || !n.Equal(decimal.NewFromInt(int64(have))) {
		return errors.New(plaintext.Clip(s, 24))
	}
	return nil
}

// checkSum compares a declared CtrlSum with the sum of the amounts it
// covers, exactly; "" when they agree.
func checkSum(declared string, amounts sumOf, field, what string) string {
	s := strings.TrimSpace(declared)
	want, err := money.ParseDecimal(s, money.Unsigned)
	switch {
	case err != nil:
		return fmt.Sprintf("%s %q: %v", field, plaintext.Clip(s, 48), err)
	case amounts.bad != "":
		return fmt.Sprintf("%s cannot be checked: the amount of %s is not a plain decimal such as 125.00", field, amounts.bad)
	case !want.Equal(amounts.total):
		return fmt.Sprintf("%s says %s, %s add up to %s", field, plaintext.Clip(s, 48), what, amounts.total.String())
	}
	return ""
}

// finish checks the group header's figures against the whole file.
func (d *painDecoder) finish() (File, error) {
	const grp = "line %d: element Document/CstmrCdtTrfInitn/GrpHdr/%s"
	if err := checkCount(d.grpNb, d.f.Declared); err != nil {
		return File{}, &FormatError{Where: fmt.Sprintf(grp, d.grpNbLine, "NbOfTxs"), Detail: fmt.Sprintf("GrpHdr/NbOfTxs says %s, the file has %d CdtTrfTxInf", err.Error(), d.f.Declared)}
	}
	if d.grpSum != "" {
		if detail := checkSum(d.grpSum, d.sum, "GrpHdr/CtrlSum", "the file's amounts"); detail != "" {
			return File{}, &FormatError{Where: fmt.Sprintf(grp, d.grpSumLine, "CtrlSum"), Detail: detail}
		}
	}
	if d.f.Declared == 0 { // the schemas require one; kept should a schema not
		return File{}, refuse("element CstmrCdtTrfInitn", "no CdtTrfTxInf: the document has no payments")
	}
	d.origin.NbOfTxs, d.origin.CtrlSum = strings.TrimSpace(d.grpNb), strings.TrimSpace(d.grpSum)
	d.f.Pain001 = &d.origin
	return d.f, nil
}

// executionTime reads a PmtInf's ReqdExctnDt: DtTm, which must carry its
// offset from UTC (a time without one is a different instant in every
// zone); else a date, Dt or the bare date of 001.001.03 to .07, at 00:00
// UTC that day (or at its own offset).
func executionTime(pi *pmtInf) (time.Time, string, error) {
	if pi.hasDtTm {
		s := strings.TrimSpace(pi.dtTm)
		if !hasOffset(s) {
			return time.Time{}, "ReqdExctnDt/DtTm", fmt.Errorf("DtTm %q has no UTC offset: add one, such as %sZ or %s+01:00", plaintext.Clip(s, 40), plaintext.Clip(s, 40), plaintext.Clip(s, 40))
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, "ReqdExctnDt/DtTm", fmt.Errorf("DtTm %q: want an ISO date-time with its offset, such as 2026-11-22T16:00:00Z", plaintext.Clip(s, 40))
		}
		return t.UTC(), "", nil
	}
	field, s := "ReqdExctnDt/Dt", strings.TrimSpace(pi.dt)
	if !pi.hasDt {
		field, s = "ReqdExctnDt", strings.TrimSpace(pi.bare)
	}
	if s == "" {
		return time.Time{}, "ReqdExctnDt", errors.New("required: Dt or DtTm")
	}
	layout := time.DateOnly
	if len(s) > len(time.DateOnly) {
		layout = "2006-01-02Z07:00"
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return time.Time{}, field, fmt.Errorf("%q: want an ISO date such as 2026-11-22", plaintext.Clip(s, 40))
	}
	return t.UTC(), "", nil
}

// hasOffset reports whether an xs:dateTime ends with Z or ±hh:mm.
func hasOffset(s string) bool {
	if strings.HasSuffix(s, "Z") {
		return true
	}
	n := len(s)
	return n > len("2006-01-02T15:04:05") && (s[n-6] == '+' || s[n-6] == '-') && s[n-3] == ':'
}
