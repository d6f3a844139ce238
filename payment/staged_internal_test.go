package payment

import (
	"testing"

	"github.com/shopspring/decimal"
)

// TestAmountTextsKeepTheScale: an amount staged as text and read back is
// the decimal taken in, scale and all, as its binary encoding kept it.
func TestAmountTextsKeepTheScale(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   decimal.Decimal
		text string
	}{
		{decimal.RequireFromString("1.50"), "1.50"},
		{decimal.RequireFromString("100"), "100"},
		{decimal.RequireFromString("0.001"), "0.001"},
		{decimal.RequireFromString("123456789012345.67"), "123456789012345.67"},
		{decimal.New(1, 2), "100"}, // a positive exponent: a whole number
	} {
		texts := amountTexts([]decimal.Decimal{tt.in})
		if texts[0] != tt.text {
			t.Errorf("%s (exponent %d) staged as %q, want %q", tt.in, tt.in.Exponent(), texts[0], tt.text)
			continue
		}
		back, err := parseAmounts(texts)
		if err != nil {
			t.Fatal(err)
		}
		if !back[0].Equal(tt.in) || back[0].Exponent() != min(tt.in.Exponent(), 0) {
			t.Errorf("%s read back as %s (exponent %d)", tt.in, back[0], back[0].Exponent())
		}
	}
	if _, err := parseAmounts([]string{"1e3"}); err == nil {
		t.Error("an amount with an exponent was read back")
	}
}
