package kafka

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.temporal.io/api/serviceerror"
)

// outage reports whether a chunk's failure is a dependency out of reach
// (the database, Temporal, the brokers) rather than its records' fault:
// an error of a kind outages give, or any error while Healthy fails.
func (in *Intake) outage(ctx context.Context, err error) bool {
	if transient(err) {
		return true
	}
	if in.cfg.Healthy == nil {
		return false
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if herr := in.cfg.Healthy(hctx); herr != nil {
		in.log.Warn("kafka intake: a dependency does not answer", "err", herr)
		return true
	}
	return false
}

// transient reports an error of the kinds a dependency out of reach or
// overloaded gives: a connection lost or refused, a timeout, PostgreSQL's
// classes 08 (connection), 40 (a transaction rolled back: serialization,
// deadlock), 53 (resources), 55 (a lock not available), 57 (an operator's
// shutdown, a server starting) and 58 (the system's I/O), Temporal out of
// reach or overloaded, and Kafka's retriable errors. A PostgreSQL error of
// another class (a value the database refuses, class 22 or 23) is not one:
// it is some record's.
func transient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if len(pgErr.Code) < 2 {
			return false
		}
		switch pgErr.Code[:2] {
		case "08", "40", "53", "55", "57", "58":
			return true
		}
		return false
	}
	var kErr *kerr.Error
	if errors.As(err, &kErr) {
		return kErr.Retriable
	}
	var (
		connectErr  *pgconn.ConnectError
		netErr      net.Error
		unavailable *serviceerror.Unavailable
		nsUnavail   *serviceerror.NamespaceUnavailable
		deadline    *serviceerror.DeadlineExceeded
		exhausted   *serviceerror.ResourceExhausted
	)
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.As(err, &unavailable), errors.As(err, &nsUnavail), errors.As(err, &deadline), errors.As(err, &exhausted):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kgo.ErrRecordRetries), errors.Is(err, kgo.ErrClientClosed):
		return true
	}
	return pgconn.Timeout(err) || pgconn.SafeToRetry(err)
}
