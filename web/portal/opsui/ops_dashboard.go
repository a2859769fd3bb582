package opsui

import (
	"net/http"
	"strconv"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/onboarding"
	"emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/internal/service/staff"
	"emi/views/components"
	"emi/views/opsview"
	"emi/web/portal/staffui"
)

// The dashboard: the figures of every area the role may see.

// page (GET /) shows the figures the role may see.
func (p *Dashboard) page(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	pr, _ := emi.PrincipalFrom(ctx)
	var tiles []components.Tile
	if partners.View.AllowedFor(pr) {
		n, err := p.partners.Count(ctx)
		if err != nil {
			p.frame.ServerError(w, r, err)
			return
		}
		tiles = append(tiles, components.Tile{Label: "Partners", Value: strconv.FormatInt(n, 10), Href: "/backoffice/partners"})
	}
	if staff.ViewStaff.AllowedFor(pr) {
		list, err := p.staff.List(ctx)
		if err != nil {
			p.frame.ServerError(w, r, err)
			return
		}
		tiles = append(tiles, components.Tile{Label: "Staff users", Value: strconv.Itoa(len(list)), Href: "/backoffice/staff"})
	}
	if people.View.AllowedFor(pr) && p.aml != nil && p.kyc != nil {
		aml, err := p.aml.QueueSize(ctx)
		if err != nil {
			p.frame.ServerError(w, r, err)
			return
		}
		kyc, err := p.kyc.QueueSize(ctx)
		if err != nil {
			p.frame.ServerError(w, r, err)
			return
		}
		tiles = append(tiles,
			components.Tile{Label: "AML checks to review", Value: strconv.FormatInt(aml, 10), Href: "/backoffice/aml"},
			components.Tile{Label: "KYC sessions to review", Value: strconv.FormatInt(kyc, 10), Href: "/backoffice/kyc"})
	}
	if onboarding.View.AllowedFor(pr) && p.onboarding != nil {
		for _, st := range []struct {
			status emi.ApplicationStatus
			label  string
		}{{emi.AppChecking, "Applications checking"}, {emi.AppInReview, "Applications in review"}} {
			n, err := p.onboarding.CountByStatus(ctx, st.status)
			if err != nil {
				p.frame.ServerError(w, r, err)
				return
			}
			tiles = append(tiles, components.Tile{Label: st.label, Value: strconv.FormatInt(n, 10),
				Href: "/backoffice/applications?status=" + string(st.status)})
		}
		if p.review != nil {
			m, err := p.review.Metrics(ctx)
			if err != nil {
				p.frame.ServerError(w, r, err)
				return
			}
			tiles = append(tiles, components.Tile{Label: "Review SLA breaches", Value: strconv.FormatInt(m.SLABreaches, 10),
				Href: "/backoffice/review/metrics"})
		}
	}
	if kernel.ViewJobs.AllowedFor(pr) && p.jobCounts != nil {
		counts, err := p.jobCounts(ctx)
		if err != nil {
			p.frame.ServerError(w, r, err)
			return
		}
		for _, st := range emi.JobStates() {
			tiles = append(tiles, components.Tile{Label: "Jobs " + string(st), Value: strconv.FormatInt(counts[string(st)], 10),
				Href: "/backoffice/jobs?state=" + string(st)})
		}
	}
	if p.inbox != nil {
		// Mentions and assignments waiting for this person come first.
		items, err := p.inbox.Mine(ctx, true, 10)
		if err != nil {
			p.frame.ServerError(w, r, err)
			return
		}
		p.frame.Render(w, r, http.StatusOK, "Dashboard", opsview.DashboardWithInbox(tiles, staffui.InboxRows(r, items)))
		return
	}
	p.frame.Render(w, r, http.StatusOK, "Dashboard", opsview.Dashboard(tiles))
}
