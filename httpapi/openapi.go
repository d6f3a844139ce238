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

// HandleOpenAPI adds GET /openapi.json (public).
func (rt *Router) HandleOpenAPI() {
	rt.Handle("GET /openapi.json", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(OpenAPI)
	}))
}

// Patterns lists the routes registered, sorted ("GET /v1/payments/{id}").
func (rt *Router) Patterns() []string {
	out := slices.Clone(rt.patterns)
	slices.Sort(out)
	return out
}
