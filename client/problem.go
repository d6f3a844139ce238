package client

import (
	"fmt"
	"reflect"
	"strings"
)

// This file is written by hand: ogen generates the others.

var problemType = reflect.TypeFor[Problem]()

// ProblemOf returns the problem an operation's answer carries when the
// answer is one of its error responses, and nil otherwise. ogen gives
// each error response of each operation its own type
// (CreatePaymentUnprocessableEntity, ...), each a Problem underneath or,
// when the response has headers, holding one as Response.
func ProblemOf(res any) *Problem {
	v := reflect.ValueOf(res)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	if v.Type().ConvertibleTo(problemType) {
		p := v.Convert(problemType).Interface().(Problem)
		return &p
	}
	if f := v.FieldByName("Response"); f.IsValid() && f.Type().ConvertibleTo(problemType) {
		p := f.Convert(problemType).Interface().(Problem)
		return &p
	}
	return nil
}

// Error makes a problem an error: its status, title and detail, and the
// fields it names.
func (p *Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", p.Status, p.Title)
	if d, ok := p.Detail.Get(); ok {
		b.WriteString(": " + d)
	}
	for i, e := range p.Errors {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(e.Field + ": " + e.Detail)
		if i == len(p.Errors)-1 {
			b.WriteString(")")
		}
	}
	return b.String()
}

// Result turns an operation's answer into its success type T or an
// error: the call's own error, or the answer's *Problem.
//
//	acc, err := client.Result[*client.PaymentAccepted](c.CreatePayment(ctx, &req, params))
func Result[T any](res any, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	if p := ProblemOf(res); p != nil {
		return zero, p
	}
	t, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("paydispatch answered %T, not %T", res, zero)
	}
	return t, nil
}

// Check is Result for a caller that wants no answer but success: the
// call's error, or the answer's *Problem, or nil.
func Check(res any, err error) error {
	if err != nil {
		return err
	}
	if p := ProblemOf(res); p != nil {
		return p
	}
	return nil
}
