// Package screening is the screening hook: an adapter that asks an
// outside screening service (sanctions and watch lists) about payments
// at intake, and a payment.Control that holds the hits before any of them
// takes a slot.
//
// # Where it runs
//
// Phase A runs the Control on the accepted payments of an intake chunk
// (up to 2,500, a single payment alone), before any takes a slot and
// well ahead of their execution slots: a call's latency delays a
// payment's intake, never the paced rate of the executions.
//
// # The protocol
//
// A call is POST {URL} with Content-Type application/json, about a batch
// of at most BatchSize payments:
//
//	{"payments": [{"id": "5f0c…", "tenantId": "acme", "paymentId": "pay-1",
//	  "debtorAccount": "ACC-1", "creditorName": "Jane Roe",
//	  "creditorIban": "DE89370400440532013000", "creditorBic": "COBADEFFXXX",
//	  "creditorCountry": "DE", "amount": "125.00", "currency": "EUR",
//	  "remittanceInfo": "INV-42"}]}
//
// (Subject documents each field and why it is sent.) The service answers
// 200 with a verdict for each id:
//
//	{"results": [{"id": "5f0c…", "verdict": "HIT", "list": "EU-CONSOLIDATED",
//	  "reason": "name match 0.97"}]}
//
// verdict is CLEAR, HIT (list and reason optional, each clipped to 200
// bytes in the status reason) or ERROR (reason optional). The answer is
// decoded strictly: a body that is not exactly that document (unknown
// members, wrong types, invalid UTF-8, trailing data), or that names an
// id the call did not ask about, is an ERROR for every payment of the
// call; an id answered twice, with another verdict, or not at all is an
// ERROR for that payment. A status other than 200, a transport error and
// a call not answered within Timeout are an ERROR for every payment of
// the call.
//
// # Decisions
//
// CLEAR passes. HIT holds the payment HELD with the reason
// "SCREENING: <list>: <reason>": no slot, no queue item, until an
// operator releases it (payment.Service.Release) or cancels it. ERROR
// goes by the tenant's rule (ControlConfig.OnError): HOLD (the default)
// holds it "SCREENING: no answer (<why>)", REJECT rejects it with that
// reason, ALLOW passes it unscreened, logged and counted
// (paydispatch_screening_errors_total{rule="ALLOW"}).
//
// # Retries
//
// Phase A may run again for the same payments (a retried attempt, or the
// intake resumed). A hit is kept in the table screening_hits, keyed by
// the payment, before Phase A goes on, and read back on the next run
// instead of asking again: a hit never becomes a clear. Clears and
// unanswered payments are not kept: they are asked again, which can only
// make them hits (a committed payment never reaches Phase A again), and
// hits are rare, so the table stays small.
//
// # The simulator
//
// Simulator answers the protocol for tests, benchmarks and the demo
// (paydispatch screen-sim): named creditors hit, a seeded fraction hits
// or errs, and each call waits a set delay.
package screening
