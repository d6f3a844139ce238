package xmlschema

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

const (
	xsdNS = "http://www.w3.org/2001/XMLSchema"
	xsiNS = "http://www.w3.org/2001/XMLSchema-instance"
)

// unbounded is maxOccurs="unbounded".
const unbounded = math.MaxInt

// Schema is a compiled schema: its global elements, each with its type.
// It is immutable once compiled and safe to share between goroutines.
type Schema struct {
	ns       string
	elements map[string]*elementDecl
}

// TargetNamespace is the namespace the schema's elements are in.
func (s *Schema) TargetNamespace() string { return s.ns }

type elementDecl struct {
	name    string
	complex *complexType // one of complex and simple is set
	simple  *simpleType
}

// textType is the type of the element's text, nil for element-only content.
func (e *elementDecl) textType() *simpleType {
	if e.complex != nil {
		return e.complex.text
	}
	return e.simple
}

type modelKind int

const (
	mSequence modelKind = iota // the particles in order, each within its occurrences
	mChoice                    // one particle, within its occurrences
	mAny                       // a wildcard alone: any elements
	mSimple                    // text of type text, with attributes
)

type complexType struct {
	name   string
	model  modelKind
	parts  []particle
	byName map[string]int // element particles by local name
	attrs  []attributeDecl
	text   *simpleType // mSimple
}

// particle is an element in a content model, or the wildcard (el nil).
type particle struct {
	el       *elementDecl
	min, max int
	lax      bool // wildcard: validate an element a global declaration names; else skip it
}

func (p particle) label() string {
	if p.el == nil {
		return "any element"
	}
	return p.el.name
}

type attributeDecl struct {
	name     string
	typ      *simpleType
	required bool
}

// node is an element of a schema document, as compile reads it.
type node struct {
	space, local string
	attrs        map[string]string
	kids         []*node
	line         int
}

func (n *node) errorf(format string, args ...any) error {
	return fmt.Errorf("xmlschema: line %d: xs:%s: %s", n.line, n.local, fmt.Sprintf(format, args...))
}

