package onboarding

import (
	"context"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// EditCompany lets compliance correct an application's company data
// (emi.PermReviewAML). The fields sent change; the audit row holds the
// values before and after; the checks run again.
func (o *Onboarding) EditCompany(ctx context.Context, token string, in emi.CompanyFields, present map[string]bool) (emi.Application, error) {
	if err := Correct.Require(ctx); err != nil {
		return emi.Application{}, err
	}
	return kernel.InTxRead(ctx, o.tx, func(ctx context.Context) error {
		a, err := o.store.Application(ctx, "", token, true)
		if err != nil {
			return err
		}
		if a.Status.Decided() {
			return emi.ErrApplicationClosed
		}
		before := emi.CompanyFields{}
		if a.Company != nil {
			before = *a.Company
		}
		after := before
		applyPatch(&after, in, present)
		var bad kernel.Problems
		if err := o.checkCompany(&bad, "", after, a.Products, nil); err != nil {
			return err
		}
		if len(bad) > 0 {
			return emi.ErrReviewValidation.WithFields(bad...)
		}
		if err := o.store.UpsertCompany(ctx, a.PartnerID, a.Token, after); err != nil {
			return err
		}
		return o.changed(ctx, a, "company.staff_edit", map[string]any{"before": changedValues(before, after, present, true),
			"after": changedValues(before, after, present, false)})
	}, func(ctx context.Context) (emi.Application, error) {
		return o.store.Application(ctx, "", token, false)
	})
}

// EditMember lets compliance correct a member's data or suspend it
// (status inactive) (emi.PermReviewAML), audited with before and after.
func (o *Onboarding) EditMember(ctx context.Context, token, member string, patch emi.MemberPatch) (emi.Member, error) {
	if err := Correct.Require(ctx); err != nil {
		return emi.Member{}, err
	}
	var out emi.Member
	err := o.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := o.store.Application(ctx, "", token, true)
		if err != nil {
			return err
		}
		if a.Status.Decided() {
			return emi.ErrApplicationClosed
		}
		m, err := o.store.Member(ctx, a.Token, member)
		if err != nil {
			return err
		}
		before := m
		var bad kernel.Problems
		if err := o.patchMember(&bad, &m, patch); err != nil {
			return err
		}
		// A person's names stay set (they are what screening compares);
		// the partner's validator configuration binds the partner's own
		// edits, not compliance's corrections.
		checkMemberNotCleared(&bad, m, patch.Present, nil)
		if len(bad) > 0 {
			return emi.ErrReviewValidation.WithFields(kernel.Dedupe(bad)...)
		}
		m.UpdatedAt = o.now().UTC()
		if err := o.store.UpdateMember(ctx, m); err != nil {
			return err
		}
		out = m
		b := changedValues(before.MemberFields, m.MemberFields, patch.Present, true)
		af := changedValues(before.MemberFields, m.MemberFields, patch.Present, false)
		if patch.Present["status"] {
			b["status"], af["status"] = before.Status, m.Status
		}
		return o.changed(ctx, a, "member.staff_edit", map[string]any{"member": m.Token, "before": b, "after": af})
	})
	return out, err
}

// patchMember applies a member patch and collects what is wrong with the
// result: the status, the field rules and the ownership rule. The one rule
// for both edits: the partner's company_member_update (UpdateMember, whose
// problems answer 11001 with the partner API's own extra checks) and
// compliance's correction in the back office (EditMember, whose problems
// answer the back office's review validation error). Each caller maps the
// problems to its surface's code; err is an error other than a rule's.
func (o *Onboarding) patchMember(bad *kernel.Problems, m *emi.Member, patch emi.MemberPatch) error {
	applyPatch(&m.MemberFields, patch.Fields, patch.Present)
	if patch.Present["status"] {
		if patch.Status != "active" && patch.Status != "inactive" {
			bad.Add("status", "must be one of: active, inactive")
		}
		m.Status = patch.Status
	}
	if err := bad.AddErr("", o.validate.Struct(m.MemberFields, emi.ErrValidation)); err != nil {
		return err
	}
	checkOwnership(bad, "", m.Type, m.MemberFields)
	return nil
}

// changedValues returns the values (before or after) of the present fields
// that changed, by JSON name.
func changedValues[T any](before, after T, present map[string]bool, old bool) map[string]any {
	out := map[string]any{}
	bm, am := toMap(before), toMap(after)
	for k := range present {
		if bv, av := bm[k], am[k]; !equalJSON(bv, av) {
			if old {
				out[k] = bv
			} else {
				out[k] = av
			}
		}
	}
	return out
}
