// Package strictjson decodes one JSON value sent from outside, refusing
// what encoding/json would quietly accept: text that is not UTF-8 (it
// would be altered; a byte order mark and UTF-16 are named as such), a
// key given twice in one object (the last would win, unseen;
// encoding/json matches names regardless of case, so "amount" and
// "Amount" count as one), nesting deeper than MaxDepth, unknown fields and
// data after the value. A value of the wrong JSON type, anywhere, is
// refused naming its path ("limits[0].period") and the JSON it wants.
// Every refusal is an *Error naming the field when there is one and
// saying what to send instead, in JSON's words rather than Go's.
package strictjson
