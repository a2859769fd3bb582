package monitoring

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// Cases: compliance opens a case from one or more alerts of one subject
// (a person or a merchant) and works it: the transactions that raised
// them, notes, documents, an assignee and a timeline. A case is open,
// then investigating, and ends closed (no suspicion, with a reason) or
// reported (a suspicious transaction report was approved: reports.go).
// From a case an officer asks the partner for information (a request the
// partner reads and answers through the API, worded as a routine review),
// places or lifts a compliance hold on the subject, and releases or
// returns the subject's held transfers (transfers.DecideHeld).
//
// Partners never see a case or a report: no API answer, event or error
// names one, and an information request carries no case token.

// Case statuses.
const (
	CaseOpen          = "open"
	CaseInvestigating = "investigating"
	CaseClosed        = "closed"
	CaseReported      = "reported"
)

// Case is a compliance case about one subject.
type Case struct {
	Token        string     `json:"case"`
	PartnerID    string     `json:"partner"`
	Subject      Subject    `json:"subject"`
	Status       string     `json:"status"`
	Assignee     string     `json:"assignee,omitempty"`
	OpenedBy     string     `json:"opened_by"`
	OpenedAt     time.Time  `json:"opened_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	ClosedReason string     `json:"closed_reason,omitempty"`
	EndedAt      *time.Time `json:"ended_at,omitempty"`
}

// Ended reports whether the case is closed or reported.
func (c Case) Ended() bool { return c.Status == CaseClosed || c.Status == CaseReported }

// CaseEvent is one step of a case's timeline.
type CaseEvent struct {
	ID        int64          `json:"id"`
	Case      string         `json:"-"`
	At        time.Time      `json:"at"`
	Actor     string         `json:"actor"`
	ActorName string         `json:"actor_name"`
	Kind      string         `json:"kind"`
	Body      string         `json:"body"`
	Data      map[string]any `json:"data"`
}

// CaseDocument is a document attached to a case (content sealed).
type CaseDocument struct {
	Token       string    `json:"token"`
	Case        string    `json:"case"`
	Filename    string    `json:"filename"`
	ContentType string    `json:"content_type"`
	Size        int       `json:"size"`
	SHA256      string    `json:"sha256"`
	UploadedBy  string    `json:"uploaded_by"`
	UploadedAt  time.Time `json:"uploaded_at"`
}

// InformationRequest is a question to the partner about a customer.
type InformationRequest struct {
	Token       string     `json:"token"`
	PartnerID   string     `json:"-"`
	Case        string     `json:"-"`
	Subject     Subject    `json:"subject"`
	Topic       string     `json:"topic"`
	Question    string     `json:"question"`
	Status      string     `json:"status"`
	Answer      string     `json:"answer"`
	RequestedBy string     `json:"-"`
	RequestedAt time.Time  `json:"requested_at"`
	DueAt       time.Time  `json:"due_at"`
	AnsweredAt  *time.Time `json:"answered_at"`
}

// Information request statuses and topics. The topics are the questions
// of a periodic customer review: nothing in them says why they are asked.
const (
	RequestOpen     = "open"
	RequestAnswered = "answered"
)

// InformationTopics are the topics a request may have, with the sentence
// the partner reads.
var InformationTopics = map[string]string{
	"source_of_funds":     "the origin of the funds received on the customer's accounts",
	"purpose_of_payments": "the purpose of recent payments",
	"counterparties":      "the customer's relationship with the people and businesses they pay or are paid by",
	"expected_activity":   "the customer's expected activity (an update of the figures declared at onboarding)",
	"occupation":          "the customer's occupation and income",
}

// tippingOff are words a question to a partner may not contain: a request
// must read as a routine review (the partner, and through it the
// customer, must not learn of a suspicion, a case or a report).
var tippingOff = []string{"suspic", "launder", "report", "fiu", "str ", "sar ", "goaml", "case", "alert", "investigat",
	"monitoring", "fraud", "police", "sanction", "terroris", "criminal", "tip off", "tipping"}

// ComplianceHold is a hold on a subject's money placed from a case.
type ComplianceHold struct {
	ID       int64      `json:"id"`
	Subject  Subject    `json:"subject"`
	Case     string     `json:"case"`
	PlacedBy string     `json:"placed_by"`
	PlacedAt time.Time  `json:"placed_at"`
	Reason   string     `json:"reason"`
	LiftedBy string     `json:"lifted_by,omitempty"`
	LiftedAt *time.Time `json:"lifted_at,omitempty"`
}

// CaseFilter selects cases.
type CaseFilter struct {
	Status  string
	Subject Subject
	Limit   int
}

// CaseRow is a case in a list, with its names.
type CaseRow struct {
	Case
	SubjectName  string
	PartnerName  string
	AssigneeName string
	Alerts       int
}

// CaseView is everything a case page shows.
type CaseView struct {
	CaseRow
	Alerts    []Alert
	Movements []MovementView
	Events    []CaseEvent
	Documents []CaseDocument
	Requests  []InformationRequest
	Hold      *ComplianceHold
	Holds     []Hold
	Report    *Report
	// ReportRequest is the report's pending approval, with what the
	// reader may do with it (nil when none waits).
	ReportRequest *staff.Request
	ReportCan     staff.RequestCapability
	// Officers are the staff users a case can be assigned to.
	Officers []Officer
}

// MovementView is a movement of a case with what the store knows of it.
type MovementView struct {
	Movement
	Counterparty string
}

// Officer is a staff user who works cases.
type Officer struct {
	ID   string `db:"id"`
	Name string `db:"name"`
}

// RuleStat is a rule's record: alerts whose hits name it, the cases they
// joined, closed without suspicion and reported. Precision is the share
// of the rule's ended cases that were reported.
type RuleStat struct {
	Rule              string `db:"rule"`
	Alerts            int64  `db:"alerts"`
	Cases             int64  `db:"cases"`
	ClosedNoSuspicion int64  `db:"closed_no_suspicion"`
	Reported          int64  `db:"reported"`
}

// Precision is reported / (reported + closed without suspicion), and
// false while no case of the rule has ended.
func (s RuleStat) Precision() (float64, bool) {
	ended := s.Reported + s.ClosedNoSuspicion
	if ended == 0 {
		return 0, false
	}
	return float64(s.Reported) / float64(ended), true
}

// RuleStats returns every rule's record (ViewAlerts).
func (c *Cases) RuleStats(ctx context.Context) ([]RuleStat, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return nil, err
	}
	return c.store.RuleStats(ctx)
}

// CaseStore keeps cases, their timelines, documents, information
// requests, compliance holds and reports.
type CaseStore interface {
	ReportStore
	// LockAlerts returns the alerts, locked (those that exist).
	LockAlerts(ctx context.Context, tokens []string) ([]Alert, error)
	InsertCase(ctx context.Context, c Case) error
	UpdateCase(ctx context.Context, c Case) error
	// LockCase returns a case, locked (false when none).
	LockCase(ctx context.Context, token string) (Case, bool, error)
	CaseRow(ctx context.Context, token string) (CaseRow, bool, error)
	Cases(ctx context.Context, f CaseFilter) ([]CaseRow, error)
	CountCases(ctx context.Context, status ...string) (int64, error)
	SetAlertsCase(ctx context.Context, alerts []string, caseToken string) error
	AlertsOfCase(ctx context.Context, caseToken string) ([]Alert, error)
	Movements(ctx context.Context, ids []int64) ([]MovementView, error)
	InsertCaseEvent(ctx context.Context, e CaseEvent) error
	CaseEvents(ctx context.Context, caseToken string) ([]CaseEvent, error)
	// CaseOfAlert returns the case an alert joined ("" none).
	CaseOfAlert(ctx context.Context, alert string) (string, error)
	InsertCaseDocument(ctx context.Context, d CaseDocument, contentEnc []byte) error
	CaseDocuments(ctx context.Context, caseToken string) ([]CaseDocument, error)
	CaseDocument(ctx context.Context, token string) (CaseDocument, []byte, bool, error)
	InsertInformationRequest(ctx context.Context, r InformationRequest) error
	InformationRequests(ctx context.Context, f RequestFilter) ([]InformationRequest, error)
	LockInformationRequest(ctx context.Context, partnerID, token string) (InformationRequest, bool, error)
	AnswerInformationRequest(ctx context.Context, token, answer string, at time.Time) error
	HoldInForce(ctx context.Context, s Subject) (ComplianceHold, bool, error)
	InsertComplianceHold(ctx context.Context, h ComplianceHold) error
	LiftComplianceHold(ctx context.Context, id int64, by string, at time.Time) error
	// Officers returns the enabled staff users holding a role that grants
	// aml.review.
	Officers(ctx context.Context, roles []emi.Role) ([]Officer, error)
	// RuleStats counts, per rule, the alerts whose hits name it and the
	// cases those alerts joined, closed without suspicion and reported.
	RuleStats(ctx context.Context) ([]RuleStat, error)
}

// RequestFilter selects information requests, newest first.
type RequestFilter struct {
	PartnerID string
	Case      string
	Status    string
	Token     string
	// StartingAfter is a request: only those after it, newest first (a
	// cursor).
	StartingAfter string
	Limit         int
}

// RequestList is what information_requests_list asks: a status ("" all),
// a cursor (the last request of the previous page; "" the first page) and
// a page size, 1 to MaxRequestList.
type RequestList struct {
	Status, StartingAfter string
	Limit                 int
}

// MaxRequestList bounds a page of information_requests_list; it is also
// the page size when none is asked.
const MaxRequestList = 100

// Cases works compliance cases (monitoring.view to read, the case
// operations below to act).
type Cases struct {
	controls *staff.Controls
	tx       kernel.TxRunner
	store    CaseStore
	monitor  *Monitor
	events   *kernel.Events
	sealer   kernel.Sealer
	audit    *kernel.Auditor
	now      kernel.Clock
	report   ReportData
}

// CasesDeps is what Cases needs.
type CasesDeps struct {
	Controls *staff.Controls
	Tx       kernel.TxRunner
	Store    CaseStore
	Monitor  *Monitor
	Events   *kernel.Events
	Sealer   kernel.Sealer
	Audit    *kernel.Auditor
	Now      kernel.Clock
	// Report reads what a suspicious transaction report says of the
	// subject and the institution (reports.go).
	Report ReportData
}

// NewCases returns the case service.
func NewCases(d CasesDeps) *Cases {
	kernel.MustHave("Cases", d)
	return &Cases{controls: d.Controls, tx: d.Tx, store: d.Store, monitor: d.Monitor, events: d.Events, sealer: d.Sealer,
		audit: d.Audit, now: d.Now, report: d.Report}
}

// WorkCases is the permission of every case operation: compliance.
var WorkCases = emi.NewOp("monitoring.cases", emi.PermReviewAML)

// OpenCase opens a case from open alerts of one subject; note is the
// officer's first note (optional). The alerts leave the queue.
func (c *Cases) OpenCase(ctx context.Context, alerts []string, note string) (Case, error) {
	if err := WorkCases.Require(ctx); err != nil {
		return Case{}, err
	}
	alerts = slices.Compact(slices.Sorted(slices.Values(alerts)))
	if len(alerts) == 0 {
		return Case{}, emi.ErrReviewValidation.Field("alerts", "choose at least one alert")
	}
	for _, a := range alerts {
		if !kernel.ValidToken(a) {
			return Case{}, emi.ErrMonitoringAlertNotFound
		}
	}
	note = strings.TrimSpace(note)
	if len(note) > 10000 {
		return Case{}, emi.ErrReviewValidation.Field("note", "at most 10,000 characters")
	}
	me := kernel.StaffOf(ctx).ActorID
	var out Case
	err := c.tx.InTx(ctx, func(ctx context.Context) error {
		locked, err := c.store.LockAlerts(ctx, alerts)
		if err != nil {
			return err
		}
		if len(locked) != len(alerts) {
			return emi.ErrMonitoringAlertNotFound
		}
		subject := locked[0].Subject
		for _, a := range locked {
			if a.Subject != subject {
				return emi.ErrReviewValidation.Field("alerts", "a case is about one customer: the alerts are about several")
			}
			if a.Status != AlertOpen {
				return emi.ErrCaseConflict.WithPublic("An alert is already in a case or closed: reload the queue.")
			}
		}
		now := c.now.At(ctx).UTC()
		out = Case{Token: kernel.NewToken(), PartnerID: locked[0].PartnerID, Subject: subject, Status: CaseOpen, Assignee: me,
			OpenedBy: me, OpenedAt: now, UpdatedAt: now}
		if err := c.store.InsertCase(ctx, out); err != nil {
			return err
		}
		if err := c.store.SetAlertsCase(ctx, alerts, out.Token); err != nil {
			return err
		}
		if err := c.log(ctx, out.Token, "opened", note, map[string]any{"alerts": alerts}); err != nil {
			return err
		}
		return c.audit.Record(ctx, emi.AuditEntry{Action: "monitoring.case_open", ResourceType: "monitoring_case",
			ResourceToken: out.Token, PartnerID: out.PartnerID, Changes: map[string]any{"alerts": alerts,
				"subject": subject.Kind + " " + subject.Token}})
	})
	return out, err
}

// log appends a step to a case's timeline.
func (c *Cases) log(ctx context.Context, caseToken, kind, body string, data map[string]any) error {
	if data == nil {
		data = map[string]any{}
	}
	return c.store.InsertCaseEvent(ctx, CaseEvent{Case: caseToken, At: c.now.At(ctx).UTC(), Actor: kernel.StaffOf(ctx).ActorID,
		Kind: kind, Body: body, Data: data})
}

// act runs fn on a locked case that has not ended, records the step in
// the timeline and the audit log.
func (c *Cases) act(ctx context.Context, token, action string, fn func(ctx context.Context, cs *Case) (string, map[string]any, error)) (Case, error) {
	if err := WorkCases.Require(ctx); err != nil {
		return Case{}, err
	}
	if !kernel.ValidToken(token) {
		return Case{}, emi.ErrCaseNotFound
	}
	var out Case
	err := c.tx.InTx(ctx, func(ctx context.Context) error {
		cs, found, err := c.store.LockCase(ctx, token)
		if err != nil {
			return err
		}
		if !found {
			return emi.ErrCaseNotFound
		}
		if cs.Ended() {
			return emi.ErrCaseConflict.WithPublic("The case is %s: it can no longer change.", cs.Status)
		}
		body, data, err := fn(ctx, &cs)
		if err != nil {
			return err
		}
		cs.UpdatedAt = c.now.At(ctx).UTC()
		if err := c.store.UpdateCase(ctx, cs); err != nil {
			return err
		}
		if err := c.log(ctx, cs.Token, action, body, data); err != nil {
			return err
		}
		out = cs
		changes := map[string]any{"status": cs.Status}
		for k, v := range data {
			changes[k] = v
		}
		return c.audit.Record(ctx, emi.AuditEntry{Action: "monitoring.case_" + action, ResourceType: "monitoring_case",
			ResourceToken: cs.Token, PartnerID: cs.PartnerID, Changes: changes})
	})
	return out, err
}

// text checks a note or reason: required, at most max characters.
func text(field, s string, max int) (string, error) {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) < 3 || utf8.RuneCountInString(s) > max {
		return "", emi.ErrReviewValidation.Field(field, "write 3 to "+strconv.Itoa(max)+" characters")
	}
	return s, nil
}

// AddNote adds a note to a case.
func (c *Cases) AddNote(ctx context.Context, token, note string) (Case, error) {
	note, err := text("note", note, 10000)
	if err != nil {
		return Case{}, err
	}
	return c.act(ctx, token, "note", func(context.Context, *Case) (string, map[string]any, error) { return note, nil, nil })
}

// Assign gives the case to a compliance officer (assignee "" takes it
// for oneself).
func (c *Cases) Assign(ctx context.Context, token, assignee string) (Case, error) {
	if assignee == "" {
		assignee = kernel.StaffOf(ctx).ActorID
	}
	return c.act(ctx, token, "assigned", func(ctx context.Context, cs *Case) (string, map[string]any, error) {
		officers, err := c.store.Officers(ctx, rolesWith(emi.PermReviewAML))
		if err != nil {
			return "", nil, err
		}
		i := slices.IndexFunc(officers, func(o Officer) bool { return o.ID == assignee })
		if i < 0 {
			return "", nil, emi.ErrReviewValidation.Field("assignee", "is not a compliance officer")
		}
		cs.Assignee = assignee
		return "assigned to " + officers[i].Name, map[string]any{"assignee": assignee}, nil
	})
}

// rolesWith lists the roles that grant perm.
func rolesWith(perm emi.Permission) []emi.Role {
	var out []emi.Role
	for _, r := range emi.Roles() {
		if emi.Can([]emi.Role{r}, perm) {
			out = append(out, r)
		}
	}
	return out
}

// Investigate moves an open case to investigating.
func (c *Cases) Investigate(ctx context.Context, token string) (Case, error) {
	return c.act(ctx, token, "investigating", func(_ context.Context, cs *Case) (string, map[string]any, error) {
		if cs.Status != CaseOpen {
			return "", nil, emi.ErrCaseConflict.WithPublic("The case is %s already.", cs.Status)
		}
		cs.Status = CaseInvestigating
		return "", nil, nil
	})
}

// Close ends a case without suspicion, with the reason. A compliance hold
// the case placed must be lifted first (closing does not free money by
// itself), and a report waiting for approval must be withdrawn.
func (c *Cases) Close(ctx context.Context, token, reason string) (Case, error) {
	reason, err := text("reason", reason, 2000)
	if err != nil {
		return Case{}, err
	}
	return c.act(ctx, token, "closed", func(ctx context.Context, cs *Case) (string, map[string]any, error) {
		if h, held, err := c.store.HoldInForce(ctx, cs.Subject); err != nil {
			return "", nil, err
		} else if held && h.Case == cs.Token {
			return "", nil, emi.ErrCaseConflict.WithPublic("The case holds the customer's money: lift the compliance hold first.")
		}
		if _, pending, err := c.controls.PendingRequest(ctx, reportSubject(cs.Token)); err != nil {
			return "", nil, err
		} else if pending {
			return "", nil, emi.ErrCaseConflict.WithPublic("A report of this case waits for approval: withdraw or reject it first.")
		}
		now := c.now.At(ctx).UTC()
		cs.Status, cs.ClosedReason, cs.EndedAt = CaseClosed, reason, &now
		return reason, nil, nil
	})
}

// MaxCaseDocument is the largest document a case takes.
const MaxCaseDocument = 10 << 20

// caseDocumentTypes are the types a case takes, by sniffed content.
var caseDocumentTypes = []string{"application/pdf", "image/png", "image/jpeg", "text/plain"}

// AttachDocument attaches a document to a case: PDF, PNG, JPEG or plain
// text (by its content, not its name), at most 10 MiB, sealed at rest.
func (c *Cases) AttachDocument(ctx context.Context, token, filename string, content []byte) (CaseDocument, error) {
	filename = strings.TrimSpace(filename)
	if i := strings.LastIndexAny(filename, `/\`); i >= 0 {
		filename = filename[i+1:]
	}
	if filename == "" || utf8.RuneCountInString(filename) > 200 || strings.ContainsFunc(filename, func(r rune) bool { return r < 0x20 }) {
		return CaseDocument{}, emi.ErrReviewValidation.Field("file", "give the file a name of at most 200 characters")
	}
	if len(content) == 0 || len(content) > MaxCaseDocument {
		return CaseDocument{}, emi.ErrReviewValidation.Field("file", "must hold 1 byte to 10 MiB")
	}
	ct := ""
	for m := mimetype.Detect(content); m != nil; m = m.Parent() {
		if slices.Contains(caseDocumentTypes, m.String()) || (m.Is("text/plain") && utf8.Valid(content)) {
			ct = strings.SplitN(m.String(), ";", 2)[0]
			break
		}
	}
	if ct == "" {
		return CaseDocument{}, emi.ErrReviewValidation.Field("file", "must be a PDF, PNG, JPEG or plain text file (its content is "+mimetype.Detect(content).String()+")")
	}
	sum := sha256.Sum256(content)
	doc := CaseDocument{Token: kernel.NewToken(), Case: token, Filename: filename, ContentType: ct, Size: len(content),
		SHA256: hex.EncodeToString(sum[:]), UploadedBy: kernel.StaffOf(ctx).ActorID, UploadedAt: c.now.At(ctx).UTC()}
	_, err := c.act(ctx, token, "document", func(ctx context.Context, cs *Case) (string, map[string]any, error) {
		enc, err := c.sealer.Seal(content, CaseDocumentContext(doc.Token))
		if err != nil {
			return "", nil, err
		}
		if err := c.store.InsertCaseDocument(ctx, doc, enc); err != nil {
			return "", nil, err
		}
		return filename, map[string]any{"document": doc.Token, "size": doc.Size, "content_type": ct}, nil
	})
	return doc, err
}

// CaseDocumentContext binds a sealed value to its row (rekey re-seals it).
func CaseDocumentContext(token string) string { return "monitoring_case_documents.content:" + token }

// Document returns a case document and its content (WorkCases).
func (c *Cases) Document(ctx context.Context, caseToken, token string) (CaseDocument, []byte, error) {
	if err := WorkCases.Require(ctx); err != nil {
		return CaseDocument{}, nil, err
	}
	if !kernel.ValidToken(token) {
		return CaseDocument{}, nil, emi.ErrDocumentNotFound
	}
	d, enc, found, err := c.store.CaseDocument(ctx, token)
	if err != nil {
		return CaseDocument{}, nil, err
	}
	if !found || d.Case != caseToken {
		return CaseDocument{}, nil, emi.ErrDocumentNotFound
	}
	content, err := c.sealer.Open(enc, CaseDocumentContext(token))
	if err != nil {
		return CaseDocument{}, nil, err
	}
	if err := c.audit.Record(ctx, emi.AuditEntry{Action: "monitoring.case_document_read", ResourceType: "monitoring_case",
		ResourceToken: caseToken, Changes: map[string]any{"document": token}}); err != nil {
		return CaseDocument{}, nil, err
	}
	return d, content, nil
}

// InformationDue is how long a partner has to answer a request.
const InformationDue = 14 * 24 * time.Hour

// RequestInformation asks the partner about the case's subject: a topic
// of InformationTopics and the question as the partner reads it, which
// may not name a suspicion, a case, a report or the like (tippingOff).
// The partner gets information_request.created and reads and answers the
// request through the API.
func (c *Cases) RequestInformation(ctx context.Context, token, topic, question string) (InformationRequest, error) {
	question, err := text("question", question, 2000)
	if err != nil {
		return InformationRequest{}, err
	}
	if _, ok := InformationTopics[topic]; !ok {
		return InformationRequest{}, emi.ErrReviewValidation.Field("topic", "choose one of the topics")
	}
	lower := " " + strings.ToLower(question) + " "
	for _, w := range tippingOff {
		if strings.Contains(lower, w) {
			return InformationRequest{}, emi.ErrReviewValidation.Field("question",
				"must read as a routine review: it says \""+strings.TrimSpace(w)+"\", which could tip the customer off")
		}
	}
	var out InformationRequest
	_, err = c.act(ctx, token, "information_requested", func(ctx context.Context, cs *Case) (string, map[string]any, error) {
		now := c.now.At(ctx).UTC()
		out = InformationRequest{Token: kernel.NewToken(), PartnerID: cs.PartnerID, Case: cs.Token, Subject: cs.Subject, Topic: topic,
			Question: question, Status: RequestOpen, RequestedBy: kernel.StaffOf(ctx).ActorID, RequestedAt: now, DueAt: now.Add(InformationDue)}
		if err := c.store.InsertInformationRequest(ctx, out); err != nil {
			return "", nil, err
		}
		if cs.Status == CaseOpen {
			cs.Status = CaseInvestigating
		}
		if _, err := c.events.Emit(ctx, cs.PartnerID, emi.EventInformationRequestCreated, "information_request", out.Token,
			InformationRequestFields(out)); err != nil {
			return "", nil, err
		}
		return question, map[string]any{"request": out.Token, "topic": topic}, nil
	})
	return out, err
}

// InformationRequestFields is an information request as the partner
// reads it (API answer and event): the customer, the topic with its
// sentence, the question, the due date, the answer. Nothing else.
func InformationRequestFields(r InformationRequest) map[string]any {
	f := map[string]any{r.Subject.Kind: r.Subject.Token, "topic": r.Topic, "topic_description": InformationTopics[r.Topic],
		"question": r.Question, "status": r.Status, "requested_at": r.RequestedAt, "due_at": r.DueAt}
	if r.AnsweredAt != nil {
		f["answer"], f["answered_at"] = r.Answer, *r.AnsweredAt
	}
	return f
}

// PartnerInformationRequests lists a page of the calling partner's
// requests, newest first (q.Status "" all), after q.StartingAfter when it
// is set, and whether more follow the page. 11001 for a bad query, every
// problem at once (a cursor that is not one of the partner's requests
// included).
func (c *Cases) PartnerInformationRequests(ctx context.Context, q RequestList) ([]InformationRequest, bool, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return nil, false, err
	}
	var bad kernel.Problems
	if q.Status != "" && q.Status != RequestOpen && q.Status != RequestAnswered {
		bad.Add("status", "must be open or answered")
	}
	if q.Limit < 1 || q.Limit > MaxRequestList {
		bad.Add("limit", "must be a whole number from 1 to "+strconv.Itoa(MaxRequestList))
	}
	if q.StartingAfter != "" {
		found := false
		if kernel.ValidToken(q.StartingAfter) {
			list, err := c.store.InformationRequests(ctx, RequestFilter{PartnerID: p.PartnerID, Token: q.StartingAfter, Limit: 1})
			if err != nil {
				return nil, false, err
			}
			found = len(list) == 1
		}
		if !found {
			bad.Add("starting_after", "is not one of your information requests")
		}
	}
	if len(bad) > 0 {
		return nil, false, emi.ErrValidation.WithFields(bad...)
	}
	// One more than the page tells whether more follow.
	list, err := c.store.InformationRequests(ctx, RequestFilter{PartnerID: p.PartnerID, Status: q.Status,
		StartingAfter: q.StartingAfter, Limit: q.Limit + 1})
	if err != nil {
		return nil, false, err
	}
	if len(list) > q.Limit {
		return list[:q.Limit], true, nil
	}
	return list, false, nil
}

// PartnerInformationRequest returns one of the calling partner's requests;
// emi.ErrInformationRequestNotFound for any other token.
func (c *Cases) PartnerInformationRequest(ctx context.Context, token string) (InformationRequest, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return InformationRequest{}, err
	}
	if !kernel.ValidToken(token) {
		return InformationRequest{}, emi.ErrInformationRequestNotFound
	}
	list, err := c.store.InformationRequests(ctx, RequestFilter{PartnerID: p.PartnerID, Token: token, Limit: 1})
	if err != nil {
		return InformationRequest{}, err
	}
	if len(list) == 0 {
		return InformationRequest{}, emi.ErrInformationRequestNotFound
	}
	return list[0], nil
}

// AnswerInformationRequest records the partner's answer (once; 1 to
// 10,000 characters). The case's timeline shows it.
func (c *Cases) AnswerInformationRequest(ctx context.Context, token, answer string) (InformationRequest, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return InformationRequest{}, err
	}
	answer = strings.TrimSpace(answer)
	if answer == "" || utf8.RuneCountInString(answer) > 10000 || !utf8.ValidString(answer) {
		return InformationRequest{}, emi.ErrValidation.Field("answer", "write 1 to 10,000 characters")
	}
	if !kernel.ValidToken(token) {
		return InformationRequest{}, emi.ErrInformationRequestNotFound
	}
	var out InformationRequest
	err = c.tx.InTx(ctx, func(ctx context.Context) error {
		r, found, err := c.store.LockInformationRequest(ctx, p.PartnerID, token)
		if err != nil {
			return err
		}
		if !found {
			return emi.ErrInformationRequestNotFound
		}
		if r.Status != RequestOpen {
			return emi.ErrInformationRequestAnswered
		}
		now := c.now.At(ctx).UTC()
		if err := c.store.AnswerInformationRequest(ctx, token, answer, now); err != nil {
			return err
		}
		r.Status, r.Answer, r.AnsweredAt = RequestAnswered, answer, &now
		out = r
		if err := c.store.InsertCaseEvent(ctx, CaseEvent{Case: r.Case, At: now, Kind: "information_answered", Body: answer,
			Data: map[string]any{"request": r.Token}}); err != nil {
			return err
		}
		return c.audit.Record(ctx, emi.AuditEntry{Action: "information_request.answer", ResourceType: "information_request",
			ResourceToken: r.Token, PartnerID: p.PartnerID, Changes: map[string]any{"length": utf8.RuneCountInString(answer)}})
	})
	return out, err
}

// PlaceHold places a compliance hold on the case's subject: no money
// leaves their accounts until it is lifted.
func (c *Cases) PlaceHold(ctx context.Context, token, reason string) (Case, error) {
	reason, err := text("reason", reason, 2000)
	if err != nil {
		return Case{}, err
	}
	return c.act(ctx, token, "hold_placed", func(ctx context.Context, cs *Case) (string, map[string]any, error) {
		if _, held, err := c.store.HoldInForce(ctx, cs.Subject); err != nil {
			return "", nil, err
		} else if held {
			return "", nil, emi.ErrCaseConflict.WithPublic("A compliance hold is in force on this customer already.")
		}
		if err := c.store.InsertComplianceHold(ctx, ComplianceHold{Subject: cs.Subject, Case: cs.Token,
			PlacedBy: kernel.StaffOf(ctx).ActorID, PlacedAt: c.now.At(ctx).UTC(), Reason: reason}); err != nil {
			return "", nil, err
		}
		return reason, nil, nil
	})
}

// LiftHold lifts the compliance hold in force on the case's subject.
func (c *Cases) LiftHold(ctx context.Context, token, reason string) (Case, error) {
	reason, err := text("reason", reason, 2000)
	if err != nil {
		return Case{}, err
	}
	return c.act(ctx, token, "hold_lifted", func(ctx context.Context, cs *Case) (string, map[string]any, error) {
		h, held, err := c.store.HoldInForce(ctx, cs.Subject)
		if err != nil {
			return "", nil, err
		}
		if !held {
			return "", nil, emi.ErrCaseConflict.WithPublic("No compliance hold is in force on this customer.")
		}
		if err := c.store.LiftComplianceHold(ctx, h.ID, kernel.StaffOf(ctx).ActorID, c.now.At(ctx).UTC()); err != nil {
			return "", nil, err
		}
		return reason, map[string]any{"hold": h.ID}, nil
	})
}

// ListCases lists cases (status "" the ones not ended), oldest first.
func (c *Cases) ListCases(ctx context.Context, f CaseFilter) ([]CaseRow, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return nil, err
	}
	return c.store.Cases(ctx, f)
}

// CountActive counts the cases not ended (ViewAlerts).
func (c *Cases) CountActive(ctx context.Context) (int64, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return 0, err
	}
	return c.store.CountCases(ctx, CaseOpen, CaseInvestigating)
}

// View returns everything a case page shows (ViewAlerts).
func (c *Cases) View(ctx context.Context, token string) (CaseView, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return CaseView{}, err
	}
	if !kernel.ValidToken(token) {
		return CaseView{}, emi.ErrCaseNotFound
	}
	row, found, err := c.store.CaseRow(ctx, token)
	if err != nil {
		return CaseView{}, err
	}
	if !found {
		return CaseView{}, emi.ErrCaseNotFound
	}
	v := CaseView{CaseRow: row}
	if v.Alerts, err = c.store.AlertsOfCase(ctx, token); err != nil {
		return v, err
	}
	var ids []int64
	for _, a := range v.Alerts {
		for _, h := range a.Hits {
			if !slices.Contains(ids, h.Movement) {
				ids = append(ids, h.Movement)
			}
		}
	}
	if v.Movements, err = c.store.Movements(ctx, ids); err != nil {
		return v, err
	}
	if v.Events, err = c.store.CaseEvents(ctx, token); err != nil {
		return v, err
	}
	if v.Documents, err = c.store.CaseDocuments(ctx, token); err != nil {
		return v, err
	}
	if v.Requests, err = c.store.InformationRequests(ctx, RequestFilter{Case: token, Limit: 100}); err != nil {
		return v, err
	}
	if h, held, err := c.store.HoldInForce(ctx, row.Subject); err != nil {
		return v, err
	} else if held {
		v.Hold = &h
	}
	if v.Holds, err = c.monitor.store.Holds(ctx, HoldFilter{Subject: row.Subject, Limit: 50}); err != nil {
		return v, err
	}
	if err := c.reportView(ctx, &v); err != nil {
		return v, err
	}
	v.Officers, err = c.store.Officers(ctx, rolesWith(emi.PermReviewAML))
	return v, err
}
