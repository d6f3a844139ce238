// Package httpapi is paydispatch's HTTP adapter: routing, health and
// readiness endpoints, and RFC 9457 problem+json errors for every failure,
// including unknown routes and wrong methods.
package httpapi
