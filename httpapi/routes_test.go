package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/httpapi"
)

// TestRowsSayHowTheRouteIsServed: a route's row says the body it takes,
// and whether it is idempotent or records itself; a GET takes no body and
// is neither.
func TestRowsSayHowTheRouteIsServed(t *testing.T) {
	t.Parallel()
	type serving struct {
		body          int
		idempotent    bool
		recordsItself bool
	}
	known := map[string]serving{
		"POST /v1/payments":                       {httpapi.JSONBody, true, false},
		"POST /v1/payment-batches":                {httpapi.BulkFileBody, true, false},
		"POST /v1/accounts":                       {httpapi.JSONBody, true, false},
		"POST /api/v1/slots/bulk":                 {httpapi.BigJSONBody, false, false},
		"POST /admin/calendars":                   {httpapi.TableJSONBody, false, false},
		"POST /admin/payments/release":            {httpapi.TableJSONBody, false, true},
		"POST /v1/payments/{id}/cancel":           {httpapi.NoBody, false, true},
		"DELETE /admin/pauses/{scope}/{id}":       {httpapi.NoBody, false, true},
		"POST /v1/payment-batches/{id}/priority":  {httpapi.JSONBody, false, true},
		"POST /admin/dead-letters/requeue":        {httpapi.JSONBody, false, true},
		"POST /admin/processes/{id}/pause":        {httpapi.NoBody, false, false},
		"PATCH /admin/dispatch/config/{itemType}": {httpapi.JSONBody, false, false},
	}
	seen := 0
	for _, route := range contractRouter(t).Routes() {
		var got serving
		got.body, got.idempotent, got.recordsItself = httpapi.RowServing(route)
		want, ok := known[route.Pattern]
		switch {
		case ok:
			seen++
		case strings.HasPrefix(route.Pattern, http.MethodGet+" "):
			want = serving{}
		default:
			continue
		}
		if got != want {
			t.Errorf("%s: the row says %+v, want %+v", route.Pattern, got, want)
		}
	}
	if seen != len(known) {
		t.Errorf("%d of the %d known routes are in the table", seen, len(known))
	}
}
