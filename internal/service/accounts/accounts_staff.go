package accounts

import (
	"context"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// Search finds accounts for customer service (emi.PermViewAccounts): q is
// a token, an IBAN, an account number (with or without sort code), or the
// owner's name or e-mail. sort, when given, orders the pages (program,
// status, created; the zero order is the newest first).
func (s *Accounts) Search(ctx context.Context, q string, page int, sort ...emi.SortOrder) ([]emi.Account, int64, error) {
	if err := View.Require(ctx); err != nil {
		return nil, 0, err
	}
	q = strings.TrimSpace(q)
	if len(q) > 200 {
		return nil, 0, emi.ErrReviewValidation.Field("q", "must be at most 200 characters")
	}
	f := emi.AccountFilter{Q: q, Page: max(page, 1), Limit: 50}
	if len(sort) > 0 {
		f.Sort = sort[0]
	}
	return s.store.Accounts(ctx, f)
}

// ForOwner lists the accounts of a user or a merchant (emi.PermViewAccounts).
func (s *Accounts) ForOwner(ctx context.Context, user, merchant string) ([]emi.Account, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	items, _, err := s.store.Accounts(ctx, emi.AccountFilter{User: user, Merchant: merchant, Page: 1, Limit: 200})
	return items, err
}

// WithBalances returns the accounts of tokens with their balances and
// identifiers (emi.PermViewAccounts), in one read: what a list of accounts
// shows of each, without the history, virtual accounts and requests of Get.
func (s *Accounts) WithBalances(ctx context.Context, tokens []string) (map[string]emi.Account, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	return s.store.AccountsWithBalances(ctx, tokens)
}

// AccountView is an account as customer service sees it.
type AccountView struct {
	emi.Account
	History  []emi.AccountStatusChange
	Virtuals []emi.Account
	// PendingTermination is set while a termination waits for a second
	// staff member, and TerminationCan says what the reader may do with it.
	PendingTermination *staff.Request
	TerminationCan     staff.RequestCapability
}

// TerminationFlow is an account's termination by staff: one person
// proposes it with a reason, a second, distinct one approves it
// (staff.ControlAccountTermination). The request binds to the account and
// the reason; a termination by other means voids it.
var TerminationFlow = staff.DeclareFlow(staff.Flow{
	Control:   staff.ControlAccountTermination,
	Asked:     "the termination of this account",
	Proposed:  "account.termination_requested",
	Rejected:  "account.termination_rejected",
	Withdrawn: "account.termination_withdrawn",
	Voided:    "account.termination_voided",
	// The codes the back office knew before the lifecycle.
	Codes: staff.RequestCodes{Pending: emi.ErrReviewClosed, Closed: emi.ErrReviewClosed},
	Href:  func(r staff.Request) string { return "/backoffice/accounts/" + r.ResourceToken },
})

func terminationSubject(account string) string { return staff.SubjectOf("account", account) }

// Get returns an account with its history and virtual accounts
// (emi.PermViewAccounts).
func (s *Accounts) Get(ctx context.Context, token string) (AccountView, error) {
	if err := View.Require(ctx); err != nil {
		return AccountView{}, err
	}
	a, err := s.store.Account(ctx, "", token, false)
	if err != nil {
		return AccountView{}, err
	}
	v := AccountView{Account: a}
	if v.History, err = s.store.StatusHistory(ctx, a.Token); err != nil {
		return v, err
	}
	if !a.Virtual {
		if v.Virtuals, err = s.store.VirtualsOf(ctx, a.Token); err != nil {
			return v, err
		}
	}
	t, found, err := s.controls.PendingRequest(ctx, terminationSubject(a.Token))
	if err != nil {
		return v, err
	}
	if found {
		v.PendingTermination, v.TerminationCan = &t, s.controls.RequestCapabilities(ctx, t)
	}
	return v, nil
}

// StaffSetStatus blocks or unblocks an account for customer service
// (emi.PermManageAccounts), with a mandatory reason.
func (s *Accounts) StaffSetStatus(ctx context.Context, token, status, reason string) (emi.Account, error) {
	if err := Manage.Require(ctx); err != nil {
		return emi.Account{}, err
	}
	reason, err := kernel.StaffReason(reason)
	if err != nil {
		return emi.Account{}, err
	}
	if status != emi.AccountActive && status != emi.AccountBlocked {
		return emi.Account{}, emi.ErrReviewValidation.Field("status", "must be active or blocked")
	}
	return s.changeStatus(ctx, "", token, status, reason, kernel.StaffOf(ctx).ActorID)
}

// RequestTermination asks for an account's termination
// (TerminationFlow); a second staff member approves it.
func (s *Accounts) RequestTermination(ctx context.Context, token, reason string) error {
	if err := staff.RequirePropose(ctx, TerminationFlow.Control); err != nil {
		return err
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := s.store.Account(ctx, "", token, true)
		if err != nil {
			return err
		}
		if a.Status == emi.AccountTerminated {
			return emi.ErrAccountInvalidTransition
		}
		if !a.Virtual {
			if err := s.checkEmpty(ctx, a); err != nil {
				return err
			}
		}
		_, err = s.controls.ProposeRequest(ctx, TerminationFlow, staff.Proposal{Subject: terminationSubject(a.Token),
			ResourceType: "account", ResourceToken: a.Token, PartnerID: a.PartnerID, Reason: reason})
		return err
	})
}

// ApproveTermination terminates an account whose termination a colleague
// requested (TerminationFlow: a person distinct from the requester,
// emi.ErrFourEyes). seen, when given, is the request the approver saw: a
// different one waiting now (withdrawn and proposed again meanwhile) is
// refused, never approved unseen.
func (s *Accounts) ApproveTermination(ctx context.Context, token string, seen ...string) (emi.Account, error) {
	if !kernel.ValidToken(token) {
		return emi.Account{}, emi.ErrAccountNotFound
	}
	var out emi.Account
	_, err := s.controls.ApproveRequest(ctx, TerminationFlow, terminationSubject(token), staff.Approval{ID: first(seen),
		Lock: func(ctx context.Context, _ staff.Request) (string, error) {
			_, err := s.store.Account(ctx, "", token, true)
			return "", err
		},
		Apply: func(ctx context.Context, r staff.Request) (map[string]any, error) {
			var err error
			out, err = s.changeStatus(ctx, "", token, emi.AccountTerminated, r.Reason+" (approved by a second staff member)",
				kernel.StaffOf(ctx).ActorID)
			return nil, err
		},
	})
	return out, err
}

// DeclineTermination ends a pending termination request without
// terminating: withdrawn by its proposer, rejected by anyone else who may
// approve it. The request is returned with its new status; seen as in
// ApproveTermination.
func (s *Accounts) DeclineTermination(ctx context.Context, token string, seen ...string) (staff.Request, error) {
	if !kernel.ValidToken(token) {
		return staff.Request{}, emi.ErrAccountNotFound
	}
	return s.controls.DeclineRequest(ctx, TerminationFlow, terminationSubject(token), staff.Decline{ID: first(seen), Lock: func(ctx context.Context, _ staff.Request) error {
		_, err := s.store.Account(ctx, "", token, true)
		return err
	}})
}

// AuditTrail returns the audit rows of an account, newest first, for
// customer service (emi.PermViewAccounts).
func (s *Accounts) AuditTrail(ctx context.Context, token string) ([]emi.AuditEntry, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	return s.audit.Trail(ctx, emi.AuditFilter{ResourceType: "account", ResourceToken: token, Limit: 200})
}

// first is the first of seen, or "".
func first(seen []string) string {
	if len(seen) > 0 {
		return seen[0]
	}
	return ""
}
