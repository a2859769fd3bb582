package emi

import "testing"

// The privileged set decides which staff changes need a second
// administrator: every role that can move money, decide, reveal card data
// or manage staff is privileged; only the read-only auditor is not. A new
// permission given to the auditor that is in the set makes this fail, so
// the rule is looked at again.
func TestPrivilegedRoles(t *testing.T) {
	want := map[Role]bool{RoleAdmin: true, RoleUnderwriter: true, RoleCompliance: true, RoleCustomerService: true, RoleAuditor: false}
	for _, r := range Roles() {
		if got := PrivilegedRole(r); got != want[r] {
			t.Errorf("PrivilegedRole(%s) = %v, want %v", r, got, want[r])
		}
	}
	for _, p := range PrivilegedPermissions() {
		if !Can([]Role{RoleAdmin, RoleUnderwriter, RoleCompliance, RoleCustomerService}, p) {
			t.Errorf("privileged permission %s is held by no role", p)
		}
	}
	if AnyPrivileged([]Role{RoleAuditor}) || !AnyPrivileged([]Role{RoleAuditor, RoleCompliance}) {
		t.Error("AnyPrivileged")
	}
}
