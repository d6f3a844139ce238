package bulkfile

import (
	"encoding/hex"
	"encoding/xml"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/payment"
)

// Pain002Namespace is the version of the status reports StatusReport
// writes: pain.002.001.11, whatever the version of the file, since it is
// the version whose official schema is checked here (the elements a
// report uses are the same in .03, .10 and .11).
const Pain002Namespace = isoNS + "pain.002.001.11"

// The transaction statuses a report gives (ISO's external code set).
const (
	StsReceived  = "ACTC" // taken in, its checks of the whole file passed; Phase A to come
	StsAccepted  = "ACCP" // scheduled for its execution time
	StsSettling  = "ACSP" // executing: debited, on its way to the rail
	StsDelivered = "ACSC" // the rail took it
	StsRejected  = "RJCT"
	StsCancelled = "CANC"
	StsPartial   = "PART" // a group some of whose transactions were rejected
	StsPending   = "PDNG" // held at its rail's cut-off, for an operator to release or cancel
)

// txStatus is a transaction's status with its reasons, and where and
// when it executes: its rail and execution date (empty: none yet).
type txStatus struct {
	code       string
	reasons    []reason
	rail, date string
	details    txdetail.Details
}

type reason struct{ code, info string }

// statusOf is where a transaction of the file is.
func statusOf(rep payment.Pain001Report, tx payment.TxOrigin) txStatus {
	if fields, ok := rep.Rejections[tx.Place]; ok {
		var rs []reason
		for _, f := range fields {
			rs = append(rs, reason{code: fieldReason(f, tx), info: f.Field + ": " + f.Detail})
		}
		return txStatus{code: StsRejected, reasons: rs}
	}
	if tx.Key == "" {
		// Neither started nor listed: only past the 10,000 rejections kept.
		return txStatus{code: StsRejected, reasons: []reason{{code: "NARR", info: "rejected at intake (beyond the first 10,000 rejections kept)"}}}
	}
	o, ok := rep.Outcomes[tx.Key]
	if !ok {
		return txStatus{code: StsReceived}
	}
	st := txStatus{rail: o.Rail, date: o.ExecutionDate, details: o.Details}
	switch o.Status {
	case payment.StatusReceived:
		st.code = StsReceived
	case payment.StatusScheduled:
		st.code = StsAccepted
	case payment.StatusAccepted, payment.StatusProcessing:
		st.code = StsSettling
	case payment.StatusDelivered:
		st.code = StsDelivered
	case payment.StatusCancelled:
		st.code, st.reasons = StsCancelled, []reason{{code: "DS02", info: "cancelled before its execution began"}}
	case payment.StatusHeld, payment.StatusAwaitingApproval:
		st.code, st.reasons, st.date = StsPending, []reason{{code: "TM01", info: string(o.Status) + ": " + o.Reason}}, ""
	default:
		st.code, st.reasons, st.date = StsRejected, []reason{{code: outcomeReason(o.Reason), info: string(o.Status) + ": " + o.Reason}}, ""
	}
	return st
}

// isoCode is an ISO external status reason code given as such.
var isoCode = regexp.MustCompile(`^[A-Z]{2}[0-9]{2}$`)

// outcomeReason maps a payment's failure or refusal ("CODE: text") to
// an ISO status reason code; NARR, with the reason as text, when none
// fits.
func outcomeReason(r string) string {
	code, _, _ := strings.Cut(r, ":")
	code = strings.TrimSpace(code)
	if isoCode.MatchString(code) {
		return code
	}
	switch code {
	case payment.CodeCutoffMissed:
		return "TM01" // received after the agreed processing cut-off
	case "INSUFFICIENT_FUNDS":
		return "AM04"
	case "LIMIT_EXCEEDED":
		return "AM14"
	case "ACCOUNT_NOT_FOUND", "ACCOUNT_AMBIGUOUS":
		return "AC02"
	case "CURRENCY_MISMATCH":
		return "AM03"
	}
	return "NARR"
}

