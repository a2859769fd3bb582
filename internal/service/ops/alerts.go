package ops

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/onboarding"
	"emi/internal/service/people"
	staffsvc "emi/internal/service/staff"
)

// AlertStore keeps the alert queue's claims and finds the applications
// with sanctions hits.
type AlertStore interface {
	AlertClaims(ctx context.Context) (map[string]emi.AlertClaim, error)
	// AlertClaim returns an alert's claim, locked (false when free).
	AlertClaim(ctx context.Context, kind, subject string) (emi.AlertClaim, bool, error)
	// ClaimAlert takes a free alert; false when someone holds it.
	ClaimAlert(ctx context.Context, kind, subject, staff string, at time.Time) (bool, error)
	AssignAlert(ctx context.Context, kind, subject, staff, by string, at time.Time) error
	ReleaseAlert(ctx context.Context, kind, subject string) error
	// ApplicationsWithHits returns undecided applications whose sanctions
	// check raised hits, oldest first.
	ApplicationsWithHits(ctx context.Context, limit int) ([]string, error)
	// CountApplicationsWithOpenHits counts, in one statement, the
	// applications Queue lists.
	CountApplicationsWithOpenHits(ctx context.Context) (int64, error)
}

// Alerts is the compliance alert queue: every screening hit that waits for
// compliance, whatever raised it: API checks, re-screenings after list or
// watch-list changes and identity changes (AML checks in match), and
// applications whose sanctions hits lack a final decision. The queue is
// derived from those rows, so it never disagrees with them; claims and
// assignments say who works on which alert.
type Alerts struct {
	monitor MonitoringAlerts
	tx      kernel.TxRunner
	store   AlertStore
	aml     people.AMLStore
	apps    onboarding.ReviewStore
	staff   onboarding.StaffDirectory
	inbox   *staffsvc.Inbox
	audit   *kernel.Auditor
	now     kernel.Clock
}

// AlertsDeps is what Alerts needs; NewAlerts checks that none is nil.
type AlertsDeps struct {
	// Monitor adds transaction monitoring's open alerts, for those who
	// may see them (monitoring.ViewAlerts).
	Monitor MonitoringAlerts
	Tx      kernel.TxRunner
	Store   AlertStore
	AML     people.AMLStore
	Apps    onboarding.ReviewStore
	Staff   onboarding.StaffDirectory
	Inbox   *staffsvc.Inbox
	Audit   *kernel.Auditor
	Now     kernel.Clock
}

// NewAlerts returns the alert queue.
func NewAlerts(d AlertsDeps) *Alerts {
	kernel.MustHave("Alerts", d)
	return &Alerts{monitor: d.Monitor, tx: d.Tx, store: d.Store, aml: d.AML, apps: d.Apps, staff: d.Staff, inbox: d.Inbox, audit: d.Audit, now: d.Now}
}

// alertLimit bounds each kind of the queue.
const alertLimit = 200

