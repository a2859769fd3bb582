package emi

import "time"

// ReviewState is the underwriters' side of an application: queue, SLA,
// claim and the first of two approvals.
type ReviewState struct {
	QueuedAt            *time.Time
	SLADueAt            *time.Time
	SLALeft             time.Duration // while paused (information requested)
	Assignee            string
	AssigneeName        string
	ClaimedAt           *time.Time
	LastActivityAt      *time.Time
	FirstApprovalBy     string
	FirstApprovalByName string
	FirstApprovalAt     *time.Time
	FirstApprovalReason string
	// ManualReview: an underwriter has asked for information; the next
	// check completion returns it to the queue instead of deciding.
	ManualReview    bool
	HasSanctionsHit bool
}

// ClaimTTL is how long a claim lasts without activity.
const ClaimTTL = 30 * time.Minute

// ClaimedBy reports whether staffID holds a live claim at now.
func (r ReviewState) ClaimedBy(staffID string, now time.Time) bool {
	return r.Assignee != "" && r.Assignee == staffID && r.LastActivityAt != nil && now.Sub(*r.LastActivityAt) < ClaimTTL
}

// Claimed reports whether anyone holds a live claim at now.
func (r ReviewState) Claimed(now time.Time) bool {
	return r.Assignee != "" && r.LastActivityAt != nil && now.Sub(*r.LastActivityAt) < ClaimTTL
}

// RejectReasons are the reason codes of a rejection.
var RejectReasons = []string{"sanctions_match", "adverse_media", "registry_mismatch", "high_risk_jurisdiction",
	"prohibited_activity", "incomplete_information", "fraud_suspicion", "ownership_unclear", "other"}

// ReviewDecision is an underwriter's decision on an application. Stamp is
// the evidence stamp of the page the decision was made on.
type ReviewDecision struct {
	Action     string `json:"action" validate:"required,oneof=approve reject request_information"`
	ReasonCode string `json:"reason_code"`
	Text       string `json:"text" validate:"max=5000"`
	Stamp      string `json:"stamp" validate:"required"`
}

// DecisionRecord is a stored decision.
type DecisionRecord struct {
	ID          int64     `db:"id"`
	Application string    `db:"application"`
	Action      string    `db:"action"`
	ReasonCode  string    `db:"reason_code"`
	Text        string    `db:"text"`
	StaffID     string    `db:"staff_id"`
	StaffName   string    `db:"staff_name"`
	At          time.Time `db:"at"`
	Snapshot    []byte    `db:"snapshot"`
}

// Note is an internal note on an application.
type Note struct {
	ID          int64     `db:"id"`
	Application string    `db:"application"`
	ParentID    *int64    `db:"parent_id"`
	Author      string    `db:"author"`
	AuthorName  string    `db:"author_name"`
	Body        string    `db:"body"`
	Mentions    []string  `db:"-"`
	CreatedAt   time.Time `db:"created_at"`
}

// QueueFilter selects applications of the review queue. Tab is in_review,
// information_requested or checking. Assignee is "me", "none" or a staff
// id. AgeOver keeps those queued longer than it. Sort is "age" (oldest
// first, the default) or "risk" (highest first). After pages (keyset).
type QueueFilter struct {
	Tab             ApplicationStatus
	PartnerID       string
	Risk            string
	Product         string
	AgeOver         time.Duration
	Assignee        string
	HasSanctionsHit bool
	NearSLA         bool
	Sort            string
	Limit           int
	After           string
}

// QueueRow is one line of the queue.
type QueueRow struct {
	Token           string
	PartnerName     string
	LegalName       string
	Products        []string
	RiskScore       string
	RiskPoints      int
	Status          ApplicationStatus
	QueuedAt        *time.Time
	SLADueAt        *time.Time
	Assignee        string
	AssigneeName    string
	Claimed         bool
	AwaitingSecond  bool
	HasSanctionsHit bool
	CreatedAt       time.Time
}

// QueuePage is a page of the queue with the count of every tab.
type QueuePage struct {
	Rows   []QueueRow
	Counts map[ApplicationStatus]int64
	// Next is the keyset cursor of the following page ("" at the end).
	Next string
}

// SavedView is a named queue filter of a staff user (its URL query).
type SavedView struct {
	ID    string `db:"id"`
	Name  string `db:"name"`
	Query string `db:"query"`
}

// HitDecisionRecord is an underwriter's decision on one sanctions hit of
// an application. Key is "list|entry|subject|fingerprint" (subject: the
// member's token or "company").
type HitDecisionRecord struct {
	Key       string    `db:"hit_key"`
	Decision  string    `db:"decision"`
	Reason    string    `db:"reason"`
	StaffID   string    `db:"staff_id"`
	StaffName string    `db:"staff_name"`
	At        time.Time `db:"at"`
	// ConfirmedBy is the second person of a false positive ("" while it
	// waits for one; always "" for a true match, which one person decides).
	ConfirmedBy     string     `db:"confirmed_by"`
	ConfirmedByName string     `db:"confirmed_by_name"`
	ConfirmedAt     *time.Time `db:"confirmed_at"`
}

// Final reports whether the decision settles the hit: a true match, or a
// false positive confirmed by a second person.
func (d HitDecisionRecord) Final() bool {
	return d.Decision == HitTrueMatch || (d.Decision == HitFalsePositive && d.ConfirmedBy != "")
}

// AlertClaim is who holds a compliance alert, so two people do not work
// the same one: Kind is "aml_check" or "application", Subject the check's
// or application's token; AssignedBy is set when a colleague assigned it.
type AlertClaim struct {
	Kind       string    `db:"subject_kind"`
	Subject    string    `db:"subject"`
	StaffID    string    `db:"staff_id"`
	StaffName  string    `db:"staff_name"`
	AssignedBy string    `db:"assigned_by"`
	ClaimedAt  time.Time `db:"claimed_at"`
}

// Alert kinds.
const (
	AlertAMLCheck    = "aml_check"
	AlertApplication = "application"
	AlertMonitoring  = "monitoring_alert"
)

// Alert is one line of the compliance alert queue: an AML check waiting
// for a decision, or an application with sanctions hits without a final
// decision.
type Alert struct {
	Kind, Subject, Href string
	PartnerID, Partner  string
	Subjects            string // the people or company the hits are about
	Source              string // api, rescreen, user_update, watchlist, application
	Hits, Open          int
	TopScore            float64
	RaisedAt            time.Time
	Claim               *AlertClaim
	// Merchant is the onboarded merchant an AML check is about ("" for a
	// user's or an API check), MerchantHref its page.
	Merchant, MerchantHref string
}

// InboxItem is one notification of a staff user: a mention in an internal
// note or an assignment.
type InboxItem struct {
	ID      int64      `db:"id"`
	StaffID string     `db:"staff_id"`
	Kind    string     `db:"kind"`
	Href    string     `db:"href"`
	Body    string     `db:"body"`
	By      string     `db:"by_staff"`
	ByName  string     `db:"by_name"`
	At      time.Time  `db:"created_at"`
	ReadAt  *time.Time `db:"read_at"`
}
