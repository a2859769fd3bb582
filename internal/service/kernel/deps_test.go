package kernel_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"emi/internal/postgres"
	"emi/internal/service/accounts"
	"emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/onboarding"
	"emi/internal/service/ops"
	"emi/internal/service/people"
	"emi/internal/service/staff"
	"emi/internal/service/transfers"
)

// panicOf runs build and returns what it panicked with ("" when it did not).
func panicOf(build func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	build()
	return ""
}

// A service built without a required dependency stops at construction,
// naming what is missing. With the old setters (SetLedger, SetHoldExpirer,
// SetSuspense...) a forgotten call compiled and failed at first use (a
// 500 on the first account termination): this test did not compile there.
// Optional fields (ChecksDeps.NamesMatch) and plain values (Settle,
// Sandbox, Own, Config) are not asked for.
func TestMissingDependencyIsCaughtAtConstruction(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func()
		want  string
	}{
		{"checks", func() { onboarding.NewChecks(onboarding.ChecksDeps{}) },
			"onboarding.NewChecks: missing ChecksDeps.Tx, Store, Screener, Registry, Media, Events, Audit, FalsePositives, Now"},
		{"onboarding", func() { onboarding.NewOnboarding(onboarding.OnboardingDeps{}) },
			"onboarding.NewOnboarding: missing OnboardingDeps.Tx, Store, Partners, Users, Docs, Sealer, Jobs, Audit, Validate, Checks, IBAN, Now"},
		{"review", func() { onboarding.NewReview(onboarding.ReviewDeps{}) },
			"onboarding.NewReview: missing ReviewDeps.Tx, Store, Staff, Controls, Checks, Events, Audit, Inbox, Views, Metrics, Now"},
		{"accounts", func() { accounts.NewAccounts(accounts.AccountsDeps{}) },
			"accounts.NewAccounts: missing AccountsDeps.Tx, Store, Ids, Controls, Events, Audit, Validate, Cards, Ledger, Statements, Now"},
		{"cards", func() { cards.NewCards(cards.CardsDeps{}) },
			"cards.NewCards: missing CardsDeps.Tx, Store, Accounts, AML, Users, Vault, SMS, Events, Audit, Validate, Names, Now"},
		{"transfers", func() { transfers.NewTransfers(transfers.TransfersDeps{}) },
			"transfers.NewTransfers: missing TransfersDeps.Tx, Store, Ledger, Controls, Events, Audit, Validate, Limits, Suspense, Monitor, Now"},
		{"maintenance", func() { ops.NewMaintenance(ops.MaintenanceDeps{}) },
			"ops.NewMaintenance: missing MaintenanceDeps.Jobs, Sigs, Idem, Staff, Holds, KYC, Monitoring, Now"},
	} {
		if got := panicOf(c.build); got != c.want {
			t.Errorf("%s: panicked with %q, want %q", c.name, got, c.want)
		}
	}
}

// One forgotten dependency among the others is named alone; a complete
// set builds. The hold expirer is the one the old wiring installed last
// (SetHoldExpirer), easy to forget.
func TestOneMissingDependencyIsNamed(t *testing.T) {
	db := (*postgres.DB)(nil)
	deps := ops.MaintenanceDeps{Jobs: postgres.NewJobs(db), Sigs: postgres.NewPartnerStore(db),
		Idem: &kernel.Idempotency{}, Staff: &staff.Staff{}, KYC: &people.KYC{}, Monitoring: &monitoring.Monitor{}, Now: time.Now}
	got := panicOf(func() { ops.NewMaintenance(deps) })
	if !strings.HasSuffix(got, "missing MaintenanceDeps.Holds") {
		t.Fatalf("without Holds: %q", got)
	}
	deps.Holds = &cards.Authorizations{}
	if got := panicOf(func() { ops.NewMaintenance(deps) }); got != "" {
		t.Fatalf("complete deps panicked: %q", got)
	}
}
