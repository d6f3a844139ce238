// Package payment is the payments domain: what a payment request is, how
// it is validated, its business statuses, and (in later parts) the init and
// execution workflows built on the generic queue and dispatcher. The
// framework packages never import it.
package payment
