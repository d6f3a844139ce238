package xmlschema_test

import (
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/xmlschema"
)

// patternCases: XSD patterns, with values each must take or refuse. They
// cover the ISO 20022 patterns and what differs from RE2: anchoring, ^
// and $ as characters, Unicode \d and \w, class subtraction.
var patternCases = []struct {
	pattern   string
	good, bad []string
}{
	{`[A-Z]{3,3}`, []string{"EUR"}, []string{"EU", "EURO", "eur", ""}},
	{`[A-Z]{6,6}[A-Z2-9][A-NP-Z0-9]([A-Z0-9]{3,3}){0,1}`, []string{"COBADEFFXXX", "COBADEFF"}, []string{"COBADEFFXX", "COBADE1FXXX", "COBADEFO"}},
	{`[A-Z0-9]{4,4}[A-Z]{2,2}[A-Z0-9]{2,2}([A-Z0-9]{3,3}){0,1}`, []string{"1234DEFF", "COBADEFFXXX"}, []string{"COBA1EFF"}},
	{`[A-Z0-9]{18,18}[0-9]{2,2}`, []string{"5493001KJTIIGC8Y1R12"}, []string{"5493001KJTIIGC8Y1R1X"}},
	{`[a-f0-9]{8}-[a-f0-9]{4}-4[a-f0-9]{3}-[89ab][a-f0-9]{3}-[a-f0-9]{12}`, []string{"eb6305c9-1f7f-49de-aed0-16487c27b42d"}, []string{"eb6305c9-1f7f-39de-aed0-16487c27b42d", "EB6305C9-1F7F-49DE-AED0-16487C27B42D"}},
	{`\+[0-9]{1,3}-[0-9()+\-]{1,30}`, []string{"+41-(0)44-123", "+1-+-"}, []string{"41-1", "+1234-1"}},
	{`[0-9]{1,15}`, []string{"0", "123456789012345"}, []string{"", "1234567890123456", "1.0"}},
	{`[a-zA-Z0-9]{4}`, []string{"aZ09"}, []string{"aZ0"}},
	{`[0-9]{2}`, []string{"00"}, []string{"0"}},
	{`\d+`, []string{"0123", "١٢", "٤٢0"}, []string{"x", "½"}},
	{`\D`, []string{"x"}, []string{"1", "١"}},
	{`\s?a`, []string{"a", " a", "\ta"}, []string{"  a"}},
	{`\S+`, []string{"ab", "é"}, []string{"a b"}},
	{`\w+`, []string{"héllo", "a1", "€"}, []string{"a-b", "a b", "a.b"}},
	{`\W`, []string{"-", " ", "."}, []string{"a", "1"}},
	{`\p{Lu}+`, []string{"ÉA"}, []string{"a", "Éa"}},
	{`\P{L}`, []string{"1", "-"}, []string{"a"}},
	{`[^a-c]`, []string{"d", "é"}, []string{"b", "dd"}},
	{`[\d-[5]]+`, []string{"1234", "١"}, []string{"5", "15"}},
	{`[a-z-[aeiou]]+`, []string{"xyz"}, []string{"xaz", "X"}},
	{`[^a-z-[aeiou]]`, []string{"1", "A"}, []string{"a", "b"}},
	{`[\p{L}-[\p{Lu}]]+`, []string{"abé"}, []string{"aB", "1"}},
	{`a|bc`, []string{"a", "bc"}, []string{"abc", "b", ""}},
	{`(ab)*`, []string{"", "abab"}, []string{"aba"}},
	{`.`, []string{"é", " "}, []string{"ab", "\n", "\r"}},
	{`x{2}`, []string{"xx"}, []string{"x", "xxx"}},
	{`x{2,}`, []string{"xx", "xxxx"}, []string{"x"}},
	{`[-a]+`, []string{"-a-"}, []string{"b"}},
	{`[a-]+`, []string{"a-"}, []string{"b"}},
	{`\.\?\*\+\(\)\{\}\|\[\]\\`, []string{`.?*+(){}|[]\`}, []string{"x"}},
	{`[\^a]+`, []string{"^a"}, []string{"b"}},
	{`^a$`, []string{"^a$"}, []string{"a"}},
	{`a?`, []string{"", "a"}, []string{"aa"}},
	{`\n?x\t?`, []string{"x", "\nx\t"}, []string{"xx"}},
}

// patternSchema builds a schema with one element per pattern, P0, P1, ….
func patternSchema() string {
	var b strings.Builder
	b.WriteString(`<xs:schema xmlns="urn:p" xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified" targetNamespace="urn:p">
<xs:element name="D" type="D"/>
<xs:complexType name="D"><xs:choice>`)
	for i := range patternCases {
		fmt.Fprintf(&b, `<xs:element name="P%d" type="T%d"/>`, i, i)
	}
	b.WriteString("</xs:choice></xs:complexType>\n")
	for i, pc := range patternCases {
		fmt.Fprintf(&b, `<xs:simpleType name="T%d"><xs:restriction base="xs:string"><xs:pattern value="%s"/></xs:restriction></xs:simpleType>`+"\n", i, html.EscapeString(pc.pattern))
	}
	b.WriteString("</xs:schema>\n")
	return b.String()
}

type patternDoc struct {
	pattern, value, doc string
	good                bool
}

func patternDocs() []patternDoc {
	var docs []patternDoc
	for i, pc := range patternCases {
		for _, good := range []bool{true, false} {
			values := pc.bad
			if good {
				values = pc.good
			}
			for _, v := range values {
				esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", "\r", "&#13;", "\t", "&#9;").Replace(v)
				docs = append(docs, patternDoc{pc.pattern, v, fmt.Sprintf(`<D xmlns="urn:p"><P%d>%s</P%d></D>`, i, esc, i), good})
			}
		}
	}
	return docs
}

func TestPatterns(t *testing.T) {
	t.Parallel()
	s, err := xmlschema.Compile([]byte(patternSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range patternDocs() {
		err := s.Validate(strings.NewReader(d.doc))
		if (err == nil) != d.good {
			t.Errorf("pattern %s, value %q: %v, want valid %v", d.pattern, d.value, err, d.good)
		}
	}
}

// The patterns mean to xmllint what they mean to xmlschema.
func TestPatternsAgreeWithXmllint(t *testing.T) {
	t.Parallel()
	xmllint := lookXmllint(t)
	dir := t.TempDir()
	xsd := filepath.Join(dir, "p.xsd")
	if err := os.WriteFile(xsd, []byte(patternSchema()), 0o600); err != nil {
		t.Fatal(err)
	}
	docs := patternDocs()
	args := []string{"--noout", "--nonet", "--schema", xsd}
	for i, d := range docs {
		f := filepath.Join(dir, fmt.Sprintf("%03d.xml", i))
		if err := os.WriteFile(f, []byte(d.doc), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, f)
	}
	out, _ := exec.Command(xmllint, args...).CombinedOutput()
	for i, d := range docs {
		f := filepath.Join(dir, fmt.Sprintf("%03d.xml", i))
		if valid := strings.Contains(string(out), f+" validates"); valid != d.good {
			t.Errorf("pattern %s, value %q: xmllint valid %v, want %v\n%s", d.pattern, d.value, valid, d.good, grep(out, f))
		}
	}
}

// Patterns outside XSD's grammar, or that RE2 cannot express, refuse the
// schema.
func TestPatternRefused(t *testing.T) {
	t.Parallel()
	for pattern, want := range map[string]string{
		`\i+`:              `unsupported escape \i`,
		`\c`:               `unsupported escape \c`,
		`\p{IsBasicLatin}`: "only Unicode general categories",
		`(?:a)`:            `"(?"`,
		`a**`:              "a quantifier after a quantifier",
		`a*?`:              "a quantifier after a quantifier",
		`[a`:               "unclosed [",
		`a{2,1}`:           "bad quantifier {2,1}",
		`a{,2}`:            "bad quantifier {,2}",
		`]`:                `unexpected ']'`,
		`(a`:               "unclosed group",
		`[]`:               "empty []",
		`[a-\d]`:           "a range ending in a class escape",
		`[z-a]`:            "out of order",
		`[a-z-[aeiou]b]`:   "a subtraction must end its class",
		`a{1001}`:          "invalid repeat count",
		`\`:                `a lone \ at the end`,
		`[a-c-e]`:          "unescaped - in a class",
		strings.Repeat("(", 40) + strings.Repeat(")", 40): "groups nested over 32 deep",
	} {
		xsd := `<xs:schema xmlns="urn:p" xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified" targetNamespace="urn:p">` +
			`<xs:element name="D" type="T"/><xs:simpleType name="T"><xs:restriction base="xs:string"><xs:pattern value="` + html.EscapeString(pattern) + `"/></xs:restriction></xs:simpleType></xs:schema>`
		if _, err := xmlschema.Compile([]byte(xsd)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("pattern %s: %v, want an error with %q", pattern, err, want)
		}
	}
}
