package bulkfile

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
)

// pain001 is the part of a pain.001 (CustomerCreditTransferInitiation,
// versions 001.001.03 to 001.001.11 share it) that a payment needs. The
// amount is kept as its text: money never passes through a float.
type pain001 struct {
	XMLName xml.Name `xml:"Document"`
	Init    *struct {
		PmtInf []struct {
			PmtInfID    string `xml:"PmtInfId"`
			ReqdExctnDt struct {
				Dt   string `xml:"Dt"`
				DtTm string `xml:"DtTm"`
				Text string `xml:",chardata"` // 001.001.03: a bare date
			} `xml:"ReqdExctnDt"`
			DbtrAcct struct {
				ID struct {
					IBAN string `xml:"IBAN"`
					Othr struct {
						ID string `xml:"Id"`
					} `xml:"Othr"`
				} `xml:"Id"`
			} `xml:"DbtrAcct"`
			Tx []struct {
				PmtID struct {
					InstrID    string `xml:"InstrId"`
					EndToEndID string `xml:"EndToEndId"`
				} `xml:"PmtId"`
				Amt struct {
					InstdAmt *struct {
						Ccy   string `xml:"Ccy,attr"`
						Value string `xml:",chardata"`
					} `xml:"InstdAmt"`
				} `xml:"Amt"`
				CdtrAgt struct {
					FinInstnID struct {
						BICFI string `xml:"BICFI"`
						BIC   string `xml:"BIC"` // 001.001.03
					} `xml:"FinInstnId"`
				} `xml:"CdtrAgt"`
				Cdtr struct {
					Nm string `xml:"Nm"`
				} `xml:"Cdtr"`
				CdtrAcct struct {
					ID struct {
						IBAN string `xml:"IBAN"`
					} `xml:"Id"`
				} `xml:"CdtrAcct"`
				RmtInf struct {
					Ustrd []string `xml:"Ustrd"`
				} `xml:"RmtInf"`
			} `xml:"CdtTrfTxInf"`
		} `xml:"PmtInf"`
	} `xml:"CstmrCdtTrfInitn"`
}

// DecodePain001 reads an ISO 20022 pain.001 document: each credit
// transfer (CdtTrfTxInf) becomes a payment — its EndToEndId the payment
// id, the payment information's debtor account (Othr/Id, else IBAN) the
// debtor account, ReqdExctnDt/DtTm its time (a date alone: 00:00 UTC that
// day). Places number the transactions 1, 2, … in document order. XML
// that is not a pain.001 refuses the file.
func DecodePain001(r io.Reader) (File, error) {
	var doc pain001
	src := &watchedReader{r: r}
	dec := xml.NewDecoder(src)
	dec.Strict = true
	if err := dec.Decode(&doc); err != nil {
		if src.err != nil {
			return File{}, src.err
		}
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return File{}, refuse(fmt.Sprintf("line %d", se.Line), "not well-formed XML: %s", se.Msg)
		}
		if errors.Is(err, io.EOF) {
			return File{}, refuse("", "no XML element in the file: want a pain.001 Document")
		}
		return File{}, refuse("", "not a pain.001 document: %v", err)
	}
	if doc.XMLName.Local != "Document" || doc.Init == nil {
		return File{}, refuse("element Document", "want Document/CstmrCdtTrfInitn (pain.001)")
	}
	if !strings.HasPrefix(doc.XMLName.Space, "urn:iso:std:iso:20022:tech:xsd:pain.001.") {
		return File{}, refuse("element Document", "namespace %q: want urn:iso:std:iso:20022:tech:xsd:pain.001.001.NN", plaintext.Clip(doc.XMLName.Space, 32))
	}
	var f File
	n := 0
	for i, pi := range doc.Init.PmtInf {
		debtor := strings.TrimSpace(pi.DbtrAcct.ID.Othr.ID)
		if debtor == "" {
			debtor = strings.TrimSpace(pi.DbtrAcct.ID.IBAN)
		}
		at, atErr := executionTime(pi.ReqdExctnDt.DtTm, pi.ReqdExctnDt.Dt, pi.ReqdExctnDt.Text)
		for j, tx := range pi.Tx {
			n++
			where := fmt.Sprintf("PmtInf[%d]/CdtTrfTxInf[%d]", i+1, j+1)
			var bad []payment.FieldError
			if atErr != nil {
				bad = append(bad, payment.FieldError{Field: fmt.Sprintf("PmtInf[%d]/ReqdExctnDt", i+1), Detail: atErr.Error()})
			}
			if tx.Amt.InstdAmt == nil {
				bad = append(bad, payment.FieldError{Field: where + "/Amt/InstdAmt", Detail: "required: the amount with its Ccy"})
			}
			if len(bad) > 0 {
				f.Bad = append(f.Bad, payment.LineError{Line: n, Fields: bad})
				continue
			}
			bic := tx.CdtrAgt.FinInstnID.BICFI
			if bic == "" {
				bic = tx.CdtrAgt.FinInstnID.BIC
			}
			id := strings.TrimSpace(tx.PmtID.EndToEndID)
			if id == "" || id == "NOTPROVIDED" {
				id = strings.TrimSpace(tx.PmtID.InstrID)
			}
			f.Requests = append(f.Requests, payment.Request{
				PaymentID: id, DebtorAccount: debtor,
				Amount: strings.TrimSpace(tx.Amt.InstdAmt.Value), Currency: strings.TrimSpace(tx.Amt.InstdAmt.Ccy),
				Creditor:               payment.Creditor{Name: strings.TrimSpace(tx.Cdtr.Nm), IBAN: strings.TrimSpace(tx.CdtrAcct.ID.IBAN), BIC: strings.TrimSpace(bic)},
				RequestedExecutionTime: at, RemittanceInfo: strings.Join(tx.RmtInf.Ustrd, " "),
			})
			f.Places = append(f.Places, n)
		}
	}
	if n == 0 {
		return File{}, refuse("element CstmrCdtTrfInitn", "no CdtTrfTxInf: the document has no payments")
	}
	return f, nil
}

func executionTime(dtTm, dt, bare string) (time.Time, error) {
	if s := strings.TrimSpace(dtTm); s != "" {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UTC(), nil
			}
		}
		return time.Time{}, fmt.Errorf("DtTm %q: want an ISO date-time such as 2026-11-22T16:00:00Z", plaintext.Clip(s, 32))
	}
	s := strings.TrimSpace(dt)
	if s == "" {
		s = strings.TrimSpace(bare)
	}
	if s == "" {
		return time.Time{}, errors.New("required: Dt or DtTm")
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("Dt %q: want an ISO date such as 2026-11-22", plaintext.Clip(s, 32))
	}
	return t, nil
}
