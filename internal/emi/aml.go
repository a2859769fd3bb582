package emi

import (
	"slices"
	"strings"
	"time"
)

// AMLStatus is where an AML check stands (contract §6): clear (no hit),
// match (hits waiting for compliance), cleared (every hit a false positive)
// or confirmed (a true match).
type AMLStatus string

// AML check statuses.
const (
	AMLClear     AMLStatus = "clear"
	AMLMatch     AMLStatus = "match"
	AMLCleared   AMLStatus = "cleared"
	AMLConfirmed AMLStatus = "confirmed"
)

// Usable reports whether a check with this status may back a user or a card
// (seed: the token of a clear check).
func (s AMLStatus) Usable() bool { return s == AMLClear || s == AMLCleared }

// AMLQuery is the request of aml_check (seed "AML check"). last_name is
// required (a screening without a name means nothing); first_name may be
// empty for people with one name.
type AMLQuery struct {
	FirstName   string `json:"first_name" validate:"omitempty,max=1000,name"`
	LastName    string `json:"last_name" validate:"required,max=1000,name"`
	Nationality string `json:"nationality" validate:"omitempty,country"`
	Birthday    string `json:"birthday" validate:"omitempty,pastdate"`
	// Entity marks a company or another legal entity (onboarding's
	// company and corporate members, merchant re-screening): LastName
	// holds its legal or trade name, and it is screened as a company
	// (legal forms, descriptors, acronyms, its countries) against the
	// listed entities only. Not part of aml_check, which screens persons.
	Entity bool `json:"-"`
	// Countries are an entity's ISO alpha-2 countries: registration and,
	// where known, address.
	Countries []string `json:"-"`
}

// CompanyAMLQuery is the query that screens a company or another legal
// entity named name with its countries (empty ones are dropped).
func CompanyAMLQuery(name string, countries ...string) AMLQuery {
	q := AMLQuery{LastName: name, Entity: true}
	for _, c := range countries {
		if c = strings.ToUpper(strings.TrimSpace(c)); c != "" && !slices.Contains(q.Countries, c) {
			q.Countries = append(q.Countries, c)
		}
	}
	return q
}

// AMLTokenMatch is one aligned token pair of a name comparison. Weight,
// Kind and Note are empty in breakdowns stored before they existed.
type AMLTokenMatch struct {
	Query      string  `json:"query"`
	Entry      string  `json:"entry"`
	Similarity float64 `json:"similarity"`
	// Weight is the token's share in the name score; Kind how it matched
	// (exact, phonetic, fuzzy, fold, equivalent, initial, joined, split,
	// middle, unmatched); Note says it in words.
	Weight float64 `json:"weight,omitempty"`
	Kind   string  `json:"kind,omitempty"`
	Note   string  `json:"note,omitempty"`
}

// AMLBreakdown explains a hit's score.
type AMLBreakdown struct {
	NameScore         float64         `json:"name_score"`
	Tokens            []AMLTokenMatch `json:"tokens"`
	Birthday          string          `json:"birthday"`
	BirthdayAdjust    float64         `json:"birthday_adjust"`
	Nationality       string          `json:"nationality"`
	NationalityAdjust float64         `json:"nationality_adjust"`
	// TypeAdjust lowers entities, vessels and aircraft for a person with a
	// birthday; Notes explain penalties and caps in words.
	TypeAdjust float64  `json:"type_adjust"`
	Notes      []string `json:"notes"`
}

// AMLHit is one list entry a check matched, with the reviewer's decision.
type AMLHit struct {
	N           int          `db:"n"`
	List        string       `db:"list"`
	EntryID     string       `db:"entry_id"`
	EntryType   string       `db:"entry_type"`
	Name        string       `db:"name"`
	MatchedName string       `db:"matched_name"`
	Alias       bool         `db:"alias"`
	Score       float64      `db:"score"`
	Fields      []string     `db:"-"`
	Breakdown   AMLBreakdown `db:"-"`
	Fingerprint string       `db:"fingerprint"`
	// Suppressed: a remembered false positive for this person and entry
	// (same fingerprint) answered the hit; not queued, not reported.
	Suppressed bool       `db:"suppressed"`
	Decision   string     `db:"decision"`
	Reason     string     `db:"reason"`
	DecidedBy  string     `db:"decided_by"`
	DecidedAt  *time.Time `db:"decided_at"`
	// DecidedByName is the reviewer's name, for the back office.
	DecidedByName string `db:"decided_by_name"`
	// ConfirmedBy is the second person of a false positive on a hit that
	// takes two (score TwoPersonHitScore or more); "" until confirmed.
	ConfirmedBy     string     `db:"confirmed_by"`
	ConfirmedAt     *time.Time `db:"confirmed_at"`
	ConfirmedByName string     `db:"confirmed_by_name"`
	// Entry is the list entry as the loaded lists hold it now (filled for
	// the back office; nil when the lists no longer have it).
	Entry *SanctionsEntry `db:"-"`
}

