package onboarding

import (
	"context"
	"net/url"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// BulkReassign gives applications to a colleague (admins,
// emi.PermManageStaff), with a reason; to "" releases them.
func (r *Review) BulkReassign(ctx context.Context, tokens []string, to, reason string) (int, error) {
	if err := Reassign.Require(ctx); err != nil {
		return 0, err
	}
	reason = strings.TrimSpace(reason)
	if len(reason) < 3 {
		return 0, emi.ErrReviewValidation.Field("reason", "say why (3 characters or more)")
	}
	if len(tokens) == 0 || len(tokens) > 200 {
		return 0, emi.ErrReviewValidation.Field("applications", "choose 1 to 200 applications")
	}
	if to != "" {
		target, err := r.staff.StaffByID(ctx, to)
		if err != nil || target.Disabled || !Decide.AllowedForRoles(target.Roles) {
			return 0, emi.ErrReviewValidation.Field("to", "must be an active colleague who may decide applications")
		}
	}
	n := 0
	err := r.tx.InTx(ctx, func(ctx context.Context) error {
		now := r.now().UTC()
		for _, t := range tokens {
			a, err := r.store.Application(ctx, "", t, true)
			if err != nil {
				return err
			}
			if a.Status.Decided() {
				continue
			}
			if err := r.store.Assign(ctx, a.Token, to, now); err != nil {
				return err
			}
			action := "application.assign"
			if to == "" {
				action = "application.release"
			}
			if err := r.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "application", ResourceToken: a.Token,
				PartnerID: a.PartnerID, Changes: map[string]any{"from": a.Review.Assignee, "to": to, "reason": reason, "bulk": true}}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// SavedViewStore keeps staff users' saved queue views.
type SavedViewStore interface {
	SavedViews(ctx context.Context, staff string) ([]emi.SavedView, error)
	InsertSavedView(ctx context.Context, staff string, v emi.SavedView) error
	DeleteSavedView(ctx context.Context, staff, id string) error
}

// Views returns the caller's saved views (emi.PermViewApps).
func (r *Review) Views(ctx context.Context) ([]emi.SavedView, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	return r.views.SavedViews(ctx, kernel.StaffOf(ctx).ActorID)
}

// DeleteView deletes one of the caller's saved views.
func (r *Review) DeleteView(ctx context.Context, id string) error {
	if err := View.Require(ctx); err != nil {
		return err
	}
	return r.views.DeleteSavedView(ctx, kernel.StaffOf(ctx).ActorID, id)
}

// SaveView saves the caller's queue filter under a name (its URL query);
// saving a name again replaces it.
func (r *Review) SaveView(ctx context.Context, name, query string) (emi.SavedView, error) {
	if err := View.Require(ctx); err != nil {
		return emi.SavedView{}, err
	}
	name = strings.TrimSpace(name)
	var bad kernel.Problems
	if name == "" || len(name) > 100 {
		bad.Add("name", "give the view a name of 1 to 100 characters")
	}
	q, err := url.ParseQuery(strings.TrimPrefix(query, "?"))
	if err != nil || len(query) > 2000 {
		bad.Add("query", "is not a queue filter")
	}
	if len(bad) > 0 {
		return emi.SavedView{}, emi.ErrReviewValidation.WithFields(bad...)
	}
	v := emi.SavedView{ID: kernel.NewToken(), Name: name, Query: q.Encode()}
	if err := r.views.InsertSavedView(ctx, kernel.StaffOf(ctx).ActorID, v); err != nil {
		return v, err
	}
	return v, nil
}

// Metrics is what the review dashboard shows.
type Metrics struct {
	Counts           map[emi.ApplicationStatus]int64
	Ageing           []Bucket
	DecisionsPerDay  []DayCount
	MedianToDecision time.Duration
	SLABreaches      int64
	PerUnderwriter   []NamedCount
}

// Bucket is one bar of the ageing histogram.
type Bucket struct {
	Label string
	Count int64
}

// DayCount is the decisions of one day by outcome.
type DayCount struct {
	Day                               time.Time
	Approved, Rejected, InfoRequested int64
}

// NamedCount is a count per staff user.
type NamedCount struct {
	Name  string
	Count int64
}

// MetricsStore computes the dashboard's figures.
type MetricsStore interface {
	ReviewMetrics(ctx context.Context, now time.Time) (Metrics, error)
}

// Metrics returns the review dashboard's figures (emi.PermViewApps).
func (r *Review) Metrics(ctx context.Context) (Metrics, error) {
	if err := View.Require(ctx); err != nil {
		return Metrics{}, err
	}
	return r.metrics.ReviewMetrics(ctx, r.now().UTC())
}
