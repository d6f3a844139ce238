package httpapi

import (
	_ "embed"
	"net/http"
	"slices"
)

// OpenAPI is the API's contract (OpenAPI 3.1), served at /openapi.json.
// A test keeps it and the routes in step, and checks real answers
// against its schemas.
//
//go:embed openapi.json
var OpenAPI []byte

// serveOpenAPI serves GET /openapi.json.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(OpenAPI)
}

// Patterns lists the routes mounted, sorted ("GET /v1/payments/{id}").
func (rt *Router) Patterns() []string {
	out := make([]string, 0, len(rt.table))
	for _, route := range rt.table {
		out = append(out, route.Pattern)
	}
	slices.Sort(out)
	return out
}
