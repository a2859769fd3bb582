package servicetest

import (
	"testing"

	"emi/internal/service/accounts"
	"emi/internal/service/monitoring"
	"emi/internal/service/onboarding"
	"emi/internal/service/staff"
	"emi/internal/service/transfers"
)

// TestEveryTwoPersonFlowIsDeclared: the lapse job finds a request's flow
// (its words, its page) by its control, so every flow on the lifecycle is
// declared under its own control.
func TestEveryTwoPersonFlowIsDeclared(t *testing.T) {
	for _, f := range []staff.Flow{accounts.TerminationFlow, accounts.ProgramChangeFlow, transfers.ReversalFlow,
		transfers.AdjustmentFlow, transfers.AssignmentFlow, staff.StaffChangeFlow, onboarding.HitFlow, monitoring.RuleChangeFlow} {
		got, ok := staff.DeclaredFlow(f.Control)
		if !ok || got.Asked != f.Asked || got.Proposed != f.Proposed {
			t.Errorf("%s: declared %v (%q), want the flow asking %q", f.Control, ok, got.Asked, f.Asked)
		}
	}
	if f, ok := staff.DeclaredFlow(staff.ControlStaffPrivilegeRemoval); !ok || f.Asked != staff.StaffChangeFlow.Asked {
		t.Errorf("the removal of privilege has no staff change flow: %v %q", ok, f.Asked)
	}
}
