package bulkfile

import (
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// isoNS is the namespace of an ISO 20022 message version.
const isoNS = "urn:iso:std:iso:20022:tech:xsd:"

// Variant is a published form of pain.001 that DecodePain001 takes: its
// namespace, the ISO version whose schema checks it (the variant
// restricts that version's structure and keeps its element names, so a
// file valid against the variant's own schema is valid against ISO's),
// and the message name a status report echoes.
type Variant struct {
	Namespace string
	ISO       string // "pain.001.001.03"
	MsgNmID   string // "pain.001.001.03.ch.02"
	Name      string
}

// variants are the national and community variants published in a
// namespace of their own. Those that use ISO's own namespace (EPC SEPA
// 2009 and 2019, Swiss Payment Standards 2022 and later, CFONB, APC, ...)
// are ISO versions here and need no entry.
var variants = []Variant{
	{"http://www.six-interbank-clearing.com/de/pain.001.001.03.ch.02.xsd", "pain.001.001.03", "pain.001.001.03.ch.02",
		"Swiss Payment Standards (SIX) 2010 to 2021, version ch.02"},
	{"http://www.six-interbank-clearing.com/de/pain.001.001.03.ch.01.xsd", "pain.001.001.03", "pain.001.001.03.ch.01",
		"Swiss Payment Standards (SIX) 2010, version ch.01"},
	{isoNS + "pain.001.003.03", "pain.001.001.03", "pain.001.003.03",
		"German DK (DFÜ-Abkommen Anlage 3) SEPA credit transfer from 2013"},
	{isoNS + "pain.001.002.03", "pain.001.001.03", "pain.001.002.03",
		"German DK (DFÜ-Abkommen Anlage 3) SEPA credit transfer 2012"},
}

// Pain001Variants lists every namespace DecodePain001 takes: ISO's
// versions, then the variants, each with the version that checks it.
func Pain001Variants() []Variant {
	var out []Variant
	for _, ns := range isoPain001Namespaces() {
		v := strings.TrimPrefix(ns, isoNS)
		out = append(out, Variant{Namespace: ns, ISO: v, MsgNmID: v, Name: "ISO 20022 " + v})
	}
	return append(out, variants...)
}

// acceptedList names the accepted namespaces for an error message.
func acceptedList() string {
	var b strings.Builder
	for i, v := range Pain001Variants() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v.Namespace)
		if v.MsgNmID != v.ISO {
			fmt.Fprintf(&b, " (%s)", v.Name)
		}
	}
	return b.String()
}

// variantOf is the variant of a namespace, found false for one not taken.
func variantOf(ns string) (Variant, bool) {
	for _, v := range Pain001Variants() {
		if v.Namespace == ns {
			return v, true
		}
	}
	return Variant{}, false
}

// messages names ISO 20022 messages by the first element of their
// Document, for a file that is not a pain.001.
var messages = map[string]string{
	"CstmrCdtTrfInitn":       "pain.001 (customer credit transfer initiation)",
	"CstmrPmtStsRpt":         "pain.002 (customer payment status report)",
	"CstmrPmtRvsl":           "pain.007 (customer payment reversal)",
	"CstmrDrctDbtInitn":      "pain.008 (customer direct debit initiation)",
	"MndtInitnReq":           "pain.009 (mandate initiation request)",
	"MndtAmdmntReq":          "pain.010 (mandate amendment request)",
	"MndtCxlReq":             "pain.011 (mandate cancellation request)",
	"MndtAccptncRpt":         "pain.012 (mandate acceptance report)",
	"CdtrPmtActvtnReq":       "pain.013 (creditor payment activation request)",
	"CdtrPmtActvtnReqStsRpt": "pain.014 (creditor payment activation request status report)",
	"FIToFIPmtStsRpt":        "pacs.002 (FI to FI payment status report)",
	"FIToFICstmrDrctDbt":     "pacs.003 (FI to FI customer direct debit)",
	"PmtRtr":                 "pacs.004 (payment return)",
	"FIToFICstmrCdtTrf":      "pacs.008 (FI to FI customer credit transfer)",
	"FICdtTrf":               "pacs.009 (financial institution credit transfer)",
	"RsltnOfInvstgtn":        "camt.029 (resolution of investigation)",
	"BkToCstmrAcctRpt":       "camt.052 (bank to customer account report)",
	"BkToCstmrStmt":          "camt.053 (bank to customer statement)",
	"BkToCstmrDbtCdtNtfctn":  "camt.054 (bank to customer debit credit notification)",
	"CstmrPmtCxlReq":         "camt.055 (customer payment cancellation request)",
	"FIToFIPmtCxlReq":        "camt.056 (FI to FI payment cancellation request)",
}

// messageNames are ISO 20022 message names by their area and number, for
// a namespace that names one.
var messageNames = func() map[string]string {
	m := map[string]string{}
	for _, name := range messages {
		m[name[:len("pain.001")]] = name
	}
	return m
}()

// namedMessage finds the message a namespace names: ISO's
// (urn:iso:std:iso:20022:tech:xsd:pain.002.001.03) or SIX's
// (http://www.six-interbank-clearing.com/de/pain.002.001.03.ch.02.xsd).
var namedMessage = regexp.MustCompile(`(?:^urn:iso:std:iso:20022:tech:xsd:|^http://www\.six-interbank-clearing\.com/[a-z]{2}/)([a-z]{4}\.[0-9]{3})\.[0-9]{3}\.[0-9]{2}`)

// errOtherMessage marks a root whose namespace is not a pain.001 one; the
// decoder then looks at Document's first element to name the message.
var errOtherMessage = errors.New("not a pain.001 namespace")

// notPain001 explains a document that is not a pain.001 of a namespace
// taken: the message it is, when its namespace or its first element
// (first, "" if unknown) says, and what is wanted.
func notPain001(line int, ns, first string) *FormatError {
	where := fmt.Sprintf("line %d: element Document", line)
	msg := ""
	if m := namedMessage.FindStringSubmatch(ns); m != nil {
		msg = messageNames[m[1]]
		if msg == "" {
			msg = m[1]
		}
	}
	if msg == "" {
		msg = messages[first]
	}
	switch {
	case msg != "" && strings.HasPrefix(msg, "pain.001"):
		return refuse(where, "namespace %q is not a supported pain.001 version or variant: want one of %s",
			plaintext.Clip(ns, 80), acceptedList())
	case msg != "":
		return refuse(where, "the file is a %s, not a pain.001: send a pain.001 (customer credit transfer initiation, CstmrCdtTrfInitn) in one of the namespaces %s",
			msg, acceptedList())
	}
	return refuse(where, "namespace %q is not a supported pain.001 version or variant: want one of %s",
		plaintext.Clip(ns, 80), acceptedList())
}

// firstChild reads on from the root's start to the next start element
// (Document's first child) and returns its local name; "" when none comes
// within a few tokens.
func firstChild(dec *xml.Decoder) string {
	for range 64 {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local
		}
	}
	return ""
}

// isoPain001Namespaces are the namespaces of the ISO versions shipped,
// oldest first.
func isoPain001Namespaces() []string {
	var out []string
	for ns := range isoSchemas() {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}
