package rail

import (
	"net/http"
	"testing"

	"github.com/paydispatch/paydispatch/outbox"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code string
		want outbox.Outcome
	}{
		{"AC01", outbox.Terminal}, {"AC04", outbox.Terminal}, {"AC06", outbox.Terminal},
		{"AG01", outbox.Terminal}, {"AM04", outbox.Terminal}, {"BE01", outbox.Terminal},
		{"RC01", outbox.Terminal}, {"RR04", outbox.Terminal}, {"MS03", outbox.Terminal},
		{"FF01", outbox.Terminal}, {CodeInvalidPayload, outbox.Terminal},

		{"RAIL_BUSY", outbox.Retryable}, {"RATE_LIMITED", outbox.Retryable},
		{"TEMPORARILY_UNAVAILABLE", outbox.Retryable}, {"AB05", outbox.Retryable},
		{CodeConnectFailed, outbox.Retryable},

		{CodeTimeout, outbox.Unknown}, {CodeConnectionCut, outbox.Unknown},
		{CodeCanceled, outbox.Unknown}, {CodeBadAnswer, outbox.Unknown},

		// Not in the table: retryable, the relayer caps attempts.
		{"ZZ99", outbox.Retryable}, {"", outbox.Retryable},
		// Codes, not text: a lower-case spelling is another (unknown) code.
		{"ac04", outbox.Retryable},
	}
	for _, tc := range cases {
		if got := Classify(tc.code); got != tc.want {
			t.Errorf("Classify(%q) = %s, want %s", tc.code, got, tc.want)
		}
	}
}

func TestClassifyAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status   int
		code     string
		want     outbox.Outcome
		wantCode string
	}{
		{http.StatusServiceUnavailable, "RAIL_BUSY", outbox.Retryable, "RAIL_BUSY"},
		{http.StatusUnprocessableEntity, "AC04", outbox.Terminal, "AC04"},
		// The code decides, not the status.
		{http.StatusServiceUnavailable, "AC04", outbox.Terminal, "AC04"},
		{http.StatusTooManyRequests, "", outbox.Retryable, "HTTP_429"},
		{http.StatusBadGateway, "", outbox.Retryable, "HTTP_502"},
		{http.StatusServiceUnavailable, "", outbox.Retryable, "HTTP_503"},
		{http.StatusGatewayTimeout, "", outbox.Retryable, "HTTP_504"},
		{http.StatusBadRequest, "", outbox.Terminal, "HTTP_400"},
		{http.StatusInternalServerError, "", outbox.Unknown, "HTTP_500"},
		{http.StatusTeapot, "", outbox.Retryable, "HTTP_418"},
	}
	for _, tc := range cases {
		got, code := ClassifyAnswer(tc.status, tc.code)
		if got != tc.want || code != tc.wantCode {
			t.Errorf("ClassifyAnswer(%d, %q) = %s %s, want %s %s", tc.status, tc.code, got, code, tc.want, tc.wantCode)
		}
	}
}

func TestCodesTable(t *testing.T) {
	t.Parallel()
	codes := Codes()
	if len(codes) < 40 {
		t.Fatalf("only %d codes", len(codes))
	}
	for i, c := range codes {
		if i > 0 && codes[i-1].Code >= c.Code {
			t.Errorf("not sorted at %s", c.Code)
		}
		switch c.Outcome {
		case outbox.Terminal, outbox.Retryable, outbox.Unknown:
		default:
			t.Errorf("%s: outcome %s: a code never means delivered or not received", c.Code, c.Outcome)
		}
		if c.Meaning == "" || !Known(c.Code) {
			t.Errorf("%s: no meaning", c.Code)
		}
	}
}

func TestSendResult(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		body   string
		want   outbox.Outcome
		code   string
	}{
		{"accepted 201", 201, `{"status":"ACCEPTED","reference":"R1"}`, outbox.Delivered, ""},
		{"accepted 200", 200, `{"status":"ACCEPTED","reference":"R1"}`, outbox.Delivered, ""},
		{"accepted 202", 202, `{"status":"ACCEPTED"}`, outbox.Unknown, CodeBadAnswer},
		{"200 without status", 200, `{}`, outbox.Unknown, CodeBadAnswer},
		{"200 not json", 200, `<html>`, outbox.Unknown, CodeBadAnswer},
		{"200 rejected", 200, `{"status":"REJECTED","code":"AC04"}`, outbox.Terminal, "AC04"},
		{"503 busy", 503, `{"code":"RAIL_BUSY","message":"busy"}`, outbox.Retryable, "RAIL_BUSY"},
		{"503 html", 503, `<html>down</html>`, outbox.Retryable, "HTTP_503"},
		{"422 closed", 422, `{"code":"AC04"}`, outbox.Terminal, "AC04"},
		{"500 no code", 500, ``, outbox.Unknown, "HTTP_500"},
		{"302", 302, ``, outbox.Retryable, "HTTP_302"},
	}
	for _, tc := range cases {
		got := sendResult(tc.status, []byte(tc.body))
		if got.Outcome != tc.want || got.Code != tc.code {
			t.Errorf("%s: got %+v, want %s %s", tc.name, got, tc.want, tc.code)
		}
	}
}

func TestInquiryResult(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		body   string
		want   outbox.Outcome
	}{
		{"accepted", 200, `{"status":"ACCEPTED","reference":"R1"}`, outbox.Delivered},
		{"rejected", 200, `{"status":"REJECTED","code":"AC04"}`, outbox.Terminal},
		{"pending", 200, `{"status":"PENDING"}`, outbox.Unknown},
		{"not found", 404, `{"code":"NOT_FOUND"}`, outbox.NotReceived},
		{"busy", 503, `{"code":"RAIL_BUSY"}`, outbox.Unknown},
		{"garbage", 200, `nope`, outbox.Unknown},
	}
	for _, tc := range cases {
		if got := inquiryResult(tc.status, []byte(tc.body)); got.Outcome != tc.want {
			t.Errorf("%s: got %+v, want %s", tc.name, got, tc.want)
		}
	}
}