// fieldReason maps an intake rejection's field to an ISO status reason
// code.
func fieldReason(f field.Error, tx payment.TxOrigin) string {
	field := f.Field
	switch {
	case field == "paymentId" && (strings.Contains(f.Detail, "also on line") || strings.Contains(f.Detail, "already used")):
		// Duplicate: of the EndToEndId when it was the id, else InstrId.
		if tx.EndToEndID != "" && tx.EndToEndID != "NOTPROVIDED" {
			return "DU04"
		}
		return "DU05"
	case field == "debtorAccount":
		return "AC02"
	case field == "amount" && strings.Contains(f.Detail, "greater than zero"):
		return "AM01"
	case field == "amount", strings.HasSuffix(field, "Amt/InstdAmt"):
		return "AM12"
	case field == "currency", strings.HasSuffix(field, "Amt/EqvtAmt"):
		return "AM03"
	case strings.HasPrefix(field, "creditor.iban"), strings.HasSuffix(field, "CdtrAcct/Id/Othr/Id"):
		return "AC01"
	case field == "creditor.bic":
		return "RC01"
	case field == "requestedExecutionTime", strings.Contains(field, "ReqdExctnDt"):
		return "DT01"
	case field == "remittanceInfo", strings.HasSuffix(field, "CdtrRefInf/Ref"):
		return "FF01"
	}
	return "NARR"
}

// groupStatus aggregates statuses: RJCT when all were rejected or
// cancelled, PART when some were, else the least advanced of the rest.
func groupStatus(codes []string) string {
	rank := map[string]int{StsReceived: 0, StsPending: 1, StsAccepted: 2, StsSettling: 3, StsDelivered: 4}
	negative, least := 0, StsDelivered
	for _, c := range codes {
		if c == StsRejected || c == StsCancelled {
			negative++
			continue
		}
		if rank[c] < rank[least] {
			least = c
		}
	}
	switch {
	case len(codes) == 0:
		return StsReceived
	case negative == len(codes):
		return StsRejected
	case negative > 0:
		return StsPartial
	}
	return least
}

// The report's XML: only the elements it uses, in the schema's order.
type (
	p002Document struct {
		XMLName xml.Name   `xml:"Document"`
		Xmlns   string     `xml:"xmlns,attr"`
		Rpt     p002Report `xml:"CstmrPmtStsRpt"`
	}
	p002Report struct {
		GrpHdr   p002GrpHdr   `xml:"GrpHdr"`
		Orgnl    p002OrgnlGrp `xml:"OrgnlGrpInfAndSts"`
		PmtInfos []p002PmtInf `xml:"OrgnlPmtInfAndSts"`
	}
	p002GrpHdr struct {
		MsgID   string `xml:"MsgId"`
		CreDtTm string `xml:"CreDtTm"`
	}
	p002OrgnlGrp struct {
		MsgID   string       `xml:"OrgnlMsgId"`
		MsgNmID string       `xml:"OrgnlMsgNmId"`
		CreDtTm string       `xml:"OrgnlCreDtTm,omitempty"`
		NbOfTxs string       `xml:"OrgnlNbOfTxs,omitempty"`
		CtrlSum string       `xml:"OrgnlCtrlSum,omitempty"`
		GrpSts  string       `xml:"GrpSts"`
		PerSts  []p002PerSts `xml:"NbOfTxsPerSts"`
	}
	p002PerSts struct {
		Nb  int    `xml:"DtldNbOfTxs"`
		Sts string `xml:"DtldSts"`
	}
	p002PmtInf struct {
		ID      string       `xml:"OrgnlPmtInfId"`
		NbOfTxs string       `xml:"OrgnlNbOfTxs,omitempty"`
		CtrlSum string       `xml:"OrgnlCtrlSum,omitempty"`
		Sts     string       `xml:"PmtInfSts"`
		PerSts  []p002PerSts `xml:"NbOfTxsPerSts"`
		Txs     []p002Tx     `xml:"TxInfAndSts"`
	}
	p002Tx struct {
		StsID      string       `xml:"StsId"`
		InstrID    string       `xml:"OrgnlInstrId,omitempty"`
		EndToEndID string       `xml:"OrgnlEndToEndId,omitempty"`
		Sts        string       `xml:"TxSts"`
		Rsns       []p002Reason `xml:"StsRsnInf"`
		// The rail it leaves by, as its local instrument.
		TxRef *p002TxRef `xml:"OrgnlTxRef,omitempty"`
	}
	p002TxRef struct {
		PmtTpInf *p002PmtTpInf `xml:"PmtTpInf,omitempty"`
		// details echo the payment's, at their ISO paths.
		details txdetail.Details
	}
	p002PmtTpInf struct {
		Rail string `xml:"LclInstrm>Prtry"`
	}
	p002Reason struct {
		Rsn  *p002Code `xml:"Rsn,omitempty"`
		Info []string  `xml:"AddtlInf"`
	}
	p002Code struct {
		Cd string `xml:"Cd"`
	}
)

