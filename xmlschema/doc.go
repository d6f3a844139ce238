// Package xmlschema validates XML documents from outside against XML
// Schema 1.0 (XSD) schemas of the kind ISO 20022 publishes for its
// messages, streaming the document through encoding/xml.
//
// Why our own: a payment file that does not follow its message's schema
// must be refused, not half read (a misspelt element silently dropped a
// payment), and no pure-Go XSD validator is available to this module; the
// cgo ones need libxml2 on every machine. ISO 20022 schemas use a small,
// regular part of XSD, which is what this package implements, and no more:
//
//   - one xs:schema with a targetNamespace, elementFormDefault="qualified";
//     global xs:element declarations (the root, "Document"), each with a
//     named type;
//   - named xs:complexType holding an xs:sequence or an xs:choice of
//     xs:element particles (minOccurs, maxOccurs, "unbounded"), a choice
//     alone in a sequence, or xs:any (namespace ##any, processContents
//     lax or skip) alone in a sequence; or xs:simpleContent with an
//     xs:extension of a simple type adding xs:attribute (use="required"
//     or optional);
//   - named xs:simpleType as an xs:restriction of xs:string, xs:decimal,
//     xs:date, xs:dateTime, xs:time, xs:boolean, xs:gYear, xs:gYearMonth,
//     xs:base64Binary or of another such type, with the facets pattern,
//     enumeration, length, minLength, maxLength (strings, base64),
//     totalDigits, fractionDigits, minInclusive, maxInclusive,
//     minExclusive, maxExclusive (decimals).
//
// Compile refuses anything else (xs:import, xs:group, anonymous types,
// nested model groups, xs:list, other built-in types, ...) with an error
// naming it: a schema is checked whole or not at all. Patterns are
// translated from XSD's regular expressions to RE2, anchored, with
// Unicode \d and \w and class subtraction computed; they are compiled
// once, with the schema. A compiled Schema is immutable: compile it once
// and share it.
//
// Bounded cost: a document is read once, token by token. Content models
// are deterministic, and Compile keeps to shapes (unique names in a
// model, no nested groups) for which a counter per particle decides each
// element in constant time; patterns run on RE2, linear in their input.
// Nesting is capped at MaxDepth, any text, attribute value or comment at
// MaxText, and NewDecoder stops encoding/xml from buffering more than
// about MaxText between two '<'. A DTD is refused outright, so no entity
// is ever expanded. Validation is linear in the input and its memory is
// bounded whatever the input.
//
// What the package does not check, since ISO 20022 schemas do not use it:
// identity constraints (xs:unique, xs:key), xsi:type (refused), default
// or fixed values, and attributes other than those declared (refused).
// The content of a lax wildcard whose element the schema does not declare
// globally is skipped unchecked, as XSD says.
package xmlschema
