package outbox

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// CodeBehindFailure: a lane's message sent in one call with an earlier
// message that was not delivered; requeued behind it, so the lane's order
// holds (marked for inquiry when the rail may have it).
const CodeBehindFailure = "BEHIND_FAILURE"

// claimFollowers claims, behind each strict head of heads whose rail type
// the Sender batches, the run of its participant's next messages
// (ClaimLaneFollowers), at most limit in all, and hangs them on their
// heads. It returns how many it claimed.
func (r *Relayer) claimFollowers(ctx context.Context, q *dbsqlc.Queries, heads []claimed, limit int) (int, error) {
	bs, ok := r.cfg.Sender.(BatchSender)
	if !ok || r.cfg.LaneBatchSize < 2 || limit <= 0 {
		return 0, nil
	}
	var p dbsqlc.ClaimLaneFollowersParams
	lane := map[string]int{}
	for i, h := range heads {
		if !h.strict || !bs.Batches(h.msg.RailType) {
			continue
		}
		p.ParticipantIds = append(p.ParticipantIds, h.msg.ParticipantID)
		p.HeadSequences = append(p.HeadSequences, h.msg.SequenceID)
		p.RailTypes = append(p.RailTypes, h.msg.RailType)
		lane[h.msg.ParticipantID] = i
	}
	if len(p.ParticipantIds) == 0 {
		return 0, nil
	}
	perLane := r.cfg.LaneBatchSize - 1
	total := min(limit, perLane*len(p.ParticipantIds))
	p.PerLane, p.Total, p.RelayerID, p.AttemptIds = int32(perLane), int32(total), r.cfg.ID, attemptIDs(total)
	rows, err := q.ClaimLaneFollowers(ctx, p)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	for _, row := range rows {
		i := lane[row.ParticipantID]
		heads[i].followers = append(heads[i].followers, claimedFrom(dbsqlc.ClaimDueRow(row), now))
	}
	return len(rows), nil
}

// processLane runs a lane's batch, a strict head and the run claimed
// right behind it, to one outcome per message: the inquiries of the
// messages marked for one first, in order, then one SendBatch of the
// rest. From the first message that is neither delivered nor dead, every
// message after it is requeued too, so that nothing of the lane settles
// ahead of an earlier message still to be sent.
func (r *Relayer) processLane(ctx, workCtx context.Context, head claimed) []outcome {
	all := make([]claimed, 0, 1+len(head.followers))
	all = append(all, head)
	all = append(all, head.followers...)
	all[0].followers = nil
	out := make([]outcome, 0, len(all))
	release, err := r.acquire(ctx, head.msg.RailType)
	if err != nil {
		for _, c := range all {
			out = append(out, r.putBack(c, "", "relayer stopping before the rail call"))
		}
		return out
	}
	defer release()

	type toSend struct {
		c       claimed
		inquiry Outcome
		spent   time.Duration
	}
	send := make([]toSend, 0, len(all))
	held := len(all) // messages from here on are put back unsent
lane:
	for i, c := range all {
		var inquiry Outcome
		var spent time.Duration
		if c.inquire {
			res, took := r.call(workCtx, c.msg, "inquire", r.cfg.Sender.Inquire)
			spent, inquiry = took, res.Outcome
			switch res.Outcome {
			case Delivered:
				r.m.inquiry(Delivered)
				out = append(out, outcome{c: c, state: StateDispatched, res: res, latency: took, inquiry: inquiry, requeueAfter: -1})
				continue
			case Terminal:
				r.m.inquiry(Terminal)
				out = append(out, outcome{c: c, state: StateFailed, res: res, code: CodeRailTerminal, text: res.Message,
					latency: took, inquiry: inquiry, requeueAfter: -1})
				continue
			case NotReceived:
				r.m.inquiry(NotReceived)
			default:
				r.m.inquiry(Unknown)
				r.m.unknownOutcome("inquire")
				out = append(out, r.unknown(c, res, took, Unknown))
				held = i + 1
				break lane
			}
		}
		if err := r.cfg.Sender.Validate(c.msg); err != nil {
			out = append(out, outcome{c: c, state: StateFailed, code: CodeInvalidPayload, text: err.Error(),
				res:     Result{Outcome: Terminal, Code: CodeInvalidPayload, Message: err.Error()},
				latency: spent, inquiry: inquiry, requeueAfter: -1})
			continue
		}
		send = append(send, toSend{c: c, inquiry: inquiry, spent: spent})
	}
	for _, c := range all[held:] {
		out = append(out, r.putBack(c, "", "behind a message whose inquiry was unknown"))
	}
	if len(send) == 0 {
		return out
	}
	if age := time.Since(head.at); age > r.cfg.sendDeadline() {
		why := fmt.Sprintf("claim %v old, past the send deadline %v", age.Round(time.Millisecond), r.cfg.sendDeadline())
		for _, s := range send {
			out = append(out, r.putBack(s.c, s.inquiry, why))
		}
		return out
	}
	ms := make([]Message, len(send))
	for i, s := range send {
		ms[i] = s.c.msg
	}
	results, took := r.callBatch(workCtx, ms)
	failed := false
	for i, s := range send {
		res := results[i]
		if failed {
			out = append(out, behind(s.c, res, s.spent+took, s.inquiry))
			continue
		}
		o := r.sent(s.c, res, s.spent+took, s.inquiry)
		out = append(out, o)
		failed = o.state != StateDispatched && o.state != StateFailed
	}
	return out
}

