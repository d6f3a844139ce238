package webhook_test

import (
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/webhook"
)

// A receiver checks each delivery's signature with its endpoint's secret
// before it trusts the body.
func ExampleVerify() {
	secret := "whsec_example" // shown once, when the endpoint was registered
	body := []byte(`{"id":"0190c3c4-0000-7000-8000-000000000001","type":"payment.cancelled"}`)
	sent := time.Unix(1_800_000_000, 0)
	header := webhook.Sign(body, sent, secret) // what the relayer sends as Paydispatch-Signature
	fmt.Println(header)

	fmt.Println(webhook.Verify(header, body, secret, webhook.DefaultTolerance, sent.Add(3*time.Second)))
	fmt.Println(webhook.Verify(header, []byte(`{"forged":true}`), secret, webhook.DefaultTolerance, sent))
	fmt.Println(webhook.Verify(header, body, secret, webhook.DefaultTolerance, sent.Add(time.Hour)))
	// Output:
	// t=1800000000,v1=1654d765440372a05c38e3b7bb4fb4b4f1cc1d0afbea6472a1a249a7089d9797
	// <nil>
	// webhook: no signature matches the secret
	// webhook: the signature's timestamp is outside the tolerance
}
