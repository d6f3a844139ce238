package httpapi

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// bodyKind is what a route takes as its request body.
type bodyKind int

const (
	// noBody: the route reads no body.
	noBody bodyKind = iota
	// jsonBody is one JSON value, up to the single-request limit.
	jsonBody
	// bigJSONBody is one JSON value up to maxBigJSONBody (bulk slots).
	bigJSONBody
	// tableJSONBody is one JSON value up to maxTableJSONBody: a table
	// replaced whole (a calendar's closing days, the routing rules), or
	// the ids of a release.
	tableJSONBody
	// bulkFileBody is a bulk file up to the bulk limit, in a format its
	// Content-Type names (decodeBatch).
	bulkFileBody
)

// maxBigJSONBody bounds POST /api/v1/slots/bulk (100,000 events).
const maxBigJSONBody = 64 << 20

// maxTableJSONBody bounds a calendar (10,000 closing days, 13 bytes
// each), the routing table (1,000 rules) and a release (10,000 ids of up
// to 64 bytes): 1 MiB holds each.
const maxTableJSONBody = 1 << 20

// bulkFileTypes are the bulk file formats: JSON lines, CSV, pain.001.
var bulkFileTypes = []string{"application/x-ndjson", "application/jsonl", "text/csv", "application/xml", "text/xml", "application/iso20022+xml"}

// limit is the most a body of kind k may hold.
func (k bodyKind) limit(l bodyLimits) int64 {
	switch k {
	case bulkFileBody:
		return l.bulk
	case bigJSONBody:
		return maxBigJSONBody
	case tableJSONBody:
		return maxTableJSONBody
	}
	return l.single
}

// takes reports whether a body of kind k may be of the media type mt
// (lower case, without parameters).
func (k bodyKind) takes(mt string) bool {
	if k == bulkFileBody {
		return slices.Contains(bulkFileTypes, mt)
	}
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && (sub == "json" || strings.HasSuffix(sub, "+json"))
}

// want says which Content-Type to send for a body of kind k.
func (k bodyKind) want() string {
	if k == bulkFileBody {
		return "send JSON lines (application/x-ndjson or application/jsonl), CSV (text/csv) or pain.001 (application/xml, text/xml or application/iso20022+xml)"
	}
	return "send Content-Type: application/json"
}

// accept is the Accept header of a 415 for kind k: the media types the
// request could have had (RFC 9110 §15.5.16).
func (k bodyKind) accept() string {
	if k == bulkFileBody {
		return strings.Join(bulkFileTypes, ", ")
	}
	return "application/json"
}

// checkBody refuses, before a byte of it is read, a body the route
// cannot take: compressed (415), of a media type or charset it does not
// take (415), or declared longer than its limit (413). Not reading it
// matters: a client that sent Expect: 100-continue gets the refusal
// instead of 100 Continue, and sends nothing. A Content-Type is required
// unless the request declares an empty body (Content-Length: 0, or none
// at all); a body of unknown length (chunked) needs one.
func checkBody(w http.ResponseWriter, r *http.Request, k bodyKind, limit int64) *Problem {
	for _, v := range r.Header.Values("Content-Encoding") {
		for coding := range strings.SplitSeq(v, ",") {
			coding = strings.TrimSpace(coding)
			if coding != "" && !strings.EqualFold(coding, "identity") {
				w.Header().Set("Accept-Encoding", "identity")
				return &Problem{Status: http.StatusUnsupportedMediaType, Title: "Unsupported content encoding",
					Detail: fmt.Sprintf("Content-Encoding %q is not supported; send the body uncompressed, without Content-Encoding", plaintext.Clip(coding, 32)),
					Errors: []field.Error{{Field: "Content-Encoding", Detail: "not supported; send the body uncompressed"}}}
			}
		}
	}
	unsupported := func(detail string) *Problem {
		w.Header().Set("Accept", k.accept())
		return &Problem{Status: http.StatusUnsupportedMediaType, Title: "Unsupported media type", Detail: detail + "; " + k.want(),
			Errors: []field.Error{{Field: "Content-Type", Detail: k.want()}}}
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength != 0 {
		return unsupported("the request has a body but no Content-Type")
	}
	if ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		switch {
		case err != nil:
			return unsupported("the Content-Type is not a media type")
		case !k.takes(mt):
			return unsupported(fmt.Sprintf("Content-Type %s is not taken here", plaintext.Clip(mt, 64)))
		case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
			return unsupported(fmt.Sprintf("charset %q is not taken: the body must be UTF-8 (charset=utf-8, or no charset)", plaintext.Clip(params["charset"], 32)))
		}
	}
	if r.ContentLength > limit {
		hint := ""
		if k == bulkFileBody {
			hint = ": split the file"
		}
		return &Problem{Status: http.StatusRequestEntityTooLarge, Title: "Request body too large",
			Detail: fmt.Sprintf("Content-Length %d is over this endpoint's limit of %d bytes%s; nothing was read", r.ContentLength, limit, hint)}
	}
	return nil
}

// tooLarge is the 413 of a body found over its limit while reading it.
func tooLarge(limit int64, hint string) *Problem {
	return &Problem{Status: http.StatusRequestEntityTooLarge, Title: "Request body too large",
		Detail: fmt.Sprintf("the body is over this endpoint's limit of %d bytes%s", limit, hint)}
}