// behind requeues, due at once, a message sent after one of its lane that
// was not delivered: it goes again after that one. Marked for inquiry
// when the rail may have it (delivered, or unknown), so a rail that can
// be asked is not sent it twice.
func behind(c claimed, res Result, spent time.Duration, inquiry Outcome) outcome {
	mayHave := res.Outcome != Retryable && res.Outcome != NotReceived && res.Outcome != Terminal
	return outcome{c: c, state: StateRetryable, res: res, code: CodeBehindFailure,
		text:    "behind an earlier message of its lane that was not delivered (" + string(res.Outcome) + " here)",
		latency: spent, inquiry: inquiry, requeueAfter: 0, requeueInquire: mayHave}
}

// callBatch runs one SendBatch with the hard timeout, as call does for a
// single message: a sender that does not return in time, panics, or
// answers a result count other than the messages' makes every message
// Unknown. Its span is the head's.
func (r *Relayer) callBatch(ctx context.Context, ms []Message) ([]Result, time.Duration) {
	bs := r.cfg.Sender.(BatchSender)
	cctx, cancel := context.WithTimeout(ctx, r.cfg.RailTimeout)
	defer cancel()
	var span trace.Span
	if r.cfg.Tracer != nil {
		cctx, span = r.startSpan(cctx, ms[0], "send")
		span.SetAttributes(attribute.Int("outbox.batch", len(ms)))
	}
	start := time.Now()
	done := make(chan []Result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- unknownAll(len(ms), "SENDER_PANIC", fmt.Sprint(p))
			}
		}()
		done <- bs.SendBatch(cctx, ms)
	}()
	grace := time.NewTimer(r.cfg.RailTimeout + r.cfg.RailTimeout/10)
	defer grace.Stop()
	var res []Result
	select {
	case res = <-done:
		if len(res) != len(ms) {
			res = unknownAll(len(ms), "SENDER_RESULTS", fmt.Sprintf("%d results for %d messages", len(res), len(ms)))
		}
	case <-grace.C:
		res = unknownAll(len(ms), "TIMEOUT", fmt.Sprintf("send of %d: no answer within %v", len(ms), r.cfg.RailTimeout))
	}
	took := time.Since(start)
	r.m.railCall(ms[0].RailType, "send", took)
	if span != nil {
		endSpan(span, "send", res[0])
	}
	return res, took
}

func unknownAll(n int, code, msg string) []Result {
	res := make([]Result, n)
	for i := range res {
		res[i] = Result{Outcome: Unknown, Code: code, Message: msg}
	}
	return res
}
