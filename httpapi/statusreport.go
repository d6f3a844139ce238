package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/paydispatch/paydispatch/bulkfile"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
)

// StatusReports is what a pain.001 file's status report needs; Payments
// that implement it (payment.Service) keep each pain.001 file's origin at
// intake and serve GET /v1/payment-batches/{id}/status-report.
type StatusReports interface {
	RecordPain001(ctx context.Context, batchID string, o payment.Pain001Origin, started []payment.Request, places []int) error
	StatusReportOf(ctx context.Context, batchID string) (payment.Pain001Report, error)
}

// recordPain001 keeps a started pain.001 file's origin for its status
// report. A failure is logged, not answered: the payments are accepted,
// and only the report is missing (the same file sent again records it).
func (rt *Router) recordPain001(r *http.Request, p Payments, batchID string, o *payment.Pain001Origin, started []payment.Request, places []int) {
	sr, ok := p.(StatusReports)
	if o == nil || !ok {
		return
	}
	if err := sr.RecordPain001(r.Context(), batchID, *o, started, places); err != nil {
		rt.log.Error("recording a pain.001 file's origin failed", "batch", batchID, "error", err)
	}
}

var _ StatusReports = (*payment.Service)(nil)

// statusReport serves GET /v1/payment-batches/{id}/status-report: a
// pain.002 (customer payment status report) of a batch taken in as a
// pain.001; 404 for no such batch (or one with another tenant's
// payments), 409 for a batch of another format, which has no pain.002.
func (api *paymentsAPI) statusReport(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rep, err := api.reports.StatusReportOf(r.Context(), id)
	if (err == nil || errors.Is(err, payment.ErrNotPain001)) && !tenantsAllowed(r, rep.Tenants) {
		err = payment.ErrNotFound // a file with another tenant's payments does not exist for this caller
	}
	switch {
	case errors.Is(err, payment.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment batch " + plaintext.Clip(id, 64)})
		return
	case errors.Is(err, payment.ErrNotPain001):
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Not a pain.001 batch",
			Detail: "payment batch " + plaintext.Clip(id, 64) + " was not sent as a pain.001 file: a status report (pain.002) answers pain.001 files only; GET /v1/payment-batches/{id} and its rejections give its progress"})
		return
	case err != nil:
		api.rt.log.Error("batch status report failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the batch cannot be read now; retry"})
		return
	}
	var b bytes.Buffer
	if err := bulkfile.StatusReport(&b, rep, time.Now()); err != nil {
		api.rt.log.Error("batch status report failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the status report cannot be written now; retry"})
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}
