package api_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"emi/internal/emi"
)

// Program changes that move risk go through the decision engine. Turning a
// program's overdraft on (or its AML check for cards off) is proposed by
// one administrator and applied only when a second, distinct one approves;
// the proposer cannot approve, nor can a user the proposer created (they
// count as one person), and a change to the program after the proposal
// voids it. Before, one administrator turned the overdraft on alone, at
// once.
func TestProgramRiskChangeTakesTwoAdministrators(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	a1 := staffCtx(t, env, "a1@programs.test", emi.RoleAdmin)
	a2 := staffCtx(t, env, "a2@programs.test", emi.RoleAdmin)
	read := func() emi.Program {
		t.Helper()
		list, err := env.App.Accounts.Programs(a1)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list {
			if p.Code == "account_eur" {
				return p
			}
		}
		t.Fatal("no account_eur")
		return emi.Program{}
	}
	cur := read()
	if cur.Overdraft {
		t.Fatal("the sandbox program has an overdraft already")
	}
	in := cur.Input()
	in.Overdraft = true
	got, err := env.App.Accounts.UpdateProgram(a1, "account_eur", in)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pending == nil || got.Overdraft || read().Overdraft {
		t.Fatalf("one administrator turned the overdraft on: %+v", got)
	}
	// A second proposal while one waits is refused.
	if _, err := env.App.Accounts.UpdateProgram(a2, "account_eur", in); !is(err, emi.ErrProgramStale) {
		t.Fatalf("second proposal: %v", err)
	}
	if _, err := env.App.Accounts.ApproveProgramChange(a1, "account_eur"); !is(err, emi.ErrFourEyes) {
		t.Fatalf("the proposer approves: %v", err)
	}
	// An administrator the proposer created is the same person (the create
	// itself took a second administrator).
	out, err := env.App.Staff.Create(a1, emi.StaffCreate{Email: "a3@programs.test", Name: "A3", Roles: []emi.Role{emi.RoleAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Change.Status == emi.StaffChangePending {
		if out, err = env.App.Staff.ApproveChange(a2, out.Change.ID); err != nil {
			t.Fatalf("approve the new admin: %v", err)
		}
	}
	a3 := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: out.Change.StaffID, StaffRoles: []string{string(emi.RoleAdmin)}})
	if _, err := env.App.Accounts.ApproveProgramChange(a3, "account_eur"); !is(err, emi.ErrFourEyes) {
		t.Fatalf("an admin the proposer created approves: %v", err)
	}
	// Two approvers at once: it is applied once.
	var applied atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := env.App.Accounts.ApproveProgramChange(a2, "account_eur"); err == nil {
				applied.Add(1)
			}
		}()
	}
	wg.Wait()
	if applied.Load() != 1 || !read().Overdraft {
		t.Fatalf("applied %d times, overdraft %v", applied.Load(), read().Overdraft)
	}
	var updates int
	_ = env.App.DB.Get(&updates, `SELECT count(*) FROM audit_log WHERE action = 'program.update' AND resource_token = 'account_eur'
		AND changes->>'approved_by' IS NOT NULL AND changes->>'proposed_by' IS NOT NULL`)
	if updates != 1 {
		t.Fatalf("audited approvals: %d", updates)
	}

	// A change after the proposal voids it.
	cur = read()
	in = cur.Input()
	in.AMLRequired = false
	if cur.AMLRequired {
		if _, err := env.App.Accounts.UpdateProgram(a1, "account_eur", in); err != nil {
			t.Fatal(err)
		}
		other := read().Input()
		other.Name = "EUR account, renamed"
		if _, err := env.App.Accounts.UpdateProgram(a1, "account_eur", other); err != nil {
			t.Fatal(err)
		}
		if _, err := env.App.Accounts.ApproveProgramChange(a2, "account_eur"); !is(err, emi.ErrProgramStale) {
			t.Fatalf("approval of a proposal the program moved past: %v", err)
		}
		if !read().AMLRequired {
			t.Fatal("a void proposal was applied")
		}
	}
	// A rejected proposal changes nothing and leaves nothing to approve;
	// rejecting it twice, or by someone who may not manage programs, fails.
	in = read().Input()
	in.Overdraft = false
	if _, err := env.App.Accounts.UpdateProgram(a1, "account_eur", in); err != nil {
		t.Fatal(err)
	}
	cur = read()
	in = cur.Input()
	in.AMLRequired = false
	if cur.AMLRequired {
		if got, err := env.App.Accounts.UpdateProgram(a1, "account_eur", in); err != nil || got.Pending == nil {
			t.Fatalf("proposal: %v %+v", err, got.Pending)
		}
		auditor := staffCtx(t, env, "aud@programs.test", emi.RoleAuditor)
		if err := env.App.Accounts.RejectProgramChange(auditor, "account_eur"); !is(err, emi.ErrForbidden) {
			t.Fatalf("reject by an auditor: %v", err)
		}
		if err := env.App.Accounts.RejectProgramChange(a2, "account_eur"); err != nil {
			t.Fatal(err)
		}
		if err := env.App.Accounts.RejectProgramChange(a2, "account_eur"); !is(err, emi.ErrProgramStale) {
			t.Fatalf("second reject: %v", err)
		}
		if _, err := env.App.Accounts.ApproveProgramChange(a2, "account_eur"); !is(err, emi.ErrProgramStale) {
			t.Fatalf("approval of a rejected proposal: %v", err)
		}
		if !read().AMLRequired {
			t.Fatal("a rejected proposal was applied")
		}
	}
	// A new program cannot start with an overdraft.
	create := read().Input()
	create.Code, create.Overdraft, create.BINPrefix = "new_overdraft", true, ""
	if _, err := env.App.Accounts.CreateProgram(a1, create); !is(err, emi.ErrProgramValidation) {
		t.Fatalf("create with an overdraft: %v", err)
	}
}
