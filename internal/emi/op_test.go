package emi

import (
	"context"
	"errors"
	"testing"
)

func TestOpAllowsAnyOfItsPermissionsAndSaysWhatItTakes(t *testing.T) {
	op := NewOp("applications.oversee", PermDecideApps, PermManageStaff)
	for _, c := range []struct {
		who  Principal
		want bool
	}{
		{Principal{Type: ActorStaff, StaffRoles: []string{string(RoleUnderwriter)}}, true},
		{Principal{Type: ActorStaff, StaffRoles: []string{string(RoleAdmin)}}, true},
		{Principal{Type: ActorStaff, StaffRoles: []string{string(RoleCompliance)}}, false},
		{Principal{Type: ActorStaff}, false},
		{Principal{Type: ActorPartnerKey, PartnerID: "p"}, false},
		{SystemPrincipal("worker"), true},
	} {
		if got := op.AllowedFor(c.who); got != c.want {
			t.Errorf("%v: allowed %v, want %v", c.who, got, c.want)
		}
		ctx := WithPrincipal(context.Background(), c.who)
		err := op.Require(ctx)
		if (err == nil) != c.want || op.Allowed(ctx) != c.want {
			t.Errorf("%v: Require %v / Allowed %v, want allowed %v", c.who, err, op.Allowed(ctx), c.want)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrForbidden) {
				t.Fatalf("refusal %v is not ErrForbidden", err)
			}
			if want := "Your roles do not allow this: it takes applications.decide or staff.manage."; e.Public != want {
				t.Errorf("refusal says %q, want %q", e.Public, want)
			}
		}
	}
	if !op.AllowedForRoles([]Role{RoleAdmin}) || op.AllowedForRoles([]Role{RoleAuditor}) {
		t.Error("AllowedForRoles does not follow the role table")
	}
	if (Op{}).AllowedFor(SystemPrincipal("x")) {
		t.Error("the zero Op allows someone")
	}
	if err := (Op{}).Require(context.Background()); err == nil {
		t.Error("no principal passed Require")
	}
}

func TestNewOpRefusesAnOperationNobodyMayDo(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewOp without permissions did not panic")
		}
	}()
	NewOp("nothing")
}
