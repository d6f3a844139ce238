package httpapi

import (
	"net/http"
	"sort"
	"strconv"
)

// Every list takes ?limit=N (1 to maxPage, default defaultPage) and
// ?cursor=C, the previous page's "next"; a page that is not the last
// carries "next". Cursors are opaque to the caller.
const (
	defaultPage = 100
	maxPage     = 1000
)

// page is a list request's limit and cursor ("" for the first page).
type page struct {
	limit  int
	cursor string
}

// readPage reads ?limit and ?cursor; valid checks the cursor's form.
func readPage(r *http.Request, valid func(cursor string) bool) (page, *Problem) {
	p, q := page{limit: defaultPage}, r.URL.Query()
	var bad []FieldError
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			bad = append(bad, FieldError{Field: "limit", Detail: "a whole number from 1 to " + strconv.Itoa(maxPage)})
		}
		p.limit = n
	}
	if v := q.Get("cursor"); v != "" {
		if len(v) > 256 || !valid(v) {
			bad = append(bad, FieldError{Field: "cursor", Detail: "the previous page's next, unchanged"})
		}
		p.cursor = v
	}
	if len(bad) > 0 {
		return page{}, &Problem{Status: http.StatusBadRequest, Title: "Invalid query", Detail: "fix the query parameters", Errors: bad}
	}
	return p, nil
}

// anyCursor accepts every cursor: a key past the end is an empty page.
func anyCursor(string) bool { return true }

// intCursor accepts a positive whole number.
func intCursor(c string) bool {
	n, err := strconv.ParseInt(c, 10, 64)
	return err == nil && n > 0
}

// paginate pages a list held in memory, in the order of key: the items
// after the cursor, up to the limit, and the next cursor if more follow.
func paginate[T any](items []T, key func(T) string, p page) ([]T, string) {
	sort.SliceStable(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	start := sort.Search(len(items), func(i int) bool { return key(items[i]) > p.cursor })
	if p.cursor == "" {
		start = 0
	}
	items = items[start:]
	if len(items) <= p.limit {
		return items, ""
	}
	return items[:p.limit], key(items[p.limit-1])
}

// listJSON is a page of a list: the items under name, and "next" when
// another page follows.
func listJSON(name string, items any, next string) map[string]any {
	out := map[string]any{name: items}
	if next != "" {
		out["next"] = next
	}
	return out
}
