-- +goose Up
-- PAYMENT's paced lead from 2 s to 6 s (if still at the old default). In
-- 20,000-payment drains the embedded engine, on two shared cores, fell
-- behind by up to 4 s in stretches when CPU was stolen, and every second
-- of lag past the lead is a second off the rate; at 6 s none of the start
-- requests came later than slot − lead. The holds take rate × lead of the
-- exec worker's workflow-task slots (25/s × 6 s = 150 of 400), and an
-- execution workflow's task timeout now covers its hold, so the SDK does
-- not heartbeat a holding task.
UPDATE exec_rate_config SET paced_lead_ms = 6000
WHERE item_type = 'PAYMENT' AND paced_lead_ms = 2000;

-- +goose Down
UPDATE exec_rate_config SET paced_lead_ms = 2000
WHERE item_type = 'PAYMENT' AND paced_lead_ms = 6000;
