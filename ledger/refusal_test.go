package ledger_test

import (
	"errors"
	"fmt"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/ledger"
)

// Bad input is an INVALID_ARGUMENT refusal naming each field; errors.As
// finds the fields as the one validation error, as the API reads them
// wherever the input was checked.
func ExampleInvalidArgument() {
	var bad field.Invalid
	bad.Add("currency", `"eur" is not an ISO 4217 currency code such as EUR`)
	bad.Add("balance", "must not be negative")
	err := fmt.Errorf("create: %w", ledger.InvalidArgument("account", bad.Fields))
	fmt.Println(ledger.CodeOf(err), errors.Is(err, ledger.ErrInvalidArgument))
	fmt.Println(err)
	var fields *field.Invalid
	if errors.As(err, &fields) {
		fmt.Println(fields.Fields[1].Field)
	}
	fmt.Println(ledger.InvalidArgument("account", nil) == nil)
	// Output:
	// INVALID_ARGUMENT true
	// create: INVALID_ARGUMENT: invalid account; currency: "eur" is not an ISO 4217 currency code such as EUR; balance: must not be negative
	// balance
	// true
}
