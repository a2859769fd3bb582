package accounts

import (
	"context"

	"emi/internal/emi"
	"emi/internal/service/staff"
)

// Capability is the answer for one action: allowed, or refused and why.
type Capability struct {
	Allowed bool
	Reason  string
}

// AccountCapabilities answers "what may this person do to this account,
// now, and if not, why?" for the signed-in staff member, by the rules
// StaffSetStatus, RequestTermination and the termination request's
// lifecycle apply. The back office shows the forms of the allowed actions
// and nothing else; the service refuses the others whatever is posted.
type AccountCapabilities struct {
	// Manages: the person's role changes accounts at all (their page
	// shows the account's actions, or why there are none).
	Manages bool
	// Final: nothing about the account may change any more.
	Final                              bool
	Block, Unblock, RequestTermination Capability
	// BalanceNotZero: a balance holds or owes money or has payments on
	// hold, so a termination is refused until it is paid out.
	BalanceNotZero bool
	// Termination is what the person may do with the pending termination
	// request (zero when none waits).
	Termination staff.RequestCapability
}

// The reasons of AccountCapabilities.
const (
	ReasonTerminated     = "The account is terminated: nothing about it can change any more."
	ReasonAlreadyBlocked = "The account is already blocked."
	ReasonNotBlocked     = "The account is not blocked."
	ReasonBalanceNotZero = "A balance is not zero: the termination will be refused until the money is paid out."
	ReasonTermination    = "A termination of this account already waits for a second person."
)

// Capabilities answers for the staff member of ctx and the account of v
// (as Get returns it).
func (s *Accounts) Capabilities(ctx context.Context, v AccountView) AccountCapabilities {
	p, _ := emi.PrincipalFrom(ctx)
	manage := p.Can(emi.PermManageAccounts)
	propose := p.Can(staff.PolicyOf(TerminationFlow.Control).Propose)
	out := AccountCapabilities{Manages: manage || propose, Final: v.Status == emi.AccountTerminated, Termination: v.TerminationCan}
	if !v.Virtual {
		for _, b := range v.Balances {
			if b.Posted != 0 || b.Held != 0 {
				out.BalanceNotZero = true
			}
		}
	}
	refuse := func(allowed bool, perm emi.Permission, reasons ...string) Capability {
		if !p.Can(perm) {
			return Capability{Reason: "Your role does not include " + string(perm) + "."}
		}
		if out.Final {
			return Capability{Reason: ReasonTerminated}
		}
		for _, r := range reasons {
			if r != "" {
				return Capability{Reason: r}
			}
		}
		return Capability{Allowed: allowed}
	}
	when := func(cond bool, reason string) string {
		if cond {
			return reason
		}
		return ""
	}
	out.Block = refuse(true, emi.PermManageAccounts, when(v.Status == emi.AccountBlocked, ReasonAlreadyBlocked))
	out.Unblock = refuse(true, emi.PermManageAccounts, when(v.Status != emi.AccountBlocked, ReasonNotBlocked))
	out.RequestTermination = refuse(true, staff.PolicyOf(TerminationFlow.Control).Propose,
		when(v.PendingTermination != nil, ReasonTermination), when(out.BalanceNotZero, ReasonBalanceNotZero))
	return out
}
