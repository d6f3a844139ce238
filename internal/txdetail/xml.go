package txdetail

import (
	"encoding/xml"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// EncodeAmong writes start's element: v's fields and d's details with an
// ISO path, in the order of the schema's sequence, order (its element
// names). v is a struct whose fields each carry an xml tag of one element
// name, ",omitempty" on an optional one (left out when zero), or "-". A
// sequence's order is the schema's, not the struct's, so that a detail
// lands at its place (Purp before RmtInf) without a field of its own in v.
// An element in neither order nor the sequence is an error.
func EncodeAmong(e *xml.Encoder, start xml.StartElement, v any, d Details, order []string) error {
	type item struct {
		at    int
		name  string
		value reflect.Value // v's field, or invalid for a detail
		path  []string
		text  string
	}
	var items []item
	place := func(name string) (int, error) {
		at := slices.Index(order, name)
		if at < 0 {
			return 0, fmt.Errorf("txdetail: %s has no place in %s's sequence", name, start.Name.Local)
		}
		return at, nil
	}
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		sf := rv.Type().Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("xml"), ",")
		if name == "-" || name == "" {
			continue
		}
		if opts == "omitempty" && rv.Field(i).IsZero() {
			continue
		}
		at, err := place(name)
		if err != nil {
			return err
		}
		items = append(items, item{at: at, name: name, value: rv.Field(i)})
	}
	for _, f := range Fields {
		text := f.Get(&d)
		if f.Path == nil || text == "" {
			continue
		}
		at, err := place(f.Path[0])
		if err != nil {
			return err
		}
		items = append(items, item{at: at, name: f.Path[0], path: f.Path, text: text})
	}
	slices.SortStableFunc(items, func(a, b item) int { return a.at - b.at })
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	// open is the detail elements open: consecutive details that share an
	// outer element (a choice's parent) are written inside one.
	var open []string
	closeTo := func(n int) error {
		for len(open) > n {
			if err := e.EncodeToken(xml.EndElement{Name: xml.Name{Local: open[len(open)-1]}}); err != nil {
				return err
			}
			open = open[:len(open)-1]
		}
		return nil
	}
	for i, it := range items {
		if i > 0 && items[i-1].name == it.name && (it.path == nil || items[i-1].path == nil) {
			return fmt.Errorf("txdetail: %s/%s is written both by a field and by a detail", start.Name.Local, it.name)
		}
		if it.path == nil {
			if err := closeTo(0); err != nil {
				return err
			}
			if err := e.EncodeElement(it.value.Interface(), xml.StartElement{Name: xml.Name{Local: it.name}}); err != nil {
				return err
			}
			continue
		}
		shared := 0
		for shared < len(open) && shared < len(it.path)-1 && open[shared] == it.path[shared] {
			shared++
		}
		if err := closeTo(shared); err != nil {
			return err
		}
		for _, name := range it.path[shared:] {
			if err := e.EncodeToken(xml.StartElement{Name: xml.Name{Local: name}}); err != nil {
				return err
			}
			open = append(open, name)
		}
		if err := e.EncodeToken(xml.CharData(it.text)); err != nil {
			return err
		}
		if err := closeTo(len(open) - 1); err != nil {
			return err
		}
	}
	if err := closeTo(0); err != nil {
		return err
	}
	return e.EncodeToken(start.End())
}