// SanctionsEntry is one entry of a sanctions list, as published.
type SanctionsEntry struct {
	List, ID, Type, Name string
	Aliases              []string
	// Birthdates as the list states them: 1984-01-08, 1960-12, 1962,
	// 1960..1962 (a range) or ~1962 (circa).
	Birthdates    []string
	Nationalities []string
	Programs      []string
	Fingerprint   string
}

// Hit decisions.
const (
	HitFalsePositive = "false_positive"
	HitTrueMatch     = "true_match"
)

// AMLCheck is one screening of a person.
type AMLCheck struct {
	Token       string     `db:"token"`
	PartnerID   string     `db:"partner_id"`
	Source      string     `db:"source"`
	UserToken   string     `db:"user_token"`
	FirstName   string     `db:"first_name"`
	LastName    string     `db:"last_name"`
	Nationality string     `db:"nationality"`
	Birthday    string     `db:"birthday"`
	PersonKey   []byte     `db:"person_key"`
	Status      AMLStatus  `db:"status"`
	ListVersion string     `db:"list_version"`
	CreatedAt   time.Time  `db:"created_at"`
	ReviewedAt  *time.Time `db:"reviewed_at"`
	ReviewedBy  string     `db:"reviewed_by"`
	// ReviewedByName is the reviewer's name, for the back office.
	ReviewedByName string   `db:"reviewed_by_name"`
	Hits           []AMLHit `db:"-"`
	// PartnerName is filled for the back office.
	PartnerName string `db:"partner_name"`
	// MerchantToken names the onboarded merchant whose company or person a
	// re-screening found, MemberToken the member (a person or legal entity
	// of its application; "" for the company's own name). MerchantName and
	// MerchantApplication are filled for the back office.
	MerchantToken       string `db:"merchant_token"`
	MemberToken         string `db:"member_token"`
	MerchantName        string `db:"merchant_name"`
	MerchantApplication string `db:"merchant_application"`
}

// OpenHits returns the hits still waiting for a decision.
func (c AMLCheck) OpenHits() int {
	n := 0
	for _, h := range c.Hits {
		if h.Open() {
			n++
		}
	}
	return n
}

// AML check sources: the partner's aml_check, a re-screening after a list
// update, and the screening of a user whose name, birthday or nationality
// changed (user_update).
const (
	AMLSourceAPI        = "api"
	AMLSourceRescreen   = "rescreen"
	AMLSourceUserUpdate = "user_update"
	// AMLSourceWatchlist: a watch-list addition found the user (an addition
	// reaches active customers, not only new ones).
	AMLSourceWatchlist = "watchlist"
)

// WatchlistListName is the list name of a hit on the adverse-media watch
// list (its entry id is the watch-list entry's id).
const WatchlistListName = "watchlist"

// UserScreening is the AML state of a user as card operations see it: the
// checks linked to the user (re-screenings and screenings after a change of
// identity) still waiting for a decision (Open) or confirmed a true match
// (Confirmed), and when the user's name, birthday or nationality last
// changed (nil: never since creation).
type UserScreening struct {
	Open          int        `db:"open"`
	Confirmed     int        `db:"confirmed"`
	IdentitySince *time.Time `db:"identity_since"`
}

// TwoPersonHitScore is the score from which a false positive on an API
// check's hit takes two people: clearing a strong match wrongly is the
// costly mistake, so a second person checks it. Every hit inside an
// application takes two.
const TwoPersonHitScore = 0.9

// NeedsSecondPerson reports whether a false positive on h takes two people.
func (h AMLHit) NeedsSecondPerson() bool { return h.Score >= TwoPersonHitScore }

// Pending reports whether h holds a false positive that waits for its
// second person.
func (h AMLHit) Pending() bool {
	return h.Decision == HitFalsePositive && h.NeedsSecondPerson() && h.ConfirmedBy == ""
}

// Open reports whether h still needs a decision: not suppressed, and
// undecided or waiting for its second person.
func (h AMLHit) Open() bool { return !h.Suppressed && (h.Decision == "" || h.Pending()) }

// HitDecision is a reviewer's decision on one hit; Reason is mandatory.
type HitDecision struct {
	N        int    `json:"n" validate:"min=1"`
	Decision string `json:"decision" validate:"required,oneof=false_positive true_match"`
	Reason   string `json:"reason" validate:"required,min=3,max=2000"`
}

