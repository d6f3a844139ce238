-- The payments' invariants across the ledger, the process manager and the
-- outbox (payment.Verify). Each query lists the rows that break one; a
-- payment executed before executions ran SubmitPayment has no process and
-- is left out.
--
-- The retention deletes an ended process and a done instruction's key
-- and attempts: what the rules need of them is then read from the money
-- records. The booking keeps the process id (its debit references) and
-- the instruction's outbox id, written in the transaction that enqueued
-- it; a rule that only the deleted rows can check (the process's status,
-- the DISPATCHED attempt, when it was sent) holds for the payments whose
-- rows are still there.

-- name: ExecutedWithoutOneDebit :many
-- An executed payment (ACCEPTED, PROCESSING, DELIVERED) has exactly one
-- debit standing: its first, or the last of an operator's redrives
-- (payment_booking.redrives), each made after the one before was
-- reversed. No debit beyond those.
SELECT p.payment_id, p.status,
       count(t.transaction_id)::int AS debits,
       count(r.transaction_id)::int AS reversals
FROM payments p
LEFT JOIN process_instance pi ON pi.process_type = 'SubmitPayment' AND pi.business_key = p.payment_id
LEFT JOIN payment_booking b ON b.payment_id = p.payment_id
LEFT JOIN account_transaction t
       ON t.reference = ANY (payment_debit_references(coalesce(pi.process_id, b.process_id), coalesce(b.redrives, 0)))
LEFT JOIN account_transaction r ON r.reverses = t.transaction_id
WHERE p.status IN ('ACCEPTED', 'PROCESSING', 'DELIVERED')
  AND (pi.process_id IS NOT NULL OR b.process_id IS NOT NULL)
GROUP BY p.payment_id, p.status
HAVING count(t.transaction_id) - count(r.transaction_id) <> 1
    OR count(t.transaction_id) <> 1 + coalesce(max(b.redrives), 0);

-- name: UndoneWithMoneyHeld :many
-- A FAILED or RETURNED payment holds nothing: its debits (if any)
-- reversed, its limit bookings reversed, its FX contract (if any) not
-- BOOKED — a FAILED one's unwound; a RETURNED one's conversion was made,
-- and stays.
-- A payment whose process is gone is found by its booking's process id;
-- one with neither (failed before its booking, its process deleted) is
-- left to the ledger's own rules.
SELECT u.payment_id, u.status,
       (SELECT count(*) FROM account_transaction t
        WHERE t.reference = ANY (payment_debit_references(u.process_id, u.redrives))
          AND NOT EXISTS (SELECT 1 FROM account_transaction r WHERE r.reverses = t.transaction_id))::int AS unreversed_debits,
       (SELECT count(*) FROM limit_booking b
        WHERE b.reference = u.process_id::text || ':BookLimits' AND b.reversed_at IS NULL)::int AS unreversed_limits,
       (SELECT count(*) FROM fx_contract c
        WHERE c.reference = u.process_id::text || ':BookFx' AND c.status = 'BOOKED' AND u.status = 'FAILED')::int AS booked_contracts
FROM (SELECT p.payment_id, p.status, coalesce(pi.process_id, b.process_id) AS process_id, coalesce(b.redrives, 0) AS redrives
      FROM payments p
      LEFT JOIN process_instance pi ON pi.process_type = 'SubmitPayment' AND pi.business_key = p.payment_id
      LEFT JOIN payment_booking b ON b.payment_id = p.payment_id
      WHERE p.status IN ('FAILED', 'RETURNED')
        AND (pi.process_id IS NOT NULL OR b.process_id IS NOT NULL)) u;

-- name: ProcessDisagrees :many
-- A payment's status follows its process: SUCCEEDED → executed
-- (ACCEPTED, PROCESSING, DELIVERED, RETURNED); FAILED, COMPENSATED or
-- COMPENSATION_FAILED → FAILED, or CANCELLED when the process found the
-- payment cancelled before it began.
SELECT p.payment_id, p.status, pi.status AS process_status
FROM payments p
JOIN process_instance pi ON pi.process_type = 'SubmitPayment' AND pi.business_key = p.payment_id
WHERE (pi.status = 'SUCCEEDED' AND p.status NOT IN ('ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED'))
   OR (pi.status IN ('FAILED', 'COMPENSATED', 'COMPENSATION_FAILED') AND p.status <> 'FAILED'
       AND NOT (p.status = 'CANCELLED' AND pi.error_code = 'CANCELLED'));

