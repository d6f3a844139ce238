package xmlschema

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// translatePattern turns an XSD 1.0 regular expression (XML Schema part 2,
// appendix F) into an RE2 one that accepts exactly the same strings. The
// two dialects differ in ways that matter for validation:
//   - an XSD pattern is anchored at both ends, always;
//   - "^" and "$" are ordinary characters, "." excludes \r as well as \n;
//   - \d, \w are Unicode classes (RE2's are ASCII), \i and \c name XML
//     name characters (refused here: no ISO 20022 schema uses them);
//   - a character class may subtract another ([a-z-[aeiou]]), which RE2
//     cannot say: the difference is computed here, as explicit ranges;
//   - "(" always groups, so "(?" is an error, not an RE2 flag group.
//
// Anything outside the grammar is an error, so that a pattern is never
// checked as something other than what its schema says.
func translatePattern(src string) (string, error) {
	p := &patternParser{src: src}
	var b strings.Builder
	b.WriteString(`^(?:`)
	if err := p.regExp(&b, 0); err != nil {
		return "", fmt.Errorf("pattern %q: %w", src, err)
	}
	if p.pos < len(p.src) {
		return "", fmt.Errorf("pattern %q: unexpected %q at offset %d", src, p.src[p.pos:p.pos+1], p.pos)
	}
	b.WriteString(`)$`)
	return b.String(), nil
}

// compilePattern translates and compiles an XSD pattern.
func compilePattern(src string) (*regexp.Regexp, error) {
	re, err := translatePattern(src)
	if err != nil {
		return nil, err
	}
	c, err := regexp.Compile(re)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", src, err)
	}
	return c, nil
}

type patternParser struct {
	src string
	pos int
}

// maxGroupDepth bounds the nesting of groups in a pattern.
const maxGroupDepth = 32

func (p *patternParser) peek() (rune, bool) {
	if p.pos >= len(p.src) {
		return 0, false
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return r, true
}

func (p *patternParser) next() rune {
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return r
}

// regExp ::= branch ( '|' branch )*
func (p *patternParser) regExp(b *strings.Builder, depth int) error {
	if depth > maxGroupDepth {
		return fmt.Errorf("groups nested over %d deep", maxGroupDepth)
	}
	for {
		if err := p.branch(b, depth); err != nil {
			return err
		}
		r, ok := p.peek()
		if !ok || r != '|' {
			return nil
		}
		p.next()
		b.WriteByte('|')
	}
}

// branch ::= piece*; piece ::= atom quantifier?
func (p *patternParser) branch(b *strings.Builder, depth int) error {
	for {
		r, ok := p.peek()
		if !ok || r == '|' || r == ')' {
			return nil
		}
		if err := p.atom(b, depth); err != nil {
			return err
		}
		if err := p.quantifier(b); err != nil {
			return err
		}
	}
}

func (p *patternParser) quantifier(b *strings.Builder) error {
	r, ok := p.peek()
	if !ok {
		return nil
	}
	switch r {
	case '?', '*', '+':
		p.next()
		b.WriteRune(r)
	case '{':
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return fmt.Errorf("unclosed quantifier at offset %d", p.pos)
		}
		body := p.src[p.pos+1 : p.pos+end]
		lo, hi, hasComma := strings.Cut(body, ",")
		if !digits(lo) || hasComma && hi != "" && !digits(hi) {
			return fmt.Errorf("bad quantifier {%s}", body)
		}
		if hasComma && hi != "" {
			l, _ := strconv.Atoi(lo)
			h, _ := strconv.Atoi(hi)
			if l > h {
				return fmt.Errorf("bad quantifier {%s}: %d > %d", body, l, h)
			}
		}
		p.pos += end + 1
		b.WriteString("{" + body + "}")
	default:
		return nil
	}
	if r2, ok := p.peek(); ok && (r2 == '?' || r2 == '*' || r2 == '+' || r2 == '{') {
		// XSD has no lazy or stacked quantifiers; RE2 would read "a*?" as lazy.
		return fmt.Errorf("a quantifier after a quantifier at offset %d", p.pos)
	}
	return nil
}