// SanctionsList describes one loaded list.
type SanctionsList struct {
	Name      string    `json:"name"`
	Source    string    `json:"source"`
	Published string    `json:"published"`
	Entries   int       `json:"entries"`
	Aliases   int       `json:"aliases"`
	SHA256    string    `json:"sha256"`
	LoadedAt  time.Time `json:"loaded_at"`
}

// SanctionsUpdate is one list update attempt.
type SanctionsUpdate struct {
	At       time.Time `db:"at"`
	Instance string    `db:"instance"`
	OK       bool      `db:"ok"`
	Error    string    `db:"error"`
	Version  string    `db:"version"`
	Changed  int       `db:"changed"`
}

// SanctionsStatus is what the back office shows about screening.
type SanctionsStatus struct {
	Loaded  bool
	Version string
	Lists   []SanctionsList
	// Threshold is the score from which a hit is raised.
	Threshold float64
	// Updates are the latest update attempts, newest first.
	Updates []SanctionsUpdate
	// AutoUpdate says whether this instance downloads the lists on a
	// schedule, and from where.
	AutoUpdate bool
	Sources    []string
}

// AMLFilter selects checks for the back office.
type AMLFilter struct {
	Status    AMLStatus
	PartnerID string
	UserToken string
	Limit     int
	// Sort is the order (one of AMLSortKeys); the zero value is the tab's
	// default: the review queue (status match) oldest first, anything
	// else newest first. After is the token of the last check seen: the
	// page holds the checks after it in that order (keyset paging).
	Sort  SortOrder
	After string
}

// AMLSortKeys are the orders of the back office's AML lists.
var AMLSortKeys = []string{"person", "partner", "status", "created"}

// KYCSession is one identification of a user (kyc_init).
type KYCSession struct {
	Token        string     `db:"token"`
	PartnerID    string     `db:"partner_id"`
	UserToken    string     `db:"user_token"`
	Provider     string     `db:"provider"`
	Status       KYCStatus  `db:"status"`
	DocumentKind string     `db:"document_kind"`
	ConsentAt    *time.Time `db:"consent_at"`
	SubmittedAt  *time.Time `db:"submitted_at"`
	ReviewedAt   *time.Time `db:"reviewed_at"`
	ReviewedBy   string     `db:"reviewed_by"`
	// ReviewedByName is the reviewer's name, for the back office.
	ReviewedByName string `db:"reviewed_by_name"`
	// Reason is the partner-facing reason of the decision: it leaves emi
	// in the user.kyc_updated event.
	Reason string `db:"reason"`
	// InternalNote is the reviewer's note for staff only (the real
	// grounds): shown in the back office and recorded in the audit log,
	// never sent to the partner (no tipping-off).
	InternalNote string    `db:"internal_note"`
	ExpiresAt    time.Time `db:"expires_at"`
	CreatedAt    time.Time `db:"created_at"`
	UpdatedAt    time.Time `db:"updated_at"`
	// URL is the person's page, filled when the session is returned to the
	// partner.
	URL string `db:"-"`
	// PartnerName, UserName are filled for the back office.
	PartnerName string `db:"partner_name"`
	UserName    string `db:"user_name"`
}

// Open reports whether the session still waits for the person or a reviewer.
func (s KYCSession) Open() bool { return s.Status == KYCPending || s.Status == KYCSubmitted }

// KYCUpload is what the person sends from the hosted page. Kind is
// "passport" (Front only) or "idcard" (Front and Back); Selfie is always
// required, and Consent must be given.
type KYCUpload struct {
	Kind    string
	Consent bool
	Front   []byte
	Back    []byte
	Selfie  []byte
}

// KYCDecision is a reviewer's decision on a submitted KYC session. Reason
// goes to the partner; InternalNote stays inside emi (staff and the audit
// log). A rejection needs an internal note: the partner-facing reason of a
// rejection is often deliberately neutral, and the real grounds must be
// kept somewhere a colleague or an auditor can read them.
type KYCDecision struct {
	Approve      bool
	Reason       string
	InternalNote string
}

// KYCFilter selects sessions for the back office.
type KYCFilter struct {
	Status    KYCStatus
	UserToken string
	Limit     int
	// Sort is the order (one of KYCSortKeys); the zero value is the tab's
	// default: the review queue (status submitted) oldest submission
	// first, anything else newest started first. After is the token of
	// the last session seen: the page holds the sessions after it in that
	// order (keyset paging).
	Sort  SortOrder
	After string
}

// KYCSortKeys are the orders of the back office's KYC lists.
var KYCSortKeys = []string{"person", "partner", "status", "started", "submitted"}
