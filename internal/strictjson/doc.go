// Package strictjson decodes one JSON value sent from outside, refusing
// what encoding/json would quietly accept: text that is not UTF-8 (it
// would be altered), a key given twice in one object (the last would win,
// unseen; encoding/json matches names regardless of case, so "amount" and
// "Amount" count as one), nesting deeper than MaxDepth, unknown fields and
// data after the value. Every refusal is an *Error naming the field when
// there is one and saying what to send instead, in JSON's words rather
// than Go's.
package strictjson
