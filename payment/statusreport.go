package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// ErrNotPain001: the file exists but was not a pain.001, so it has no
// status report.
var ErrNotPain001 = errors.New("payment: the batch did not come from a pain.001 file")

// Pain001Origin is what a pain.001 file's status report (pain.002) names
// and what its transactions carried that a payment request does not:
// kept with the file when it is taken in (RecordPain001).
type Pain001Origin struct {
	MsgID   string `json:"msgId"`
	CreDtTm string `json:"creDtTm,omitempty"`
	// Namespace is the file's own; MsgNmID the message it names
	// ("pain.001.001.03.ch.02" for a Swiss SPS file), Version the ISO
	// version whose schema checked it ("pain.001.001.03").
	Namespace string         `json:"namespace"`
	MsgNmID   string         `json:"msgNmId"`
	Version   string         `json:"version"`
	NbOfTxs   string         `json:"nbOfTxs"`
	CtrlSum   string         `json:"ctrlSum,omitempty"`
	PmtInfs   []PmtInfOrigin `json:"pmtInfs"`
}

// PmtInfOrigin is a payment-information block: its id, its batch-booking
// flag and charge bearer as given, and its transactions in file order.
type PmtInfOrigin struct {
	PmtInfID     string     `json:"pmtInfId"`
	NbOfTxs      string     `json:"nbOfTxs,omitempty"`
	CtrlSum      string     `json:"ctrlSum,omitempty"`
	BatchBooking *bool      `json:"batchBooking,omitempty"`
	ChargeBearer string     `json:"chargeBearer,omitempty"`
	Txs          []TxOrigin `json:"txs"`
}

// TxOrigin is a credit transfer of the file: Place is its number in the
// file (the Line of a LineError that rejects it), Key the payment it
// became once started ("" when it was rejected at intake).
type TxOrigin struct {
	Place      int    `json:"place"`
	InstrID    string `json:"instrId,omitempty"`
	EndToEndID string `json:"endToEndId,omitempty"`
	// ChargeBearer is its own ChrgBr, else its block's.
	ChargeBearer string `json:"chargeBearer,omitempty"`
	// CreditorRef is Strd/CdtrRefInf/Ref, with its type (SCOR, QRR, ...).
	CreditorRef     string `json:"creditorRef,omitempty"`
	CreditorRefType string `json:"creditorRefType,omitempty"`
	Key             string `json:"key,omitempty"`
}

// RecordPain001 keeps a pain.001 file's origin with its batch: started and
// places are the requests started and their transactions' numbers, from
// which each transaction's payment key is set. The same file again keeps
// the first record.
func (s *Service) RecordPain001(ctx context.Context, batchID string, o Pain001Origin, started []Request, places []int) error {
	keyAt := make(map[int]string, len(started))
	for i, r := range started {
		keyAt[places[i]] = Key(r.TenantID, r.PaymentID)
	}
	for i := range o.PmtInfs {
		for j := range o.PmtInfs[i].Txs {
			tx := &o.PmtInfs[i].Txs[j]
			tx.Key = keyAt[tx.Place]
		}
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return err
	}
	if err := dbsqlc.New(s.cfg.Store.db).InsertBatchPain001(ctx, dbsqlc.InsertBatchPain001Params{
		BatchID: batchID, MsgID: o.MsgID, Namespace: o.Namespace, Document: raw}); err != nil {
		return fmt.Errorf("payment: batch %s: record its pain.001: %w", batchID, err)
	}
	return nil
}

// Pain001Report is what a pain.001 file's status report is made of: the
// file's origin, the transactions rejected at intake (by place), and
// where each started payment is now (by key; a payment still waiting for
// Phase A has none).
type Pain001Report struct {
	BatchID    string
	Tenants    []string
	Origin     Pain001Origin
	Rejections map[int][]field.Error
	Outcomes   map[string]Outcome
}

// Outcome is a payment's status and its reason ("CODE: text"), its rail
// and its execution date (YYYY-MM-DD; empty: none yet).
type Outcome struct {
	Status        Status
	Reason        string
	Rail          string
	ExecutionDate string
	// Details are the payment's, which the report echoes.
	Details txdetail.Details
}

// outcomesPerQuery bounds the keys one query reads.
const outcomesPerQuery = 10000

// StatusReportOf gathers a pain.001 file's status: ErrNotFound when there
// is no such batch, ErrNotPain001 when it came from another format.
func (s *Service) StatusReportOf(ctx context.Context, batchID string) (Pain001Report, error) {
	rejections, tenants, err := s.BatchRejections(ctx, batchID)
	if err != nil {
		return Pain001Report{}, err
	}
	q := dbsqlc.New(s.cfg.Store.db)
	raw, err := q.GetBatchPain001(ctx, batchID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Pain001Report{BatchID: batchID, Tenants: tenants}, ErrNotPain001
	}
	if err != nil {
		return Pain001Report{}, fmt.Errorf("payment: batch %s: its pain.001: %w", batchID, err)
	}
	rep := Pain001Report{BatchID: batchID, Tenants: tenants, Rejections: map[int][]field.Error{}, Outcomes: map[string]Outcome{}}
	if err := json.Unmarshal(raw, &rep.Origin); err != nil {
		return Pain001Report{}, fmt.Errorf("payment: batch %s: its pain.001: %w", batchID, err)
	}
	for _, le := range rejections {
		rep.Rejections[le.Line] = append(rep.Rejections[le.Line], le.Fields...)
	}
	var keys []string
	for _, pi := range rep.Origin.PmtInfs {
		for _, tx := range pi.Txs {
			if tx.Key != "" {
				keys = append(keys, tx.Key)
			}
		}
	}
	for from := 0; from < len(keys); from += outcomesPerQuery {
		rows, err := q.PaymentOutcomes(ctx, keys[from:min(from+outcomesPerQuery, len(keys))])
		if err != nil {
			return Pain001Report{}, fmt.Errorf("payment: batch %s: its payments' statuses: %w", batchID, err)
		}
		for _, r := range rows {
			o := Outcome{Status: Status(r.Status), Reason: ptr.Deref(r.StatusReason), Rail: ptr.Deref(r.Rail)}
			if o.Details, err = detailsOf(r.Details); err != nil {
				return Pain001Report{}, fmt.Errorf("payment: batch %s: %w", batchID, err)
			}
			if r.ExecutionDate != nil {
				o.ExecutionDate = r.ExecutionDate.Format(time.DateOnly)
			}
			rep.Outcomes[r.PaymentID] = o
		}
	}
	return rep, nil
}
