package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/paydispatch/paydispatch/internal/field"
)

// FuzzDecode: whatever a record carries, decode answers a request or a
// refusal with a reason, never panics, and a tenant it takes is the
// value's or the header's.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"paymentId":"p-1","tenantId":"acme","debtorAccount":"A","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"2026-11-27T16:00:00Z"}`), "")
	f.Add([]byte(`{"paymentId":"p-1","amount":"1.00"}`), "acme")
	f.Add([]byte(`{"tenantId":"a"}`), "b")
	f.Add([]byte(`{not json`), "")
	f.Fuzz(func(t *testing.T, value []byte, tenant string) {
		rec := &kgo.Record{Value: value}
		if tenant != "" {
			rec.Headers = []kgo.RecordHeader{{Key: HeaderTenant, Value: []byte(tenant)}}
		}
		r, why := decode(rec)
		if why != nil {
			if why.reason == "" {
				t.Fatalf("a refusal without a reason: %+v", why)
			}
			return
		}
		if !field.ValidID(r.TenantID) || (tenant != "" && r.TenantID != tenant) {
			t.Fatalf("tenant %q taken from value %q and header %q", r.TenantID, value, tenant)
		}
	})
}
