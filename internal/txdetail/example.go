package txdetail

import "strings"

// Example is a valid value of f, distinct from other fields' (its name's
// letters, upper-cased, for a code): for tests that push every field
// through every shape, and for the docs.
func (f Field) Example() string {
	if f.Rule == "code" {
		code := strings.ToUpper(f.Name)
		return code[:min(len(code), f.Max)]
	}
	return "example " + f.Name
}
