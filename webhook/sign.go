package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries a delivery's signatures: "t=<unix seconds>,
// v1=<hex>" with one v1 per secret that signs (two for a while after a
// rotation). Each v1 is the HMAC-SHA256, keyed with the endpoint's
// secret, of the timestamp, a dot and the body, as Stripe signs its
// webhooks.
const SignatureHeader = "Paydispatch-Signature"

// DefaultTolerance is how old a signature Verify accepts: the window in
// which a captured delivery could be replayed.
const DefaultTolerance = 5 * time.Minute

// secretPrefix marks a webhook secret, so that one found in a log or a
// repository is recognised for what it is.
const secretPrefix = "whsec_"

// NewSecret makes a signing secret: 256 random bits.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return secretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// Sign is the header value for body sent at t, signed with each secret.
func Sign(body []byte, t time.Time, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, s := range secrets {
		b.WriteString(",v1=" + hex.EncodeToString(mac(s, ts, body)))
	}
	return b.String()
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// The reasons Verify refuses a delivery.
var (
	ErrBadHeader    = errors.New("webhook: malformed signature header")
	ErrNoSignature  = errors.New("webhook: no signature matches the secret")
	ErrStaleMessage = errors.New("webhook: the signature's timestamp is outside the tolerance")
)

// Signature is a parsed signature header.
type Signature struct {
	Timestamp time.Time
	V1        [][]byte
}

// maxSignatures bounds the v1 entries a header may carry: a sender signs
// with one or two secrets.
const maxSignatures = 8

// ParseSignature reads a signature header. Entries other than t and v1
// are skipped, so that a later scheme can be added beside v1.
func ParseSignature(header string) (Signature, error) {
	var sig Signature
	seenT := false
	if len(header) > 1024 {
		return Signature{}, fmt.Errorf("%w: longer than 1024 bytes", ErrBadHeader)
	}
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Signature{}, fmt.Errorf("%w: %q is not key=value", ErrBadHeader, clip(part))
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 || seenT {
				return Signature{}, fmt.Errorf("%w: t must appear once, as Unix seconds", ErrBadHeader)
			}
			sig.Timestamp, seenT = time.Unix(n, 0), true
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return Signature{}, fmt.Errorf("%w: v1 must be 64 hex digits", ErrBadHeader)
			}
			if len(sig.V1) == maxSignatures {
				return Signature{}, fmt.Errorf("%w: more than %d v1 signatures", ErrBadHeader, maxSignatures)
			}
			sig.V1 = append(sig.V1, b)
		}
	}
	if !seenT || len(sig.V1) == 0 {
		return Signature{}, fmt.Errorf("%w: want t=<unix seconds>,v1=<hex>", ErrBadHeader)
	}
	return sig, nil
}

// Verify checks a delivery as a receiver would: the header parses, its
// timestamp is within tolerance of now (either way), and one of its v1
// signatures is the body's under secret.
func Verify(header string, body []byte, secret string, tolerance time.Duration, now time.Time) error {
	sig, err := ParseSignature(header)
	if err != nil {
		return err
	}
	if d := now.Sub(sig.Timestamp); d > tolerance || d < -tolerance {
		return ErrStaleMessage
	}
	want := mac(secret, strconv.FormatInt(sig.Timestamp.Unix(), 10), body)
	for _, v := range sig.V1 {
		if hmac.Equal(v, want) {
			return nil
		}
	}
	return ErrNoSignature
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
