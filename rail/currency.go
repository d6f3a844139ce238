package rail

import "github.com/moov-io/iso4217"

// MinorUnits returns an active ISO 4217 currency's number of minor units
// (EUR 2, JPY 0, BHD 3, CLF 4), and false for anything that is not an
// active currency code in upper case.
//
// The data is moov-io/iso4217's (ISO 4217 list one as published in
// 2023), corrected by currencyAmendments for the amendments since, and
// without the codes ISO gives no minor unit (precious metals, bond-market
// units, SDR, XTS for testing, XXX for no currency): none of them is paid
// by credit transfer. moov-io's Lookup also answers numeric codes and
// lower case, which an instruction must not use, hence the guard.
func MinorUnits(code string) (int, bool) {
	if len(code) != 3 || !upper(code[0]) || !upper(code[1]) || !upper(code[2]) {
		return 0, false
	}
	if a, ok := currencyAmendments[code]; ok {
		return a.units, a.active
	}
	if notPayable[code] {
		return 0, false
	}
	cc, ok := iso4217.Lookup(code)
	if !ok || cc.Code != code {
		return 0, false
	}
	return int(cc.DecimalPlaces), true
}

func upper(c byte) bool { return c >= 'A' && c <= 'Z' }

type amendment struct {
	units  int
	active bool
}

// currencyAmendments: ISO 4217 changes after moov-io/iso4217's table.
var currencyAmendments = map[string]amendment{
	"HRK": {active: false},          // Croatia adopted the euro on 2023-01-01
	"SLE": {units: 2, active: true}, // new leone (2022 redenomination)
	"VED": {units: 2, active: true}, // digital bolívar (2021)
	"ZWG": {units: 2, active: true}, // Zimbabwe Gold (2024)
	"XCG": {units: 2, active: true}, // Caribbean guilder (2025, replaces ANG)
}

// notPayable: codes with minor unit "N.A." in ISO 4217.
var notPayable = map[string]bool{
	"XAG": true, "XAU": true, "XPD": true, "XPT": true,
	"XBA": true, "XBB": true, "XBC": true, "XBD": true,
	"XDR": true, "XSU": true, "XUA": true, "XTS": true, "XXX": true,
}
