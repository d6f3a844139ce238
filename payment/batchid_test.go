package payment_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/payment"
)

// TestBatchIDAsOneEncoder: a file's id, its payments encoded on every
// core, is the hash of their canonical forms one after the other, as one
// encoder gives it: a file sent again is the same file whatever its size
// (across the blocks the cores take) and whichever build took it first.
func TestBatchIDAsOneEncoder(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, n := range []int{0, 1, 4095, 4096, 4097, 20_001} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			rs := make([]payment.Request, n)
			for i := range rs {
				rs[i] = validRequest(at)
				rs[i].PaymentID, rs[i].Amount = fmt.Sprintf("id-%05d", i), fmt.Sprintf("%d.5", i)
			}
			h := sha256.New()
			for _, r := range rs {
				raw, err := payment.CanonicalOf(r)
				if err != nil {
					t.Fatal(err)
				}
				h.Write(raw)
			}
			want := "batch-" + hex.EncodeToString(h.Sum(nil))[:24]
			got, err := payment.BatchIDOf(rs)
			if err != nil || got != want {
				t.Fatalf("BatchIDOf = %s, %v; want %s", got, err, want)
			}
			if n > 1 {
				rs[0], rs[n-1] = rs[n-1], rs[0]
				if swapped, _ := payment.BatchIDOf(rs); swapped == want {
					t.Fatal("the order of the payments does not change the id")
				}
			}
		})
	}
}
