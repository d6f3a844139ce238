package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"slices"
	"sort"
	"strconv"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/internal/field"
)

// Every list takes ?limit=N (1 to maxPage, default defaultPage) and
// ?cursor=C, the previous page's "next"; a page that is not the last
// carries "next". Cursors are opaque to the caller.
const (
	defaultPage = 100
	maxPage     = 1000
	// maxCursor bounds a cursor as sent; the longest made (a position of
	// a 100-character config name) is about 160.
	maxCursor = 256
)

// A cursor is the base64url of a version byte, the position the page
// ended at, and a tag: the first bytes of a SHA-256 over the list (route
// pattern and path), the caller's tenant, the filters (the query
// parameters but limit and cursor) and the position. A cursor used on
// another list, by another tenant, with other filters, or altered, fails
// the tag and is refused. The tag is not a secret and need not be: a
// caller can only page what it may see anyway; it keeps a cursor from
// meaning something else where it does not belong.
const (
	cursorVersion = 1
	cursorTagLen  = 12
)

// page is a list request's limit and where it starts.
type page struct {
	limit int
	// after is the position the previous page ended at; started is
	// false for the first page.
	after   string
	started bool
	scope   [sha256.Size]byte // what the list's cursors are bound to
}

// badCursor is the refusal of a cursor that is not this list's.
var badCursor = field.Error{Field: "cursor", Detail: "not a cursor of this list: use the previous page's next unchanged, with the same query parameters"}

// readPage reads ?limit and ?cursor; valid checks the position a cursor
// carries.
func readPage(r *http.Request, valid func(position string) bool) (page, *Problem) {
	p, q := page{limit: defaultPage, scope: listScope(r)}, r.URL.Query()
	var bad []field.Error
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			bad = append(bad, field.Error{Field: "limit", Detail: "a whole number from 1 to " + strconv.Itoa(maxPage)})
		}
		p.limit = n
	}
	if v := q.Get("cursor"); v != "" {
		pos, ok := p.open(v)
		if !ok || !valid(pos) {
			bad = append(bad, badCursor)
		}
		p.after, p.started = pos, true
	}
	if len(bad) > 0 {
		detail := "fix the query parameters"
		if slices.Contains(bad, badCursor) {
			detail = "cursor: use the previous page's next unchanged, with the same query parameters as that page (limit aside)"
		}
		return page{}, &Problem{Status: http.StatusBadRequest, Title: "Invalid query", Detail: detail, Errors: bad}
	}
	return p, nil
}

// listScope digests what a cursor of r's list is bound to.
func listScope(r *http.Request) [sha256.Size]byte {
	var b bytes.Buffer
	field := func(s string) {
		b.Write(binary.AppendUvarint(nil, uint64(len(s))))
		b.WriteString(s)
	}
	tenant := ""
	if p, ok := auth.FromContext(r.Context()); ok {
		tenant = p.TenantID
	}
	field(r.Pattern)
	field(r.URL.Path)
	field(tenant)
	q := r.URL.Query()
	names := make([]string, 0, len(q))
	for name := range q {
		if name != "limit" && name != "cursor" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		field(name)
		b.Write(binary.AppendUvarint(nil, uint64(len(q[name]))))
		for _, v := range q[name] {
			field(v)
		}
	}
	return sha256.Sum256(b.Bytes())
}

// tag binds position to the list's scope.
func (p page) tag(position string) []byte {
	h := sha256.New()
	h.Write([]byte{cursorVersion})
	h.Write(p.scope[:])
	h.Write([]byte(position))
	return h.Sum(nil)[:cursorTagLen]
}

// cursor is the "next" of a page that ended at position.
func (p page) cursor(position string) string {
	b := append([]byte{cursorVersion}, position...)
	return base64.RawURLEncoding.EncodeToString(append(b, p.tag(position)...))
}

// open reads a cursor of this list, returning the position it carries.
func (p page) open(c string) (string, bool) {
	if len(c) > maxCursor {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 1+cursorTagLen || b[0] != cursorVersion {
		return "", false
	}
	pos, tag := string(b[1:len(b)-cursorTagLen]), b[len(b)-cursorTagLen:]
	return pos, bytes.Equal(tag, p.tag(pos))
}

// anyPosition accepts every position: a key past the end is an empty
// page.
func anyPosition(string) bool { return true }

// seqPosition accepts a positive whole number.
func seqPosition(c string) bool {
	n, err := strconv.ParseInt(c, 10, 64)
	return err == nil && n > 0
}

// paginate pages a list held in memory, in the order of key: the items
// after the page's position, up to the limit, and the next cursor if
// more follow.
func paginate[T any](items []T, key func(T) string, p page) ([]T, string) {
	sort.SliceStable(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	start := 0
	if p.started {
		start = sort.Search(len(items), func(i int) bool { return key(items[i]) > p.after })
	}
	items = items[start:]
	if len(items) <= p.limit {
		return items, ""
	}
	return items[:p.limit], p.cursor(key(items[p.limit-1]))
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
