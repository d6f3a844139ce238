package webhook_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/webhook"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"0190c3c4-0000-7000-8000-000000000001","type":"payment.delivered"}`)
	at := time.Unix(1_800_000_000, 0)
	secret, other := webhook.NewSecret(), webhook.NewSecret()
	for _, tt := range []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"signed now", webhook.Sign(body, at, secret), body, at, nil},
		{"signed a minute ago", webhook.Sign(body, at, secret), body, at.Add(time.Minute), nil},
		{"after a rotation, the old secret's signature beside the new", webhook.Sign(body, at, other, secret), body, at, nil},
		{"another secret", webhook.Sign(body, at, other), body, at, webhook.ErrNoSignature},
		{"the body changed", webhook.Sign(body, at, secret), append([]byte(" "), body...), at, webhook.ErrNoSignature},
		{"replayed later", webhook.Sign(body, at, secret), body, at.Add(6 * time.Minute), webhook.ErrStaleMessage},
		{"from the future", webhook.Sign(body, at, secret), body, at.Add(-6 * time.Minute), webhook.ErrStaleMessage},
		{"the timestamp moved", strings.Replace(webhook.Sign(body, at, secret), "t=1800000000", "t=1800000001", 1), body, at, webhook.ErrNoSignature},
		{"no signature", "t=1800000000", body, at, webhook.ErrBadHeader},
		{"no timestamp", "v1=" + strings.Repeat("ab", 32), body, at, webhook.ErrBadHeader},
		{"two timestamps", "t=1,t=2,v1=" + strings.Repeat("ab", 32), body, at, webhook.ErrBadHeader},
		{"short signature", "t=1800000000,v1=abcd", body, at, webhook.ErrBadHeader},
		{"not key=value", "t=1800000000,v1", body, at, webhook.ErrBadHeader},
		{"empty", "", body, at, webhook.ErrBadHeader},
		{"an unknown scheme beside v1 is skipped", webhook.Sign(body, at, secret) + ",v0=xyz", body, at, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := webhook.Verify(tt.header, tt.body, secret, webhook.DefaultTolerance, tt.now)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, b := webhook.NewSecret(), webhook.NewSecret()
	if a == b || !strings.HasPrefix(a, "whsec_") || len(a) != len("whsec_")+43 {
		t.Fatalf("secrets %q and %q: want two different whsec_ + 43 characters", a, b)
	}
}

// FuzzParseSignature: whatever a header holds, parsing neither panics
// nor accepts what a signature cannot be.
func FuzzParseSignature(f *testing.F) {
	for _, s := range []string{"t=1800000000,v1=" + strings.Repeat("0a", 32), "t=1,v1=", "v1=,t=", ",,,", "t=-1,v1=" + strings.Repeat("ff", 32)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		sig, err := webhook.ParseSignature(header)
		if err != nil {
			if !errors.Is(err, webhook.ErrBadHeader) {
				t.Fatalf("ParseSignature(%q) = %v, not ErrBadHeader", header, err)
			}
			return
		}
		if sig.Timestamp.Unix() <= 0 || len(sig.V1) == 0 || len(sig.V1) > 8 {
			t.Fatalf("ParseSignature(%q) accepted %+v", header, sig)
		}
		for _, v := range sig.V1 {
			if len(v) != 32 {
				t.Fatalf("ParseSignature(%q): a v1 of %d bytes", header, len(v))
			}
		}
	})
}
