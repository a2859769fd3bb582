package app

import (
	"context"

	"emi/internal/emi"
	"emi/internal/service/people"
)

// UpdateSanctionsForStaff is the back office's "Update now": it runs
// UpdateSanctions for a staff user with emi.PermManageSanctions (admins;
// emi.ErrForbidden otherwise) and writes the
// request and its outcome to the audit log. A failed download returns
// emi.ErrScreeningUpdate (the cause is logged and kept in the list-update
// log); the loaded lists stay in use.
func (a *App) UpdateSanctionsForStaff(ctx context.Context) error {
	if err := people.UpdateSanctions.Require(ctx); err != nil {
		return err
	}
	err := a.UpdateSanctions(ctx)
	entry := emi.AuditEntry{Action: "sanctions.update", ResourceType: "sanctions_lists", Outcome: emi.OutcomeSuccess}
	if ix := a.Screener.Current(); ix != nil {
		entry.ResourceToken = ix.Version()
	}
	if err != nil {
		entry.Outcome = emi.OutcomeFailure
		entry.Changes = map[string]any{"error": err.Error()}
	}
	if aerr := a.Audit.Record(context.WithoutCancel(ctx), entry); aerr != nil {
		return aerr
	}
	if err != nil {
		return emi.ErrScreeningUpdate.Wrap(err)
	}
	return nil
}
