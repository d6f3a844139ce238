package httpapi

// Audited is audited, for the tests that check every audited route.
var Audited = audited
