-- FX rates (set by an operator) and the contracts payments book at them
-- (package ledger/fx). Amounts as in the accounts' migration; rates
-- numeric(28,12).

-- +goose Up
-- 1 base = rate quote.
CREATE TABLE fx_rate (
    base        char(3)       NOT NULL CHECK (base ~ '^[A-Z]{3}$'),
    quote       char(3)       NOT NULL CHECK (quote ~ '^[A-Z]{3}$'),
    rate        numeric(28,12) NOT NULL CHECK (rate > 0),
    updated_at  timestamptz   NOT NULL DEFAULT now(),
    set_by      text          NOT NULL,
    -- false: the desk publishes the rate (quotes are priced with it) but
    -- deals at it no more: a contract is refused (FX_UNAVAILABLE).
    dealable    boolean       NOT NULL DEFAULT true,
    PRIMARY KEY (base, quote),
    CHECK (base <> quote)
);

CREATE TABLE fx_contract (
    contract_id      uuid          PRIMARY KEY,
    -- '<processId>:BookFx': one contract per step, however often delivered.
    reference        text          NOT NULL CONSTRAINT fx_contract_reference_key UNIQUE,
    account_id       text          NOT NULL,
    debit_currency   char(3)       NOT NULL,
    debit_amount     numeric(24,4) NOT NULL CONSTRAINT fx_contract_debit_positive CHECK (debit_amount > 0),
    credit_currency  char(3)       NOT NULL,
    credit_amount    numeric(24,4) NOT NULL CONSTRAINT fx_contract_credit_positive CHECK (credit_amount > 0),
    -- The rate as quoted: 1 rate_base = rate rate_quote, where the pair is
    -- (debit, credit) or, for an inverse quote, (credit, debit).
    rate             numeric(28,12) NOT NULL CHECK (rate > 0),
    rate_base        char(3)       NOT NULL,
    rate_quote       char(3)       NOT NULL,
    value_date       date          NOT NULL,
    status           text          NOT NULL CHECK (status IN ('BOOKED', 'UNWOUND')),
    unwind_reason    text,
    unwound_at       timestamptz,
    created_at       timestamptz   NOT NULL DEFAULT now(),
    CHECK (debit_currency <> credit_currency),
    CONSTRAINT fx_contract_unwind_record CHECK ((status = 'UNWOUND') = (unwound_at IS NOT NULL AND unwind_reason IS NOT NULL))
);

CREATE INDEX fx_contract_account_idx ON fx_contract (account_id, created_at);

-- +goose Down
DROP TABLE fx_contract;
DROP TABLE fx_rate;