// Compile reads an XSD. Only the subset ISO 20022 message schemas use is
// accepted (see the package documentation); anything else is an error
// naming it, so that no schema is ever half checked.
func Compile(xsd []byte) (*Schema, error) {
	root, prefixes, err := parseSchemaDoc(xsd)
	if err != nil {
		return nil, err
	}
	c := &compiler{
		prefixes: prefixes,
		complexN: map[string]*node{}, simpleN: map[string]*node{},
		complex: map[string]*complexType{}, simple: map[string]*simpleType{}, busy: map[string]bool{},
	}
	if root.space != xsdNS || root.local != "schema" {
		return nil, fmt.Errorf("xmlschema: the root element is %s, not xs:schema", root.local)
	}
	if err := only(root, "targetNamespace", "elementFormDefault", "attributeFormDefault", "version", "id"); err != nil {
		return nil, err
	}
	c.ns = root.attrs["targetNamespace"]
	if c.ns == "" {
		return nil, root.errorf("no targetNamespace: a schema without one is not supported")
	}
	if root.attrs["elementFormDefault"] != "qualified" {
		return nil, root.errorf(`elementFormDefault must be "qualified"`)
	}
	if v, ok := root.attrs["attributeFormDefault"]; ok && v != "unqualified" {
		return nil, root.errorf(`attributeFormDefault must be "unqualified"`)
	}
	var globals []*node
	for _, k := range root.kids {
		if k.local == "annotation" {
			continue
		}
		name := k.attrs["name"]
		switch k.local {
		case "element":
			globals = append(globals, k)
			continue
		case "complexType":
			if c.complexN[name] != nil || c.simpleN[name] != nil {
				return nil, k.errorf("type %q defined twice", name)
			}
			c.complexN[name] = k
		case "simpleType":
			if c.complexN[name] != nil || c.simpleN[name] != nil {
				return nil, k.errorf("type %q defined twice", name)
			}
			c.simpleN[name] = k
		default:
			return nil, k.errorf("not supported at the top level")
		}
		if name == "" {
			return nil, k.errorf("a top-level type needs a name")
		}
	}
	s := &Schema{ns: c.ns, elements: map[string]*elementDecl{}}
	for _, g := range globals {
		if err := only(g, "name", "type", "id"); err != nil {
			return nil, err
		}
		el, err := c.element(g)
		if err != nil {
			return nil, err
		}
		if s.elements[el.name] != nil {
			return nil, g.errorf("element %q declared twice", el.name)
		}
		s.elements[el.name] = el
	}
	if len(s.elements) == 0 {
		return nil, root.errorf("no global element: nothing to validate a document against")
	}
	// Every named type compiles, used or not: a schema is accepted whole or not at all.
	for name := range c.complexN {
		if _, err := c.complexType(name, root); err != nil {
			return nil, err
		}
	}
	for name := range c.simpleN {
		if _, err := c.simpleType(name, root); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// MustCompile is Compile for schemas built into the program: an error is a
// bug, and panics.
func MustCompile(xsd []byte) *Schema {
	s, err := Compile(xsd)
	if err != nil {
		panic(err)
	}
	return s
}

// parseSchemaDoc reads a schema document into nodes, leaving out
// annotations, and returns the namespace prefixes its root declares.
func parseSchemaDoc(xsd []byte) (*node, map[string]string, error) {
	dec := xml.NewDecoder(bytes.NewReader(xsd))
	dec.Strict = true
	var (
		stack    []*node
		root     *node
		prefixes = map[string]string{}
		skip     int // depth inside an annotation
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("xmlschema: %w", err)
		}
		line, _ := dec.InputPos()
		switch t := tok.(type) {
		case xml.StartElement:
			if skip > 0 {
				skip++
				continue
			}
			if t.Name.Space == xsdNS && t.Name.Local == "annotation" {
				skip = 1
				continue
			}
			n := &node{space: t.Name.Space, local: t.Name.Local, attrs: map[string]string{}, line: line}
			if n.space != xsdNS {
				return nil, nil, fmt.Errorf("xmlschema: line %d: element %s is not in the XML Schema namespace", line, t.Name.Local)
			}
			for _, a := range t.Attr {
				switch {
				case a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns":
					if root != nil {
						return nil, nil, fmt.Errorf("xmlschema: line %d: namespace declarations are supported on xs:schema only", line)
					}
					prefix := a.Name.Local
					if a.Name.Space == "" {
						prefix = ""
					}
					prefixes[prefix] = a.Value
				case a.Name.Space != "":
					return nil, nil, fmt.Errorf("xmlschema: line %d: xs:%s: attribute %s:%s is not supported", line, n.local, a.Name.Space, a.Name.Local)
				default:
					n.attrs[a.Name.Local] = a.Value
				}
			}
			if len(stack) > 0 {
				parent := stack[len(stack)-1]
				parent.kids = append(parent.kids, n)
			} else if root == nil {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			if skip > 0 {
				skip--
				continue
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if skip == 0 && len(bytes.Trim(t, " \t\r\n")) > 0 {
				return nil, nil, fmt.Errorf("xmlschema: line %d: unexpected text in the schema", line)
			}
		case xml.Directive:
			return nil, nil, fmt.Errorf("xmlschema: line %d: a DTD or declaration is not supported", line)
		}
	}
	if root == nil {
		return nil, nil, errors.New("xmlschema: no schema element")
	}
	return root, prefixes, nil
}

type compiler struct {
	ns       string
	prefixes map[string]string
	complexN map[string]*node
	simpleN  map[string]*node
	complex  map[string]*complexType
	simple   map[string]*simpleType
	busy     map[string]bool // simple types being compiled: a cycle is an error
}

// only refuses any attribute of n not listed.
func only(n *node, allowed ...string) error {
	for a := range n.attrs {
		ok := false
		for _, x := range allowed {
			ok = ok || a == x
		}
		if !ok {
			return n.errorf("attribute %s is not supported", a)
		}
	}
	return nil
}

// qname resolves a QName attribute value to its namespace and local name.
func (c *compiler) qname(n *node, v string) (string, string, error) {
	prefix, local, found := strings.Cut(v, ":")
	if !found {
		prefix, local = "", v
	}
	ns, ok := c.prefixes[prefix]
	if !ok {
		if prefix != "" {
			return "", "", n.errorf("undeclared prefix %q in %q", prefix, v)
		}
		ns = ""
	}
	return ns, local, nil
}

// typeRef resolves a type="..." (or base="...") to a named or built-in type.
func (c *compiler) typeRef(n *node, v string) (*complexType, *simpleType, error) {
	if v == "" {
		return nil, nil, n.errorf("no type: anonymous (inline) types are not supported")
	}
	ns, local, err := c.qname(n, v)
	if err != nil {
		return nil, nil, err
	}
	switch ns {
	case xsdNS:
		p, ok := builtins[local]
		if !ok {
			return nil, nil, n.errorf("built-in type xs:%s is not supported", local)
		}
		key := "xs:" + local // no named type can have a colon in its name
		if c.simple[key] == nil {
			c.simple[key] = newSimpleType(key, p, nil)
		}
		return nil, c.simple[key], nil
	case c.ns:
		if c.complexN[local] != nil {
			ct, err := c.complexType(local, n)
			return ct, nil, err
		}
		if c.simpleN[local] != nil {
			st, err := c.simpleType(local, n)
			return nil, st, err
		}
	}
	return nil, nil, n.errorf("unknown type %q", v)
}

func (c *compiler) element(n *node) (*elementDecl, error) {
	for _, k := range n.kids {
		return nil, k.errorf("inline content in an element declaration is not supported")
	}
	name := n.attrs["name"]
	if name == "" {
		return nil, n.errorf("an element needs a name (ref= is not supported)")
	}
	ct, st, err := c.typeRef(n, n.attrs["type"])
	if err != nil {
		return nil, err
	}
	return &elementDecl{name: name, complex: ct, simple: st}, nil
}

// occurs reads minOccurs and maxOccurs (default 1 each).
func occurs(n *node) (int, int, error) {
	lo, hi := 1, 1
	if v, ok := n.attrs["minOccurs"]; ok {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			return 0, 0, n.errorf("minOccurs %q", v)
		}
		lo = i
	}
	if v, ok := n.attrs["maxOccurs"]; ok {
		if v == "unbounded" {
			hi = unbounded
		} else {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				return 0, 0, n.errorf("maxOccurs %q", v)
			}
			hi = i
		}
	}
	if hi < lo || hi == 0 {
		return 0, 0, n.errorf("minOccurs %d, maxOccurs %d", lo, hi)
	}
	return lo, hi, nil
}

func (c *compiler) complexType(name string, from *node) (*complexType, error) {
	if ct, ok := c.complex[name]; ok {
		return ct, nil
	}
	n := c.complexN[name]
	if n == nil {
		return nil, from.errorf("unknown complex type %q", name)
	}
	if err := only(n, "name", "id"); err != nil {
		return nil, err
	}
	ct := &complexType{name: name}
	c.complex[name] = ct // before the content: a type may contain itself
	if len(n.kids) != 1 {
		return nil, n.errorf("%s: want one xs:sequence, xs:choice or xs:simpleContent", name)
	}
	body := n.kids[0]
	switch body.local {
	case "sequence":
		if len(body.kids) == 1 && body.kids[0].local == "choice" {
			// <sequence><choice>…</choice></sequence> (pain.001.001.03, .04) is the choice.
			if err := groupOccurs(body); err != nil {
				return nil, err
			}
			body = body.kids[0]
			ct.model = mChoice
		} else {
			ct.model = mSequence
		}
	case "choice":
		ct.model = mChoice
	case "simpleContent":
		return ct, c.simpleContent(ct, body)
	default:
		return nil, body.errorf("not supported in a complex type")
	}
	if err := groupOccurs(body); err != nil {
		return nil, err
	}
	ct.byName = map[string]int{}
	for _, k := range body.kids {
		lo, hi, err := occurs(k)
		if err != nil {
			return nil, err
		}
		switch k.local {
		case "element":
			if err := only(k, "name", "type", "minOccurs", "maxOccurs", "id"); err != nil {
				return nil, err
			}
			el, err := c.element(k)
			if err != nil {
				return nil, err
			}
			if _, dup := ct.byName[el.name]; dup {
				// Names unique within a model keep it deterministic, so
				// that the counter walk in validate is exact.
				return nil, k.errorf("element %s appears twice in %s", el.name, name)
			}
			ct.byName[el.name] = len(ct.parts)
			ct.parts = append(ct.parts, particle{el: el, min: lo, max: hi})
		case "any":
			if err := only(k, "namespace", "processContents", "minOccurs", "maxOccurs", "id"); err != nil {
				return nil, err
			}
			if ns, ok := k.attrs["namespace"]; ok && ns != "##any" {
				return nil, k.errorf("namespace %q: only ##any is supported", ns)
			}
			pc := k.attrs["processContents"]
			if pc != "lax" && pc != "skip" {
				return nil, k.errorf("processContents %q: only lax and skip are supported", pc)
			}
			if len(body.kids) != 1 || body.local != "sequence" {
				return nil, k.errorf("a wildcard must be alone in its sequence")
			}
			ct.model = mAny
			ct.parts = append(ct.parts, particle{min: lo, max: hi, lax: pc == "lax"})
		default:
			return nil, k.errorf("not supported in xs:%s (nested model groups are not)", body.local)
		}
	}
	if len(ct.parts) == 0 {
		return nil, body.errorf("an empty model group is not supported")
	}
	return ct, nil
}

// groupOccurs refuses occurrences other than once on a model group.
func groupOccurs(n *node) error {
	if err := only(n, "minOccurs", "maxOccurs", "id"); err != nil {
		return err
	}
	if lo, hi, err := occurs(n); err != nil || lo != 1 || hi != 1 {
		return n.errorf("a model group that occurs other than once is not supported")
	}
	return nil
}

func (c *compiler) simpleContent(ct *complexType, n *node) error {
	if err := only(n, "id"); err != nil {
		return err
	}
	if len(n.kids) != 1 || n.kids[0].local != "extension" {
		return n.errorf("want one xs:extension")
	}
	ext := n.kids[0]
	if err := only(ext, "base", "id"); err != nil {
		return err
	}
	base, st, err := c.typeRef(ext, ext.attrs["base"])
	if err != nil {
		return err
	}
	if base != nil {
		return ext.errorf("extending a complex type is not supported")
	}
	ct.model, ct.text = mSimple, st
	for _, a := range ext.kids {
		if a.local != "attribute" {
			return a.errorf("not supported in xs:extension")
		}
		if err := only(a, "name", "type", "use", "id"); err != nil {
			return err
		}
		if len(a.kids) > 0 {
			return a.errorf("inline types are not supported")
		}
		use := a.attrs["use"]
		if use != "" && use != "required" && use != "optional" {
			return a.errorf("use %q is not supported", use)
		}
		actual, at, err := c.typeRef(a, a.attrs["type"])
		if err != nil {
			return err
		}
		if actual != nil {
			return a.errorf("an attribute's type must be simple")
		}
		name := a.attrs["name"]
		if name == "" {
			return a.errorf("an attribute needs a name (ref= is not supported)")
		}
		for _, prev := range ct.attrs {
			if prev.name == name {
				return a.errorf("attribute %s declared twice", name)
			}
		}
		ct.attrs = append(ct.attrs, attributeDecl{name: name, typ: at, required: use == "required"})
	}
	return nil
}

func (c *compiler) simpleType(name string, from *node) (*simpleType, error) {
	if st, ok := c.simple[name]; ok {
		return st, nil
	}
	n := c.simpleN[name]
	if n == nil {
		return nil, from.errorf("unknown simple type %q", name)
	}
	if c.busy[name] {
		return nil, n.errorf("type %s derives from itself", name)
	}
	c.busy[name] = true
	defer delete(c.busy, name)
	if err := only(n, "name", "id"); err != nil {
		return nil, err
	}
	if len(n.kids) != 1 || n.kids[0].local != "restriction" {
		return nil, n.errorf("%s: want one xs:restriction (xs:list and xs:union are not supported)", name)
	}
	r := n.kids[0]
	if err := only(r, "base", "id"); err != nil {
		return nil, err
	}
	ct, base, err := c.typeRef(r, r.attrs["base"])
	if err != nil {
		return nil, err
	}
	if ct != nil {
		return nil, r.errorf("a simple type cannot restrict a complex type")
	}
	st := newSimpleType(name, base.prim, base)
	for _, f := range r.kids {
		if err := c.facet(st, f); err != nil {
			return nil, err
		}
	}
	c.simple[name] = st
	return st, nil
}

// facetsFor lists the facets supported on each primitive.
var facetsFor = map[primitive]string{
	pString:       "length minLength maxLength pattern enumeration",
	pBase64Binary: "length minLength maxLength pattern",
	pDecimal:      "totalDigits fractionDigits minInclusive maxInclusive minExclusive maxExclusive pattern",
	pDate:         "pattern", pDateTime: "pattern", pTime: "pattern",
	pBoolean: "pattern", pGYear: "pattern", pGYearMonth: "pattern",
}

func (c *compiler) facet(st *simpleType, f *node) error {
	if err := only(f, "value", "fixed", "id"); err != nil {
		return err
	}
	if len(f.kids) > 0 {
		return f.errorf("unexpected content")
	}
	if !strings.Contains(" "+facetsFor[st.prim]+" ", " "+f.local+" ") {
		return f.errorf("facet %s is not supported on %s", f.local, st.name)
	}
	v, ok := f.attrs["value"]
	if !ok {
		return f.errorf("no value")
	}
	count := func() (int, error) {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || f.local == "totalDigits" && i == 0 {
			return 0, f.errorf("value %q", v)
		}
		return i, nil
	}
	bound := func() (*decimalValue, error) {
		d, ok := parseDecimal(collapse(v))
		if !ok {
			return nil, f.errorf("value %q is not a decimal", v)
		}
		return &d, nil
	}
	var err error
	switch f.local {
	case "pattern":
		re, perr := compilePattern(v)
		if perr != nil {
			return f.errorf("%v", perr)
		}
		st.patterns = append(st.patterns, re)
		st.patternSrc = append(st.patternSrc, v)
	case "enumeration":
		if st.enum == nil {
			st.enum = map[string]bool{}
		}
		st.enum[v] = true
		st.enumList = append(st.enumList, v)
	case "length":
		st.length, err = count()
	case "minLength":
		st.minLength, err = count()
	case "maxLength":
		st.maxLength, err = count()
	case "totalDigits":
		st.totalDigits, err = count()
	case "fractionDigits":
		st.fractionDigits, err = count()
	case "minInclusive":
		st.minIncl, err = bound()
	case "maxInclusive":
		st.maxIncl, err = bound()
	case "minExclusive":
		st.minExcl, err = bound()
	case "maxExclusive":
		st.maxExcl, err = bound()
	}
	return err
}

// InNamespace returns the schema with its elements in namespace ns: how a
// national variant of an ISO 20022 message (the Swiss SPS, the German DK)
// is checked against ISO's own schema, whose restriction it is, when the
// variant publishes the same structure under its own namespace. The
// declarations are shared, not copied.
func (s *Schema) InNamespace(ns string) *Schema {
	c := *s
	c.ns = ns
	return &c
}
