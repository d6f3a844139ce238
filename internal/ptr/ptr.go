// Package ptr converts between values and the pointers that stand for
// nullable columns in sqlc's generated code: Optional stores a zero value
// as SQL NULL, Deref reads NULL back as the zero value.
package ptr

// Optional returns a pointer to a copy of v, or nil when v is its type's
// zero value ("" for a string): an empty optional field is stored as NULL.
func Optional[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// Deref returns *p, or T's zero value when p is nil (NULL).
func Deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
