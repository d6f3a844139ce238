package httpapi_test

import (
	"testing"

	"github.com/paydispatch/paydispatch/httpapi"
)

// TestRowsSayWhatTheMapsSaid: each row's body, idempotency and own
// recording are what routeBodies, idempotentRoutes and recordsItself said.
func TestRowsSayWhatTheMapsSaid(t *testing.T) {
	t.Parallel()
	for _, route := range contractRouter(t).Routes() {
		body, idem, records := httpapi.RowServing(route)
		wantBody := 0
		if k, ok := httpapi.OldRouteBodies[route.Pattern]; ok {
			wantBody = int(k) + 0
		}
		if body != wantBody || idem != httpapi.OldIdempotentRoutes[route.Pattern] || records != httpapi.OldRecordsItself[route.Pattern] {
			t.Errorf("%s: row says body %d, idempotent %t, records itself %t; maps said %d, %t, %t", route.Pattern,
				body, idem, records, wantBody, httpapi.OldIdempotentRoutes[route.Pattern], httpapi.OldRecordsItself[route.Pattern])
		}
	}
}
