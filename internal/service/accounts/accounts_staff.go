package accounts

import (
	"context"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// TerminationStore keeps staff termination requests awaiting a second
// staff member.
type TerminationStore interface {
	TerminationRequest(ctx context.Context, account string) (TerminationRequest, bool, error)
	InsertTerminationRequest(ctx context.Context, account, by, reason string) error
	DeleteTerminationRequest(ctx context.Context, account string) error
}

// Search finds accounts for customer service (emi.PermViewAccounts): q is
// a token, an IBAN, an account number (with or without sort code), or the
// owner's name or e-mail. sort, when given, orders the pages (program,
// status, created; the zero order is the newest first).
func (s *Accounts) Search(ctx context.Context, q string, page int, sort ...emi.SortOrder) ([]emi.Account, int64, error) {
	if err := kernel.Require(ctx, emi.PermViewAccounts); err != nil {
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
	if err := kernel.Require(ctx, emi.PermViewAccounts); err != nil {
		return nil, err
	}
	items, _, err := s.store.Accounts(ctx, emi.AccountFilter{User: user, Merchant: merchant, Page: 1, Limit: 200})
	return items, err
}

// AccountView is an account as customer service sees it.
type AccountView struct {
	emi.Account
	History  []emi.AccountStatusChange
	Virtuals []emi.Account
	// PendingTermination is set while a termination waits for a second
	// staff member.
	PendingTermination *TerminationRequest
}

// TerminationRequest is a staff termination awaiting approval.
type TerminationRequest struct {
	RequestedBy     string `db:"requested_by"`
	RequestedByName string `db:"requested_by_name"`
	Reason          string `db:"reason"`
}

// Get returns an account with its history and virtual accounts
// (emi.PermViewAccounts).
func (s *Accounts) Get(ctx context.Context, token string) (AccountView, error) {
	if err := kernel.Require(ctx, emi.PermViewAccounts); err != nil {
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
	t, found, err := s.terms.TerminationRequest(ctx, a.Token)
	if err != nil {
		return v, err
	}
	if found {
		v.PendingTermination = &t
	}
	return v, nil
}

// StaffSetStatus blocks or unblocks an account for customer service
// (emi.PermManageAccounts), with a mandatory reason.
func (s *Accounts) StaffSetStatus(ctx context.Context, token, status, reason string) (emi.Account, error) {
	if err := kernel.Require(ctx, emi.PermManageAccounts); err != nil {
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
// (emi.PermManageAccounts); a second staff member approves it.
func (s *Accounts) RequestTermination(ctx context.Context, token, reason string) error {
	if err := kernel.Require(ctx, emi.PermManageAccounts); err != nil {
		return err
	}
	reason, err := kernel.StaffReason(reason)
	if err != nil {
		return err
	}
	me := kernel.StaffOf(ctx).ActorID
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
		if _, found, err := s.terms.TerminationRequest(ctx, a.Token); err != nil {
			return err
		} else if found {
			return emi.ErrReviewClosed.WithDetail("a termination is already requested").WithPublic(
				"A termination of this account is already requested: it waits for a second staff member. Nothing was changed.")
		}
		if err := s.terms.InsertTerminationRequest(ctx, a.Token, me, reason); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "account.termination_requested", ResourceType: "account",
			ResourceToken: a.Token, PartnerID: a.PartnerID, Changes: map[string]any{"reason": reason}})
	})
}

// ApproveTermination terminates an account whose termination a colleague
// requested (emi.PermManageAccounts): a person distinct from the requester
// (Controls; emi.ErrFourEyes).
// reject=true withdraws the request instead.
func (s *Accounts) ApproveTermination(ctx context.Context, token string, reject bool) (emi.Account, error) {
	if err := kernel.Require(ctx, emi.PermManageAccounts); err != nil {
		return emi.Account{}, err
	}
	me := kernel.StaffOf(ctx).ActorID
	var out emi.Account
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := s.store.Account(ctx, "", token, true)
		if err != nil {
			return err
		}
		t, found, err := s.terms.TerminationRequest(ctx, a.Token)
		if err != nil {
			return err
		}
		by, reason := t.RequestedBy, t.Reason
		if !found {
			return emi.ErrReviewClosed.WithDetail("no termination requested").WithPublic(
				"No termination of this account is pending any more (it was approved or withdrawn meanwhile): nothing was changed.")
		}
		if reject {
			if err := s.terms.DeleteTerminationRequest(ctx, a.Token); err != nil {
				return err
			}
			out = a
			return s.audit.Record(ctx, emi.AuditEntry{Action: "account.termination_withdrawn", ResourceType: "account",
				ResourceToken: a.Token, PartnerID: a.PartnerID})
		}
		if err := s.controls.Approve(ctx, staff.ControlAccountTermination, by); err != nil {
			return err
		}
		if err := s.terms.DeleteTerminationRequest(ctx, a.Token); err != nil {
			return err
		}
		out, err = s.changeStatus(ctx, "", a.Token, emi.AccountTerminated, reason+" (approved by a second staff member)", me)
		return err
	})
	return out, err
}

// AuditTrail returns the audit rows of an account, newest first, for
// customer service (emi.PermViewAccounts).
func (s *Accounts) AuditTrail(ctx context.Context, token string) ([]emi.AuditEntry, error) {
	if err := kernel.Require(ctx, emi.PermViewAccounts); err != nil {
		return nil, err
	}
	return s.audit.Trail(ctx, emi.AuditFilter{ResourceType: "account", ResourceToken: token, Limit: 200})
}