// Queue returns the open alerts, oldest first (emi.PermViewPeople).
func (s *Alerts) Queue(ctx context.Context) ([]emi.Alert, error) {
	if err := people.View.Require(ctx); err != nil {
		return nil, err
	}
	claims, err := s.store.AlertClaims(ctx)
	if err != nil {
		return nil, err
	}
	checks, err := s.aml.AMLChecks(ctx, emi.AMLFilter{Status: emi.AMLMatch, Limit: alertLimit})
	if err != nil {
		return nil, err
	}
	var out []emi.Alert
	for _, c := range checks {
		a := emi.Alert{Kind: emi.AlertAMLCheck, Subject: c.Token, Href: "/backoffice/aml/" + c.Token, PartnerID: c.PartnerID,
			Partner: c.PartnerName, Subjects: strings.TrimSpace(c.FirstName + " " + c.LastName), Source: c.Source,
			Hits: len(c.Hits), Open: c.OpenHits(), RaisedAt: c.CreatedAt}
		if c.MerchantToken != "" {
			a.Merchant, a.MerchantHref = c.MerchantName, "/backoffice/companies/"+c.MerchantApplication
		}
		for _, h := range c.Hits {
			if !h.Suppressed && h.Score > a.TopScore {
				a.TopScore = h.Score
			}
		}
		if cl, ok := claims[a.Kind+"|"+a.Subject]; ok {
			a.Claim = &cl
		}
		out = append(out, a)
	}
	tokens, err := s.store.ApplicationsWithHits(ctx, alertLimit)
	if err != nil {
		return nil, err
	}
	for _, t := range tokens {
		app, err := s.apps.Application(ctx, "", t, false)
		if err != nil {
			return nil, err
		}
		decided, err := s.apps.HitDecisions(ctx, t)
		if err != nil {
			return nil, err
		}
		open := onboarding.OpenHits(app, decided)
		if len(open) == 0 {
			continue
		}
		a := emi.Alert{Kind: emi.AlertApplication, Subject: t, Href: "/backoffice/applications/" + t, PartnerID: app.PartnerID,
			Partner: app.PartnerName, Source: "application", Open: len(open), RaisedAt: app.CreatedAt}
		var names []string
		for _, c := range app.Checks {
			if c.Name != emi.CheckSanctions {
				continue
			}
			a.RaisedAt = c.UpdatedAt
			for _, h := range onboarding.SanctionsHitsOf(c) {
				a.Hits++
				if sc, ok := h["score"].(float64); ok && sc > a.TopScore {
					a.TopScore = sc
				}
				if n := hitSubjectName(app, h); n != "" && !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		a.Subjects = strings.Join(names, ", ")
		if cl, ok := claims[a.Kind+"|"+a.Subject]; ok {
			a.Claim = &cl
		}
		out = append(out, a)
	}
	if monitoring.ViewAlerts.Allowed(ctx) {
		views, err := s.monitor.OpenAlerts(ctx, alertLimit)
		if err != nil {
			return nil, err
		}
		for _, v := range views {
			a := emi.Alert{Kind: emi.AlertMonitoring, Subject: v.Token, Href: "/backoffice/monitoring/" + v.Token,
				PartnerID: v.PartnerID, Partner: v.PartnerName, Subjects: v.SubjectName, Source: "monitoring",
				Hits: len(v.Hits), Open: len(v.Hits), RaisedAt: v.RaisedAt}
			if cl, ok := claims[a.Kind+"|"+a.Subject]; ok {
				a.Claim = &cl
			}
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RaisedAt.Before(out[j].RaisedAt) })
	return out, nil
}

// MonitoringAlerts is what the queue needs of transaction monitoring
// (monitoring.Monitor).
type MonitoringAlerts interface {
	OpenAlerts(ctx context.Context, limit int) ([]monitoring.AlertView, error)
	CountOpen(ctx context.Context) (int64, error)
}

// Count is the number of open alerts, for the navigation: two counting
// statements, not the queue (which reads each application).
func (s *Alerts) Count(ctx context.Context) (int, error) {
	if err := people.View.Require(ctx); err != nil {
		return 0, err
	}
	checks, err := s.aml.CountAMLChecks(ctx, emi.AMLMatch)
	if err != nil {
		return 0, err
	}
	apps, err := s.store.CountApplicationsWithOpenHits(ctx)
	if err != nil {
		return 0, err
	}
	var watched int64
	if monitoring.ViewAlerts.Allowed(ctx) {
		if watched, err = s.monitor.CountOpen(ctx); err != nil {
			return 0, err
		}
	}
	return int(checks + apps + watched), nil
}

func validAlertKind(kind string) bool {
	return kind == emi.AlertAMLCheck || kind == emi.AlertApplication || kind == emi.AlertMonitoring
}

// Claim takes a free alert for the caller (emi.PermReviewAML); refused
// (emi.ErrReviewClosed) while a colleague holds it.
func (s *Alerts) Claim(ctx context.Context, kind, subject string) error {
	if err := WorkAlerts.Require(ctx); err != nil {
		return err
	}
	if !validAlertKind(kind) || !kernel.ValidToken(subject) {
		return emi.ErrReviewValidation.Field("alert", "is not an alert")
	}
	me := kernel.StaffOf(ctx).ActorID
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		ok, err := s.store.ClaimAlert(ctx, kind, subject, me, s.now().UTC())
		if err != nil {
			return err
		}
		if !ok {
			cl, _, err := s.store.AlertClaim(ctx, kind, subject)
			if err != nil {
				return err
			}
			if cl.StaffID == me {
				return nil
			}
			return emi.ErrReviewClosed.WithDetail("held by %s", cl.StaffID)
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "alert.claim", ResourceType: kind, ResourceToken: subject})
	})
}

