package payment_test

import (
	"context"
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

// TestCheckBatchInOrder: a file's payments checked on every core are
// reported as one pass reports them: each bad line once, in the file's
// order, an id given twice on its second line naming the first (also
// when the two fall to different cores), before its own faults.
func TestCheckBatchInOrder(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(time.Hour)
	rs := make([]payment.Request, 1001)
	for i := range rs {
		rs[i] = validRequest(at)
		rs[i].PaymentID = fmt.Sprintf("ord-%04d", i)
		if i%97 == 5 {
			rs[i].Amount = "-1"
		}
	}
	rs[900].PaymentID, rs[900].Currency = rs[3].PaymentID, "XX" // twice, and bad
	lineErrs, err := (&payment.Service{}).CheckBatch(context.Background(), rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range rs {
		switch {
		case i == 900:
			want = append(want, "901:paymentId")
		case i%97 == 5:
			want = append(want, fmt.Sprintf("%d:amount", i+1))
		}
	}
	var got []string
	for _, le := range lineErrs {
		got = append(got, fmt.Sprintf("%d:%s", le.Line, le.Fields[0].Field))
		if le.Line == 901 && (le.Fields[0].Detail != "also on line 4" || len(le.Fields) < 2) {
			t.Errorf("line 901: %+v, want the id given twice, then the currency", le.Fields)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("line errors %v, want %v", got, want)
	}
}
