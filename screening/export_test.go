package screening

// DecodeAnswer is decodeAnswer, for the fuzz test.
var DecodeAnswer = decodeAnswer
