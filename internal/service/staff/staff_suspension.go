package staff

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"emi/internal/emi"
)

// The suspension is the one-step stop for an incident: an administrator who
// believes a colleague's account is being misused ends its sessions and
// stops its sign-in at once, without waiting for a second administrator.
// Because one person takes it alone it is held three ways:
//
//   - it never leaves fewer than MinActiveAdministrators administrators
//     who can act (enabled and not suspended), counted with every
//     administrator's row locked, so two suspensions racing cannot both
//     pass;
//   - it lapses emi.SuspensionTTL after it was taken unless a second,
//     distinct administrator confirms it (ControlStaffSuspension), and the
//     same administrator cannot take it again after it lapsed (another
//     must);
//   - every other administrator hears of it at once (inbox), and the
//     audit log keeps it; the suspender counts as one person with the
//     suspended user for StaffLinkWindow (Controls).
//
// Any administrator but the suspended user lifts it, in one step: lifting
// gives back only the access the user had.

// MinActiveAdministrators is the fewest administrators a suspension may
// leave able to act: two, so that every two-person control can still be
// decided.
const MinActiveAdministrators = 2

// Suspend suspends a staff user for an incident: their sessions end and
// they cannot sign in while it is in force. Needs emi.PermManageStaff (else
// emi.ErrForbidden); not for oneself. reason (3 to 1,000 characters, else
// emi.ErrStaffValidation) is kept and shown to the other administrators.
// Returns emi.ErrLastAdministrators when fewer than MinActiveAdministrators
// would be left, emi.ErrStaffNotFound, and nothing changes then. Suspending
// a user already suspended, or disabled, changes nothing.
func (s *Staff) Suspend(ctx context.Context, staffID, reason string) error {
	const action = "staff.suspend"
	if err := s.manageOther(ctx, action, staffID); err != nil {
		return err
	}
	reason = strings.TrimSpace(reason)
	if n := len([]rune(reason)); n < 3 || n > 1000 {
		return emi.ErrStaffValidation.Field("reason", "must be 3 to 1000 characters: say what happened")
	}
	me, _ := emi.PrincipalFrom(ctx)
	refused := ""
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		// Every administrator's row first (id order), then the user's:
		// two suspensions at once queue here, and the second counts
		// after the first.
		admins, err := s.store.AdministratorsForUpdate(ctx)
		if err != nil {
			return err
		}
		u, err := s.store.StaffForUpdate(ctx, staffID)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		if u.DisabledAt != nil || suspendedAt(u.StaffUser, now) {
			return nil
		}
		if u.SuspendedAt != nil && u.SuspendedBy == me.ActorID && u.SuspensionConfirmedBy == "" {
			// Their own suspension lapsed unconfirmed: suspending again
			// every day would make it a one-person stop with no end.
			refused = "own suspension lapsed unconfirmed"
			return emi.ErrFourEyes.WithDetail("%s suspended %s before and nobody confirmed it", me.ActorID, staffID).
				WithPublic("Your suspension of this user lapsed without a second administrator's confirmation: another administrator must suspend them again. Nothing was changed.")
		}
		left := 0
		for _, a := range admins {
			if a.ID != staffID && a.DisabledAt == nil && !suspendedAt(a.StaffUser, now) {
				left++
			}
		}
		if u.Has(emi.RoleAdmin) && left < MinActiveAdministrators {
			refused = "would leave fewer than two active administrators"
			return emi.ErrLastAdministrators.WithDetail("%d active administrators would be left", left)
		}
		if err := s.store.SetStaffSuspension(ctx, staffID, &now, me.ActorID, reason); err != nil {
			return err
		}
		if err := s.store.RevokeStaffSessions(ctx, staffID, now); err != nil {
			return err
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "staff_user", ResourceToken: staffID,
			Changes: map[string]any{"email": u.Email, "reason": reason, "lapses_at": now.Add(emi.SuspensionTTL),
				"sessions_revoked": true}}); err != nil {
			return err
		}
		body := fmt.Sprintf("%s was suspended: %s. It lapses at %s unless a second administrator confirms it.",
			u.Name, reason, now.Add(emi.SuspensionTTL).Format("2006-01-02 15:04 MST"))
		for _, a := range admins {
			if a.ID == staffID || a.DisabledAt != nil {
				continue
			}
			if err := s.inbox.Notify(ctx, a.ID, "suspension", "/backoffice/staff/"+staffID, body); err != nil {
				return err
			}
		}
		return nil
	})
	if refused != "" {
		s.deny(ctx, action, staffID, refused) // outside the rolled-back transaction
	}
	return err
}

// ConfirmSuspension is the second administrator's confirmation of a
// suspension in force: it then lasts until lifted. Needs
// emi.PermManageStaff, and a person distinct (Controls) from the suspender
// and from the suspended user (emi.ErrForbidden, emi.ErrFourEyes). Returns
// emi.ErrStaffNotSuspended when no unconfirmed suspension is in force
// (lifted, lapsed or already confirmed), and emi.ErrStaffNotFound.
func (s *Staff) ConfirmSuspension(ctx context.Context, staffID string) error {
	const action = "staff.suspension_confirm"
	if err := s.authorize(ctx, emi.PermManageStaff, "", action, staffID); err != nil {
		return err
	}
	me, _ := emi.PrincipalFrom(ctx)
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		u, err := s.store.StaffForUpdate(ctx, staffID)
		if err != nil {
			return err
		}
		if !suspendedAt(u.StaffUser, s.now()) || u.SuspensionConfirmedBy != "" {
			return emi.ErrStaffNotSuspended
		}
		if err := s.controls.Approve(ctx, ControlStaffSuspension, u.SuspendedBy, u.ID); err != nil {
			return err
		}
		if err := s.store.ConfirmStaffSuspension(ctx, staffID, me.ActorID); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "staff_user", ResourceToken: staffID,
			Changes: map[string]any{"suspended_by": u.SuspendedBy, "suspended_at": u.SuspendedAt}})
	})
	if errors.Is(err, emi.ErrFourEyes) {
		s.deny(ctx, action, staffID, err.Error())
	}
	return err
}

// LiftSuspension ends a suspension (in force or lapsed): the user signs in
// again as before. Needs emi.PermManageStaff; not for oneself
// (emi.ErrForbidden). Returns emi.ErrStaffNotSuspended when none is
// recorded, and emi.ErrStaffNotFound.
func (s *Staff) LiftSuspension(ctx context.Context, staffID string) error {
	const action = "staff.suspension_lift"
	if err := s.manageOther(ctx, action, staffID); err != nil {
		return err
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		u, err := s.store.StaffForUpdate(ctx, staffID)
		if err != nil {
			return err
		}
		if u.SuspendedAt == nil {
			return emi.ErrStaffNotSuspended
		}
		if err := s.store.SetStaffSuspension(ctx, staffID, nil, "", ""); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "staff_user", ResourceToken: staffID,
			Changes: map[string]any{"suspended_by": u.SuspendedBy, "suspended_at": u.SuspendedAt,
				"confirmed_by": u.SuspensionConfirmedBy, "in_force": suspendedAt(u.StaffUser, s.now())}})
	})
}
