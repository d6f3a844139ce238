package money_test

import (
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/money"
)

func Example() {
	for _, code := range []string{"EUR", "JPY", "BHD"} {
		digits, _ := money.MinorUnits(code)
		exact := decimal.RequireFromString("1234.56785")
		fmt.Println(code, digits, money.Round(exact, code), money.Fits(exact, code))
	}
	// Output:
	// EUR 2 1234.57 false
	// JPY 0 1235 false
	// BHD 3 1234.568 false
}
