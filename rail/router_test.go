package rail_test

import (
	"errors"
	"testing"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

func TestRouter(t *testing.T) {
	t.Parallel()
	sim, base := startSim(t, railsim.Behaviour{})
	jsonRail, pacsRail := railKinds[0].build(t, base, 0), railKinds[1].build(t, base, 0)
	router, err := rail.NewRouter(jsonRail, pacsRail)
	if err != nil {
		t.Fatal(err)
	}
	if got := router.Types(); len(got) != 2 || got[0] != rail.RailPacs008 || got[1] != rail.RailSEPAJSON {
		t.Fatalf("types %v", got)
	}
	for i, kind := range railKinds {
		m := message(kind, "pay-"+kind.name, int64(i+1))
		if err := router.Validate(m); err != nil {
			t.Fatalf("%s: %v", kind.name, err)
		}
		if got := router.Send(t.Context(), m); got.Outcome != outbox.Delivered {
			t.Fatalf("%s: %+v", kind.name, got)
		}
		if got := router.Inquire(t.Context(), m); got.Outcome != outbox.Delivered {
			t.Fatalf("%s inquiry: %+v", kind.name, got)
		}
	}
	if l := sim.Ledger(); l.Unique != 2 {
		t.Fatalf("ledger %+v", l)
	}

	// The pacs.008 rules follow the rail type: the JSON rail does not need
	// the debtor's BIC, the pacs.008 rail does.
	in := rail.GoodInstruction()
	in.Debtor.BIC = ""
	if err := router.Validate(rail.MessageFor(in, rail.RailSEPAJSON)); err != nil {
		t.Fatalf("json without debtor BIC: %v", err)
	}
	var ve *rail.ValidationError
	if err := router.Validate(rail.MessageFor(in, rail.RailPacs008)); !errors.As(err, &ve) || !ve.Has("debtor.bic") {
		t.Fatalf("pacs.008 without debtor BIC: %v", err)
	}

	unknown := rail.MessageFor(rail.GoodInstruction(), "SWIFT_MT103")
	if err := router.Validate(unknown); !errors.As(err, &ve) || !ve.Has("railType") {
		t.Fatalf("unknown rail type: %v", err)
	}
	if got := router.Send(t.Context(), unknown); got.Outcome != outbox.Terminal || got.Code != rail.CodeUnknownRailType {
		t.Fatalf("send to an unknown rail type: %+v", got)
	}
	if got := router.Inquire(t.Context(), unknown); got.Outcome != outbox.Unknown {
		t.Fatalf("inquiry to an unknown rail type: %+v", got)
	}
}

func TestNewRouterRefusesTwoRailsOfOneType(t *testing.T) {
	t.Parallel()
	a := railKinds[0].build(t, "http://127.0.0.1:1", 0)
	b := railKinds[0].build(t, "http://127.0.0.1:2", 0)
	if _, err := rail.NewRouter(a, b); err == nil {
		t.Fatal("accepted")
	}
}
