package bankid_test

import (
	"fmt"

	"github.com/paydispatch/paydispatch/bankid"
)

// An IBAN as a person types it, checked in its electronic form, and a BIC.
func Example() {
	iban := bankid.Electronic("de89 3704 0044 0532 0130 00")
	fmt.Println(iban, bankid.CheckIBAN(iban))
	fmt.Println(bankid.CheckIBAN("DE89370400440532013001"))
	fmt.Println(bankid.CheckBIC("COBADEFFXXX"))
	// Output:
	// DE89370400440532013000 <nil>
	// check digits do not match: mistyped IBAN
	// <nil>
}

// An account number shortened for a log line.
func ExampleMask() {
	fmt.Println(bankid.Mask("DE89370400440532013000"))
	// Output: DE89…3000
}