func digits(s string) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// atom ::= Char | charClass | '(' regExp ')'
func (p *patternParser) atom(b *strings.Builder, depth int) error {
	at := p.pos
	r := p.next()
	switch r {
	case '(':
		if r2, ok := p.peek(); ok && r2 == '?' {
			return fmt.Errorf("\"(?\" at offset %d", at)
		}
		b.WriteString("(?:")
		if err := p.regExp(b, depth+1); err != nil {
			return err
		}
		if r2, ok := p.peek(); !ok || r2 != ')' {
			return fmt.Errorf("unclosed group opened at offset %d", at)
		}
		p.next()
		b.WriteByte(')')
	case ')', '?', '*', '+', '{', ']':
		return fmt.Errorf("unexpected %q at offset %d", r, at)
	case '.':
		b.WriteString(`[^\n\r]`)
	case '[':
		p.pos = at
		set, err := p.charClassExpr()
		if err != nil {
			return err
		}
		b.WriteString(set.String())
	case '\\':
		p.pos = at
		set, single, err := p.escape()
		if err != nil {
			return err
		}
		if set != nil {
			b.WriteString(set.String())
		} else {
			b.WriteString(regexp.QuoteMeta(string(single)))
		}
	default:
		b.WriteString(regexp.QuoteMeta(string(r)))
	}
	return nil
}

// runeSet is a set of code points as sorted, disjoint [lo, hi] pairs.
type runeSet []rune