-- name: CancelledButMoved :many
-- A CANCELLED payment was never debited, booked or sent to the rail.
SELECT c.payment_id, c.debits, c.booked, c.instructed
FROM (SELECT p.payment_id,
             (SELECT count(*) FROM process_instance pi JOIN account_transaction t
                ON t.reference = pi.process_id::text || ':CreateTransaction'
              WHERE pi.process_type = 'SubmitPayment' AND pi.business_key = p.payment_id)::int AS debits,
             EXISTS (SELECT 1 FROM payment_booking b WHERE b.payment_id = p.payment_id)::bool AS booked,
             EXISTS (SELECT 1 FROM payment_outbox_keys k WHERE k.instruction_id = p.payment_id)::bool AS instructed
      FROM payments p
      WHERE p.status = 'CANCELLED') c
WHERE c.debits > 0 OR c.booked OR c.instructed;

-- name: BookingWithoutOneInstruction :many
-- A booked payment has exactly one rail instruction, and an instruction
-- belongs to a booked payment. The payments' own events
-- (payment.EventRailType) share the outbox and are no instruction. Once
-- the retention deleted a done instruction's key, the booking's outbox
-- id (set from the enqueue, in its transaction) is the instruction.
SELECT coalesce(b.payment_id, k.instruction_id)::text AS payment_id,
       bool_or(b.payment_id IS NOT NULL)::bool AS booked,
       greatest(count(k.outbox_id), count(b.outbox_id))::int AS instructions
FROM payment_booking b
FULL JOIN (SELECT i.instruction_id, i.outbox_id FROM payment_outbox_keys i WHERE i.rail_type <> 'PAYMENT_EVENT') k
  ON k.instruction_id = b.payment_id
GROUP BY coalesce(b.payment_id, k.instruction_id)
HAVING NOT bool_or(b.payment_id IS NOT NULL)
    OR count(k.outbox_id) > 1
    OR (count(k.outbox_id) = 0 AND count(b.outbox_id) = 0)
    OR bool_or(k.outbox_id <> b.outbox_id);

-- name: DeliveryDisagrees :many
-- A DELIVERED payment's instruction was DISPATCHED exactly once; a
-- RETURNED one's never, and its return is recorded with the reversal
-- that gave the money back. The attempts are counted while the
-- instruction's archive is kept (archived: the retention deletes its key
-- with its attempts); the return is in the money records for good.
SELECT p.payment_id, p.status,
       (SELECT count(*) FROM payment_outbox_attempts a WHERE a.outbox_id = b.outbox_id AND a.state = 'DISPATCHED')::int AS dispatched,
       EXISTS (SELECT 1 FROM payment_outbox_keys k WHERE k.instruction_id = b.payment_id AND k.outbox_id = b.outbox_id)::bool AS archived,
       coalesce(b.return_transaction_id IS NOT NULL
        AND EXISTS (SELECT 1 FROM account_transaction r WHERE r.transaction_id = b.return_transaction_id
                                                         AND r.reverses = b.debit_transaction_id), false)::bool AS returned
FROM payments p
JOIN payment_booking b ON b.payment_id = p.payment_id
WHERE p.status IN ('DELIVERED', 'RETURNED');

-- name: PaymentsWithoutTheirClaim :many
-- A payment is the one its tenant's id was claimed for (payment_keys):
-- so no two payments share a tenant's id.
SELECT p.payment_id, p.external_id, p.tenant_id, k.payment_id AS claimed_by
FROM payments p
LEFT JOIN payment_keys k ON k.external_id = p.external_id AND k.tenant_id = p.tenant_id
WHERE k.payment_id IS DISTINCT FROM p.payment_id;

-- name: InstructionsSent :many
-- When each payment on a rail with an execution date first had its
-- instruction sent to its rail and taken (a DISPATCHED attempt's claim):
-- the cut-off rule compares it with the rail's cut-off that day.
SELECT p.payment_id, p.rail::text AS rail, p.execution_date::date AS execution_date,
       max(a.claimed_at)::timestamptz AS sent_at
FROM payments p
JOIN payment_booking b ON b.payment_id = p.payment_id
JOIN payment_outbox_attempts a ON a.outbox_id = b.outbox_id AND a.state = 'DISPATCHED'
WHERE p.rail IS NOT NULL AND p.execution_date IS NOT NULL
GROUP BY p.payment_id, p.rail, p.execution_date;

-- name: ExecutedWithoutApprovals :many
-- Payments executed (their execution began, or they were debited)
-- without the approvals their requirement asks.
SELECT p.payment_id, p.status, r.approvals AS needed,
       (SELECT count(*) FROM payment_approvals a WHERE a.payment_id = p.payment_id AND a.decision = 'APPROVE')::int AS approved
FROM payment_approval_requirements r
JOIN payments p ON p.payment_id = r.payment_id
WHERE (p.status IN ('ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED', 'FAILED') OR p.accepted_at IS NOT NULL
       OR EXISTS (SELECT 1 FROM payment_booking b WHERE b.payment_id = p.payment_id))
  AND (SELECT count(*) FROM payment_approvals a WHERE a.payment_id = p.payment_id AND a.decision = 'APPROVE') < r.approvals
ORDER BY p.payment_id;
