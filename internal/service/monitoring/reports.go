package monitoring

import (
	"context"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/goaml"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// Suspicious transaction reports. An officer drafts the report of a case
// (the narrative, what the institution did, the transactions: by default
// those of the case's alerts) and submits it; a second officer with the
// reporting permission approves it (staff.ControlReport, through the
// decision engine: never the drafter nor anyone linked to them). The
// approval builds the goAML XML (internal/goaml, schema 5.0.1), keeps it
// sealed, and the case ends reported. The file is downloaded from the
// case for upload to the FIU's goAML portal.

// Report statuses.
const (
	ReportDraft    = "draft"
	ReportApproved = "approved"
)

// Report is a case's suspicious transaction report.
type Report struct {
	Token        string     `json:"token"`
	Case         string     `json:"case"`
	Status       string     `json:"status"`
	Narrative    string     `json:"narrative"`
	Action       string     `json:"action"`
	Transactions []int64    `json:"transactions"`
	DraftedBy    string     `json:"drafted_by"`
	DraftedAt    time.Time  `json:"drafted_at"`
	ApprovedBy   string     `json:"approved_by,omitempty"`
	ApprovedAt   *time.Time `json:"approved_at,omitempty"`
	HasFile      bool       `json:"has_file"`
}

// ReportStore keeps reports.
type ReportStore interface {
	// LockReport returns a case's report, locked (false when none).
	LockReport(ctx context.Context, caseToken string) (Report, bool, error)
	UpsertReport(ctx context.Context, r Report) error
	ApproveReport(ctx context.Context, token, by string, at time.Time, xmlEnc []byte) error
	ReportFile(ctx context.Context, caseToken string) (Report, []byte, bool, error)
}

// ReportData reads what a report says beyond the case: the institution
// reporting, the subject as the FIU wants them (identity, documents on
// file, accounts) and the transactions as goAML transactions.
type ReportData interface {
	// Institution is the reporting entity: its FIU id, branch, location,
	// local currency and codes.
	Institution(ctx context.Context) (goaml.Report, error)
	// Build fills a goAML report for subject with the movements (by id),
	// the reporting officer and the texts.
	Build(ctx context.Context, base goaml.Report, subject Subject, movements []int64, officer string) (goaml.Report, error)
}

// reportSubject names a case's report for the request lifecycle.
func reportSubject(caseToken string) string { return staff.SubjectOf("monitoring_report", caseToken) }

// ReportFlow is a report's approval: drafted and submitted by one
// officer, approved by another with the reporting permission; an edit of
// the draft voids it; it lapses after 30 days.
var ReportFlow = staff.DeclareFlow(staff.Flow{
	Control:   staff.ControlReport,
	Asked:     "this report",
	Changed:   "the draft",
	Proposed:  "monitoring.report_submitted",
	Approved:  "monitoring.report_approved",
	Rejected:  "monitoring.report_rejected",
	Withdrawn: "monitoring.report_withdrawn",
	Voided:    "monitoring.report_voided",
	Lapse:     30 * 24 * time.Hour,
	Href:      func(r staff.Request) string { return "/backoffice/monitoring/cases/" + r.ResourceToken },
})

// SubmitReport drafts (or redrafts) the case's report and submits it for
// approval. An earlier submission still waiting is void: what the second
// officer approves is the text they read.
func (c *Cases) SubmitReport(ctx context.Context, token, narrative, action string) (Report, error) {
	narrative, err := text("narrative", narrative, 20000)
	if err != nil {
		return Report{}, err
	}
	action = strings.TrimSpace(action)
	if len(action) > 4000 {
		return Report{}, emi.ErrReviewValidation.Field("action", "at most 4,000 characters")
	}
	var out Report
	_, err = c.act(ctx, token, "report_submitted", func(ctx context.Context, cs *Case) (string, map[string]any, error) {
		if err := staff.RequirePropose(ctx, staff.ControlReport); err != nil {
			return "", nil, err
		}
		r, found, err := c.store.LockReport(ctx, cs.Token)
		if err != nil {
			return "", nil, err
		}
		now := c.now.At(ctx).UTC()
		if !found {
			r = Report{Token: kernel.NewToken(), Case: cs.Token, Status: ReportDraft}
		}
		alerts, err := c.store.AlertsOfCase(ctx, cs.Token)
		if err != nil {
			return "", nil, err
		}
		r.Transactions = nil
		for _, a := range alerts {
			for _, h := range a.Hits {
				if h.Movement != 0 && !slices.Contains(r.Transactions, h.Movement) {
					r.Transactions = append(r.Transactions, h.Movement)
				}
			}
		}
		// Microseconds: the revision read back from PostgreSQL must match.
		r.Narrative, r.Action, r.DraftedBy, r.DraftedAt = narrative, action, kernel.StaffOf(ctx).ActorID, now.Truncate(time.Microsecond)
		if err := c.store.UpsertReport(ctx, r); err != nil {
			return "", nil, err
		}
		if pending, found, err := c.controls.PendingRequest(ctx, reportSubject(cs.Token)); err != nil {
			return "", nil, err
		} else if found {
			// The text changed: the waiting approval is for another text.
			if _, err := c.controls.DeclineRequest(ctx, ReportFlow, reportSubject(cs.Token), staff.Decline{ID: pending.ID,
				Note: "redrafted"}); err != nil {
				return "", nil, err
			}
		}
		if _, err := c.controls.ProposeRequest(ctx, ReportFlow, staff.Proposal{Subject: reportSubject(cs.Token),
			ResourceType: "monitoring_case", ResourceToken: cs.Token, PartnerID: cs.PartnerID, Reason: "suspicious transaction report",
			Revision: revision(r), Changes: map[string]any{"report": r.Token, "transactions": len(r.Transactions)}}); err != nil {
			return "", nil, err
		}
		if cs.Status == CaseOpen {
			cs.Status = CaseInvestigating
		}
		out = r
		return narrative, map[string]any{"report": r.Token}, nil
	})
	return out, err
}

// revision binds an approval to the draft's text.
func revision(r Report) string { return r.DraftedAt.UTC().Format(time.RFC3339Nano) }

// ApproveReport approves the case's submitted report (the reporting
// permission, a person distinct from the drafter): the goAML file is
// built and validated by construction, sealed, and the case ends
// reported. seen is the request the approver read.
func (c *Cases) ApproveReport(ctx context.Context, token, seen string) (Report, error) {
	if !kernel.ValidToken(token) {
		return Report{}, emi.ErrCaseNotFound
	}
	var out Report
	_, err := c.controls.ApproveRequest(ctx, ReportFlow, reportSubject(token), staff.Approval{ID: seen,
		Lock: func(ctx context.Context, _ staff.Request) (string, error) {
			r, found, err := c.store.LockReport(ctx, token)
			if err != nil || !found {
				return "", err
			}
			return revision(r), nil
		},
		Apply: func(ctx context.Context, req staff.Request) (map[string]any, error) {
			cs, found, err := c.store.LockCase(ctx, token)
			if err != nil {
				return nil, err
			}
			if !found || cs.Ended() {
				return nil, emi.ErrCaseConflict.WithPublic("The case has ended: its report can no longer be filed.")
			}
			r, _, err := c.store.LockReport(ctx, token)
			if err != nil {
				return nil, err
			}
			base, err := c.report.Institution(ctx)
			if err != nil {
				return nil, err
			}
			base.EntityReference, base.ReportDate = r.Token, c.now.At(ctx).UTC()
			base.Reason, base.Action = r.Narrative, r.Action
			doc, err := c.report.Build(ctx, base, cs.Subject, r.Transactions, kernel.StaffOf(ctx).ActorID)
			if err != nil {
				return nil, err
			}
			xml, err := doc.Marshal()
			if err != nil {
				return nil, emi.ErrCaseConflict.WithPublic("The report cannot be written as goAML: %s", err.Error())
			}
			enc, err := c.sealer.Seal(xml, ReportContext(r.Token))
			if err != nil {
				return nil, err
			}
			now := c.now.At(ctx).UTC()
			if err := c.store.ApproveReport(ctx, r.Token, kernel.StaffOf(ctx).ActorID, now, enc); err != nil {
				return nil, err
			}
			cs.Status, cs.EndedAt, cs.UpdatedAt = CaseReported, &now, now
			if err := c.store.UpdateCase(ctx, cs); err != nil {
				return nil, err
			}
			if err := c.log(ctx, cs.Token, "reported", "", map[string]any{"report": r.Token, "schema": goaml.SchemaVersion}); err != nil {
				return nil, err
			}
			r.Status, r.ApprovedBy, r.ApprovedAt, r.HasFile = ReportApproved, kernel.StaffOf(ctx).ActorID, &now, true
			out = r
			return map[string]any{"report": r.Token, "bytes": len(xml), "schema": goaml.SchemaVersion, "drafted_by": req.ProposedBy}, nil
		},
	})
	return out, err
}

// RejectReport ends a submitted report without filing it: withdrawn by
// its drafter, rejected with a note by another officer. The draft stays.
func (c *Cases) RejectReport(ctx context.Context, token, seen, note string) error {
	if !kernel.ValidToken(token) {
		return emi.ErrCaseNotFound
	}
	_, err := c.controls.DeclineRequest(ctx, ReportFlow, reportSubject(token), staff.Decline{ID: seen, Note: note})
	return err
}

// ReportContext binds a sealed value to its row (rekey re-seals it).
func ReportContext(token string) string { return "monitoring_reports.xml:" + token }

// ReportFile returns an approved report's goAML file (WorkCases); the
// download is audited.
func (c *Cases) ReportFile(ctx context.Context, token string) (Report, []byte, error) {
	if err := WorkCases.Require(ctx); err != nil {
		return Report{}, nil, err
	}
	if !kernel.ValidToken(token) {
		return Report{}, nil, emi.ErrCaseNotFound
	}
	r, enc, found, err := c.store.ReportFile(ctx, token)
	if err != nil {
		return Report{}, nil, err
	}
	if !found || len(enc) == 0 {
		return Report{}, nil, emi.ErrCaseNotFound
	}
	xml, err := c.sealer.Open(enc, ReportContext(r.Token))
	if err != nil {
		return Report{}, nil, err
	}
	return r, xml, c.audit.Record(ctx, emi.AuditEntry{Action: "monitoring.report_download", ResourceType: "monitoring_case",
		ResourceToken: token, Changes: map[string]any{"report": r.Token}})
}

// reportView fills the report part of a case page.
func (c *Cases) reportView(ctx context.Context, v *CaseView) error {
	r, _, found, err := c.store.ReportFile(ctx, v.Token)
	if err != nil || !found {
		return err
	}
	v.Report = &r
	req, pending, err := c.controls.PendingRequest(ctx, reportSubject(v.Token))
	if err != nil || !pending {
		return err
	}
	v.ReportRequest, v.ReportCan = &req, c.controls.RequestCapabilities(ctx, req)
	return nil
}