func (s runeSet) String() string {
	if len(s) == 0 {
		return `[^\x{0}-\x{10FFFF}]` // matches nothing
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < len(s); i += 2 {
		fmt.Fprintf(&b, `\x{%X}`, s[i])
		if s[i+1] != s[i] {
			fmt.Fprintf(&b, `-\x{%X}`, s[i+1])
		}
	}
	b.WriteByte(']')
	return b.String()
}

// classOf returns the code points an RE2 character class denotes, by
// letting regexp/syntax expand it (categories included).
func classOf(re2 string) (runeSet, error) {
	r, err := syntax.Parse(re2, syntax.Perl)
	if err != nil {
		return nil, err
	}
	r = r.Simplify()
	switch r.Op {
	case syntax.OpCharClass:
		return normalize(append(runeSet(nil), r.Rune...)), nil
	case syntax.OpLiteral:
		if len(r.Rune) == 1 {
			return runeSet{r.Rune[0], r.Rune[0]}, nil
		}
	case syntax.OpAnyCharNotNL:
		return runeSet{0, '\n' - 1, '\n' + 1, unicode.MaxRune}, nil
	case syntax.OpAnyChar:
		return runeSet{0, unicode.MaxRune}, nil
	}
	return nil, fmt.Errorf("%s is not a character class", re2)
}

// normalize sorts and merges ranges.
func normalize(s runeSet) runeSet {
	pairs := make([][2]rune, 0, len(s)/2)
	for i := 0; i+1 < len(s); i += 2 {
		pairs = append(pairs, [2]rune{s[i], s[i+1]})
	}
	for i := 1; i < len(pairs); i++ { // insertion sort: classes are small
		for j := i; j > 0 && pairs[j][0] < pairs[j-1][0]; j-- {
			pairs[j], pairs[j-1] = pairs[j-1], pairs[j]
		}
	}
	var out runeSet
	for _, pr := range pairs {
		if n := len(out); n > 0 && pr[0] <= out[n-1]+1 {
			out[n-1] = max(out[n-1], pr[1])
			continue
		}
		out = append(out, pr[0], pr[1])
	}
	return out
}

func negate(s runeSet) runeSet {
	var out runeSet
	next := rune(0)
	for i := 0; i < len(s); i += 2 {
		if s[i] > next {
			out = append(out, next, s[i]-1)
		}
		next = s[i+1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, next, unicode.MaxRune)
	}
	return out
}

func subtract(a, b runeSet) runeSet {
	// a − b = a ∩ ¬b
	nb := negate(b)
	var out runeSet
	i, j := 0, 0
	for i < len(a) && j < len(nb) {
		lo, hi := max(a[i], nb[j]), min(a[i+1], nb[j+1])
		if lo <= hi {
			out = append(out, lo, hi)
		}
		if a[i+1] < nb[j+1] {
			i += 2
		} else {
			j += 2
		}
	}
	return out
}

// escape reads a backslash escape: a class (\d, \p{Lu}, ...) as a set, or
// a single character.
func (p *patternParser) escape() (runeSet, rune, error) {
	at := p.pos
	p.next() // '\'
	r, ok := p.peek()
	if !ok {
		return nil, 0, fmt.Errorf("a lone \\ at the end")
	}
	p.next()
	var re2 string
	switch r {
	case 'n':
		return nil, '\n', nil
	case 'r':
		return nil, '\r', nil
	case 't':
		return nil, '\t', nil
	case '\\', '|', '.', '?', '*', '+', '(', ')', '{', '}', '-', '[', ']', '^':
		return nil, r, nil
	case 'd':
		re2 = `\p{Nd}`
	case 'D':
		re2 = `\P{Nd}`
	case 's':
		re2 = `[\t\n\r ]`
	case 'S':
		re2 = `[^\t\n\r ]`
	case 'w': // all but punctuation, separators and "other"
		re2 = `[\p{L}\p{M}\p{N}\p{S}]`
	case 'W':
		re2 = `[\p{P}\p{Z}\p{C}]`
	case 'p', 'P':
		if c, ok := p.peek(); !ok || c != '{' {
			return nil, 0, fmt.Errorf("\\%c without {...} at offset %d", r, at)
		}
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return nil, 0, fmt.Errorf("unclosed \\%c{ at offset %d", r, at)
		}
		prop := p.src[p.pos+1 : p.pos+end]
		p.pos += end + 1
		if _, known := unicode.Categories[prop]; !known {
			// Block escapes (\p{IsBasicLatin}) have no RE2 form.
			return nil, 0, fmt.Errorf("\\%c{%s}: only Unicode general categories are supported", r, prop)
		}
		re2 = `\` + string(r) + `{` + prop + `}`
	default:
		// \i, \c (XML name characters) and anything else.
		return nil, 0, fmt.Errorf("unsupported escape \\%c at offset %d", r, at)
	}
	set, err := classOf(re2)
	return set, 0, err
}

// charClassExpr ::= '[' charGroup ']'
// charGroup ::= ('^')? (charRange | charClassEsc)+ ('-' charClassExpr)?
func (p *patternParser) charClassExpr() (runeSet, error) {
	at := p.pos
	p.next() // '['
	neg := false
	if r, ok := p.peek(); ok && r == '^' {
		p.next()
		neg = true
	}
	var set runeSet
	first := true
	for {
		r, ok := p.peek()
		if !ok {
			return nil, fmt.Errorf("unclosed [ at offset %d", at)
		}
		switch {
		case r == ']':
			if first {
				return nil, fmt.Errorf("empty [] at offset %d", at)
			}
			p.next()
			set = normalize(set)
			if neg {
				set = negate(set)
			}
			return set, nil
		case r == '-' && strings.HasPrefix(p.src[p.pos:], "-["):
			if first {
				return nil, fmt.Errorf("subtraction with nothing to subtract from at offset %d", p.pos)
			}
			p.next()
			sub, err := p.charClassExpr()
			if err != nil {
				return nil, err
			}
			if r2, ok := p.peek(); !ok || r2 != ']' {
				return nil, fmt.Errorf("a subtraction must end its class, at offset %d", p.pos)
			}
			p.next()
			set = normalize(set)
			if neg {
				set = negate(set)
			}
			return subtract(set, sub), nil
		case r == '[':
			return nil, fmt.Errorf("unescaped [ in a class at offset %d", p.pos)
		}
		lo, class, err := p.classChar(first)
		if err != nil {
			return nil, err
		}
		first = false
		if class != nil {
			set = append(set, class...)
			continue
		}
		// A range lo-hi, unless the '-' ends the class or starts a subtraction.
		if strings.HasPrefix(p.src[p.pos:], "-") && !strings.HasPrefix(p.src[p.pos:], "-]") && !strings.HasPrefix(p.src[p.pos:], "-[") {
			p.next()
			hi, class, err := p.classChar(false)
			if err != nil {
				return nil, err
			}
			if class != nil {
				return nil, fmt.Errorf("a range ending in a class escape at offset %d", p.pos)
			}
			if hi < lo {
				return nil, fmt.Errorf("range %q-%q out of order", lo, hi)
			}
			set = append(set, lo, hi)
			continue
		}
		set = append(set, lo, lo)
	}
}

// classChar reads one character of a class, or a class escape.
func (p *patternParser) classChar(first bool) (rune, runeSet, error) {
	r, _ := p.peek()
	if r == '\\' {
		set, single, err := p.escape()
		return single, set, err
	}
	if r == '-' && !first && !strings.HasPrefix(p.src[p.pos:], "-]") {
		return 0, nil, fmt.Errorf("unescaped - in a class at offset %d", p.pos)
	}
	p.next()
	return r, nil, nil
}