// Release gives an alert back (its holder, or an admin).
func (s *Alerts) Release(ctx context.Context, kind, subject string) error {
	if err := ReleaseAlerts.Require(ctx); err != nil {
		return err
	}
	if !validAlertKind(kind) || !kernel.ValidToken(subject) {
		return emi.ErrReviewValidation.Field("alert", "is not an alert")
	}
	me := kernel.StaffOf(ctx)
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		cl, ok, err := s.store.AlertClaim(ctx, kind, subject)
		if err != nil || !ok {
			return err
		}
		if !mayRelease(me, cl) {
			return emi.ErrForbidden.WithDetail("only the holder or an admin releases")
		}
		if err := s.store.ReleaseAlert(ctx, kind, subject); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "alert.release", ResourceType: kind, ResourceToken: subject,
			Changes: map[string]any{"from": cl.StaffID}})
	})
}

// Assign gives an alert to a compliance colleague, with a reason; the
// colleague finds it in their inbox.
func (s *Alerts) Assign(ctx context.Context, kind, subject, to, reason string) error {
	if err := WorkAlerts.Require(ctx); err != nil {
		return err
	}
	reason = strings.TrimSpace(reason)
	var bad kernel.Problems
	if !validAlertKind(kind) || !kernel.ValidToken(subject) {
		bad.Add("alert", "is not an alert")
	}
	if len(reason) < 3 || len(reason) > 500 {
		bad.Add("reason", "say why you assign it (3 to 500 characters)")
	}
	target, err := s.staff.StaffByID(ctx, to)
	if err != nil || target.Disabled || !WorkAlerts.AllowedForRoles(target.Roles) {
		bad.Add("to", "must be an active colleague in compliance")
	}
	if len(bad) > 0 {
		return emi.ErrReviewValidation.WithFields(bad...)
	}
	href := "/backoffice/aml/" + subject
	if kind == emi.AlertApplication {
		href = "/backoffice/applications/" + subject
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		prev, _, err := s.store.AlertClaim(ctx, kind, subject)
		if err != nil {
			return err
		}
		if err := s.store.AssignAlert(ctx, kind, subject, target.ID, kernel.StaffOf(ctx).ActorID, s.now().UTC()); err != nil {
			return err
		}
		if err := s.inbox.Notify(ctx, target.ID, "assignment", href, fmt.Sprintf("Alert assigned to you: %s", reason)); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "alert.assign", ResourceType: kind, ResourceToken: subject,
			Changes: map[string]any{"from": prev.StaffID, "to": target.ID, "reason": reason}})
	})
}

// Assignees returns the active colleagues an alert may be assigned to.
func (s *Alerts) Assignees(ctx context.Context) ([]emi.StaffUser, error) {
	if err := WorkAlerts.Require(ctx); err != nil {
		return nil, err
	}
	return onboarding.ActiveStaffWith(ctx, s.staff, emi.PermReviewAML)
}

// hitSubjectName is the name of the person or company an application's hit
// is about, as the partner submitted it.
func hitSubjectName(a emi.Application, h map[string]any) string {
	if member, _ := h["member"].(string); member != "" {
		for _, m := range a.Members {
			if m.Token == member {
				return m.DisplayName()
			}
		}
	}
	if a.Company != nil {
		return a.Company.LegalName
	}
	return ""
}
