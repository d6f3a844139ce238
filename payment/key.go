package payment

import "github.com/google/uuid"

// keySpace is the UUID namespace of payment keys.
var keySpace = uuid.MustParse("5b0f6d7e-2f43-5c1a-9a51-0d4f3c6e8a27")

// Key is the key of the tenant's payment with the id it chose: a UUID
// derived from both (RFC 9562 version 5), so the same id in two tenants
// names two payments, and the same payment taken in twice has one key.
// The key names the payment everywhere inside paydispatch (its row, queue
// item, process, slot, workflows, rail instruction); the API shows the
// tenant's id. A payment taken in before ids were scoped to tenants keeps
// its id as its key.
func Key(tenantID, paymentID string) string {
	return uuid.NewSHA1(keySpace, []byte(tenantID+"\x00"+paymentID)).String()
}
