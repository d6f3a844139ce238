// Package bench holds paydispatch's benchmarks that need a real database
// and print figures (`paydispatch bench ...`). Figures are reported beside
// a baseline measured in the same run, since these machines are shared and
// noisy; nothing here asserts a time.
package bench