// StatusReport writes a pain.002 (customer payment status report,
// Pain002Namespace) for a pain.001 file: the group's status, each
// payment-information block's, and each transaction's with its reasons.
// Its MsgId is derived from the batch and the time, now.
func StatusReport(w io.Writer, rep payment.Pain001Report, now time.Time) error {
	o := rep.Origin
	doc := p002Document{Xmlns: Pain002Namespace, Rpt: p002Report{
		GrpHdr: p002GrpHdr{MsgID: reportID(rep.BatchID, now), CreDtTm: now.UTC().Format("2006-01-02T15:04:05Z")},
		Orgnl:  p002OrgnlGrp{MsgID: o.MsgID, MsgNmID: o.MsgNmID, CreDtTm: o.CreDtTm, NbOfTxs: o.NbOfTxs, CtrlSum: o.CtrlSum},
	}}
	var all []string
	for _, pi := range o.PmtInfs {
		p := p002PmtInf{ID: pi.PmtInfID, NbOfTxs: pi.NbOfTxs, CtrlSum: pi.CtrlSum}
		var codes []string
		for _, tx := range pi.Txs {
			st := statusOf(rep, tx)
			codes = append(codes, st.code)
			t := p002Tx{StsID: "TX" + strconv.Itoa(tx.Place), InstrID: tx.InstrID, EndToEndID: tx.EndToEndID, Sts: st.code}
			if st.rail != "" || !st.details.IsZero() {
				t.TxRef = &p002TxRef{details: st.details}
			}
			if st.rail != "" {
				t.TxRef.PmtTpInf = &p002PmtTpInf{Rail: st.rail}
			}
			if st.date != "" && st.code != StsRejected && st.code != StsCancelled && st.code != StsPending {
				// pain.002 has no element for it: said as information.
				st.reasons = append(st.reasons, reason{info: "execution date " + st.date + " on rail " + st.rail})
			}
			for _, r := range st.reasons {
				pr := p002Reason{Info: addtlInf(r.info)}
				if r.code != "" {
					pr.Rsn = &p002Code{Cd: r.code}
				}
				t.Rsns = append(t.Rsns, pr)
			}
			p.Txs = append(p.Txs, t)
		}
		p.Sts, p.PerSts = groupStatus(codes), perStatus(codes)
		doc.Rpt.PmtInfos = append(doc.Rpt.PmtInfos, p)
		all = append(all, codes...)
	}
	doc.Rpt.Orgnl.GrpSts, doc.Rpt.Orgnl.PerSts = groupStatus(all), perStatus(all)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// originalTransactionReference31 is the sequence of OrgnlTxRef's elements
// in the pain.002.001.11 XSD: where each element, a detail's too, goes.
var originalTransactionReference31 = []string{"IntrBkSttlmAmt", "Amt", "IntrBkSttlmDt", "ReqdColltnDt", "ReqdExctnDt",
	"CdtrSchmeId", "SttlmInf", "PmtTpInf", "PmtMtd", "MndtRltdInf", "RmtInf", "UltmtDbtr", "Dbtr", "DbtrAcct", "DbtrAgt",
	"DbtrAgtAcct", "CdtrAgt", "CdtrAgtAcct", "Cdtr", "CdtrAcct", "UltmtCdtr", "Purp"}

// MarshalXML writes the reference with the details in place.
func (r p002TxRef) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return txdetail.EncodeAmong(e, start, r, r.details, originalTransactionReference31)
}

// perStatus counts transactions by status, in the order first seen.
func perStatus(codes []string) []p002PerSts {
	var out []p002PerSts
	at := map[string]int{}
	for _, c := range codes {
		i, ok := at[c]
		if !ok {
			i = len(out)
			at[c] = i
			out = append(out, p002PerSts{Sts: c})
		}
		out[i].Nb++
	}
	return out
}

// reportID is a report's MsgId: the batch's hash and the time (at most
// 35 characters).
func reportID(batchID string, now time.Time) string {
	h := strings.TrimPrefix(batchID, "batch-")
	if _, err := hex.DecodeString(h); err != nil || len(h) > 24 {
		h = hex.EncodeToString([]byte(batchID))
		h = h[:min(len(h), 24)]
	}
	return "SR" + h + "-" + strconv.FormatInt(now.Unix(), 36)
}

// addtlInf cuts a reason into AddtlInf's Max105Text parts (two at most).
func addtlInf(s string) []string {
	rs := []rune(s)
	var out []string
	for len(rs) > 0 && len(out) < 2 {
		n := min(len(rs), 105)
		out = append(out, string(rs[:n]))
		rs = rs[n:]
	}
	return out
}
