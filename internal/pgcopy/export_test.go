package pgcopy

import "github.com/shopspring/decimal"

// NumericBytes is the value Rows.Numeric writes for d, without its
// length.
func NumericBytes(d decimal.Decimal) ([]byte, error) {
	r := NewRows(0)
	start := r.buf.Len()
	if err := r.Numeric(d); err != nil {
		return nil, err
	}
	return r.buf.Bytes()[start+4:], nil
}
