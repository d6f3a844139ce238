package httpapi

import "net/http"

// Audited is audited for the route rt mounts with pattern, for the tests
// that check every audited route.
func Audited(rt *Router, pattern string, r *http.Request) bool {
	return audited(rt.rows[pattern], r)
}

// RowServing is what a route's row says beyond its scope and handler:
// the body kind it takes (0: none) and whether it is idempotent or
// records itself.
func RowServing(r Route) (body int, idem, records bool) {
	return int(r.body), r.serving == idempotent, r.serving == recordsItself
}

// The body kinds, for RowServing.
const (
	NoBody        = int(noBody)
	JSONBody      = int(jsonBody)
	BigJSONBody   = int(bigJSONBody)
	TableJSONBody = int(tableJSONBody)
	BulkFileBody  = int(bulkFileBody)
)
