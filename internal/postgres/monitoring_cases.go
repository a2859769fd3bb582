package postgres

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/monitoring"
)

// CaseStore implements monitoring.CaseStore: cases, their timelines,
// documents, information requests, compliance holds and reports.
type CaseStore struct {
	db *DB
}

// NewCaseStore returns the case store.
func NewCaseStore(db *DB) *CaseStore { return &CaseStore{db: db} }

var _ monitoring.CaseStore = (*CaseStore)(nil)

// LockAlerts implements monitoring.CaseStore.
func (s *CaseStore) LockAlerts(ctx context.Context, tokens []string) ([]monitoring.Alert, error) {
	var rows []alertRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+alertColumns+` FROM monitoring_alerts
		WHERE token = ANY($1::uuid[]) ORDER BY token FOR UPDATE`, pq.Array(tokens)); err != nil {
		return nil, Translate(err)
	}
	return alerts(rows)
}

func alerts(rows []alertRow) ([]monitoring.Alert, error) {
	out := make([]monitoring.Alert, len(rows))
	for i, r := range rows {
		a, err := r.alert()
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

type caseRow struct {
	Token        string         `db:"token"`
	PartnerID    string         `db:"partner_id"`
	SubjectKind  string         `db:"subject_kind"`
	SubjectToken string         `db:"subject_token"`
	Status       string         `db:"status"`
	Assignee     sql.NullString `db:"assignee"`
	OpenedBy     string         `db:"opened_by"`
	OpenedAt     time.Time      `db:"opened_at"`
	UpdatedAt    time.Time      `db:"updated_at"`
	ClosedReason string         `db:"closed_reason"`
	EndedAt      *time.Time     `db:"ended_at"`
}

const caseColumns = `c.token, c.partner_id, c.subject_kind, c.subject_token, c.status, c.assignee, c.opened_by, c.opened_at,
	c.updated_at, c.closed_reason, c.ended_at`

func (r caseRow) get() monitoring.Case {
	return monitoring.Case{Token: r.Token, PartnerID: r.PartnerID, Subject: monitoring.Subject{Kind: r.SubjectKind, Token: r.SubjectToken},
		Status: r.Status, Assignee: r.Assignee.String, OpenedBy: r.OpenedBy, OpenedAt: r.OpenedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		ClosedReason: r.ClosedReason, EndedAt: r.EndedAt}
}

// InsertCase implements monitoring.CaseStore.
func (s *CaseStore) InsertCase(ctx context.Context, c monitoring.Case) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO monitoring_cases (token, partner_id, subject_kind, subject_token, status,
		assignee, opened_by, opened_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`, c.Token, c.PartnerID, c.Subject.Kind,
		c.Subject.Token, c.Status, nullUUID(c.Assignee), c.OpenedBy, c.OpenedAt)
	return Translate(err)
}

// UpdateCase implements monitoring.CaseStore.
func (s *CaseStore) UpdateCase(ctx context.Context, c monitoring.Case) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE monitoring_cases SET status = $2, assignee = $3, updated_at = $4,
		closed_reason = $5, ended_at = $6 WHERE token = $1`, c.Token, c.Status, nullUUID(c.Assignee), c.UpdatedAt, c.ClosedReason, c.EndedAt)
	return Translate(err)
}

// LockCase implements monitoring.CaseStore.
func (s *CaseStore) LockCase(ctx context.Context, token string) (monitoring.Case, bool, error) {
	if !validUUID(token) {
		return monitoring.Case{}, false, nil
	}
	var r caseRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT `+caseColumns+` FROM monitoring_cases c WHERE c.token = $1 FOR UPDATE`, token)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.Case{}, false, nil
	}
	if err != nil {
		return monitoring.Case{}, false, Translate(err)
	}
	return r.get(), true, nil
}

type caseListRow struct {
	caseRow
	SubjectName  string `db:"subject_name"`
	PartnerName  string `db:"partner_name"`
	AssigneeName string `db:"assignee_name"`
	Alerts       int    `db:"alerts"`
}

const caseListSelect = `SELECT ` + caseColumns + `,
	coalesce(CASE c.subject_kind WHEN 'user' THEN trim(u.first_name || ' ' || u.last_name) ELSE m.name END, '') AS subject_name,
	p.name AS partner_name, coalesce(st.name, '') AS assignee_name,
	(SELECT count(*) FROM monitoring_alerts a WHERE a.case_token = c.token) AS alerts
	FROM monitoring_cases c
	JOIN partners p ON p.id = c.partner_id
	LEFT JOIN staff_users st ON st.id = c.assignee
	LEFT JOIN users u ON c.subject_kind = 'user' AND u.token = c.subject_token
	LEFT JOIN merchants m ON c.subject_kind = 'merchant' AND m.token = c.subject_token`

func (r caseListRow) get() monitoring.CaseRow {
	return monitoring.CaseRow{Case: r.caseRow.get(), SubjectName: r.SubjectName, PartnerName: r.PartnerName,
		AssigneeName: r.AssigneeName, Alerts: r.Alerts}
}

// CaseRow implements monitoring.CaseStore.
func (s *CaseStore) CaseRow(ctx context.Context, token string) (monitoring.CaseRow, bool, error) {
	var r caseListRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, caseListSelect+` WHERE c.token = $1`, token)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.CaseRow{}, false, nil
	}
	if err != nil {
		return monitoring.CaseRow{}, false, Translate(err)
	}
	return r.get(), true, nil
}

// Cases implements monitoring.CaseStore.
func (s *CaseStore) Cases(ctx context.Context, f monitoring.CaseFilter) ([]monitoring.CaseRow, error) {
	q := caseListSelect + ` WHERE true`
	var args []any
	if f.Status == "" {
		q += ` AND c.status IN ('open', 'investigating')`
	} else {
		args = append(args, f.Status)
		q += ` AND c.status = $` + strconv.Itoa(len(args))
	}
	if f.Subject.Token != "" {
		if !validUUID(f.Subject.Token) {
			return nil, nil
		}
		args = append(args, f.Subject.Kind, f.Subject.Token)
		q += ` AND c.subject_kind = $` + strconv.Itoa(len(args)-1) + ` AND c.subject_token = $` + strconv.Itoa(len(args))
	}
	limit := f.Limit
	if limit <= 0 || limit > 500 {
		limit = 500
	}
	args = append(args, limit)
	q += ` ORDER BY c.opened_at, c.token LIMIT $` + strconv.Itoa(len(args))
	var rows []caseListRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.CaseRow, len(rows))
	for i, r := range rows {
		out[i] = r.get()
	}
	return out, nil
}

// CountCases implements monitoring.CaseStore.
func (s *CaseStore) CountCases(ctx context.Context, status ...string) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM monitoring_cases WHERE status = ANY($1)`, pq.Array(status))
	return n, Translate(err)
}

// SetAlertsCase implements monitoring.CaseStore.
func (s *CaseStore) SetAlertsCase(ctx context.Context, tokens []string, caseToken string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE monitoring_alerts SET status = 'in_case', case_token = $2
		WHERE token = ANY($1::uuid[])`, pq.Array(tokens), caseToken)
	return Translate(err)
}

// AlertsOfCase implements monitoring.CaseStore.
func (s *CaseStore) AlertsOfCase(ctx context.Context, caseToken string) ([]monitoring.Alert, error) {
	var rows []alertRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+alertColumns+` FROM monitoring_alerts
		WHERE case_token = $1 ORDER BY raised_at, token`, caseToken); err != nil {
		return nil, Translate(err)
	}
	return alerts(rows)
}

// CaseOfAlert implements monitoring.CaseStore.
func (s *CaseStore) CaseOfAlert(ctx context.Context, alert string) (string, error) {
	if !validUUID(alert) {
		return "", nil
	}
	var c sql.NullString
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &c, `SELECT case_token::text FROM monitoring_alerts WHERE token = $1`, alert)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return c.String, Translate(err)
}

// Movements implements monitoring.CaseStore: the movements with their
// counterparty as the booking recorded it (a transfer's external party or
// other side, a card payment's merchant).
func (s *CaseStore) Movements(ctx context.Context, ids []int64) ([]monitoring.MovementView, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []struct {
		movementRow
		Counterparty string `db:"counterparty"`
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT mm.id, mm.partner_id, mm.subject_kind, mm.subject_token, mm.account,
		mm.program, mm.kind, mm.direction, mm.amount_minor, mm.currency, mm.eur_minor, mm.counterparty_key, mm.counterparty_country,
		mm.mcc, mm.declined, mm.at, mm.ref, mm.source, mm.screened,
		coalesce((SELECT coalesce(nullif(t.counterparty->>'name', ''), '') || coalesce(' ' || nullif(t.counterparty->>'iban', ''), '')
			FROM transfers t WHERE mm.source <> '' AND t.token::text = mm.source),
			(SELECT ca.merchant_name FROM card_authorizations ca WHERE mm.source <> '' AND ca.token::text = mm.source), '') AS counterparty
		FROM monitoring_movements mm WHERE mm.id = ANY($1) ORDER BY mm.at, mm.id`, pq.Int64Array(ids))
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.MovementView, len(rows))
	for i, r := range rows {
		out[i] = monitoring.MovementView{Movement: r.movement(), Counterparty: r.Counterparty}
	}
	return out, nil
}

// InsertCaseEvent implements monitoring.CaseStore.
func (s *CaseStore) InsertCaseEvent(ctx context.Context, e monitoring.CaseEvent) error {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return emi.ErrInternal.Wrap(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO monitoring_case_events (case_token, at, actor, kind, body, data)
		VALUES ($1, $2, $3, $4, $5, $6)`, e.Case, e.At, nullUUID(e.Actor), e.Kind, e.Body, jsonText(data))
	return Translate(err)
}

// CaseEvents implements monitoring.CaseStore.
func (s *CaseStore) CaseEvents(ctx context.Context, caseToken string) ([]monitoring.CaseEvent, error) {
	var rows []struct {
		ID        int64          `db:"id"`
		At        time.Time      `db:"at"`
		Actor     sql.NullString `db:"actor"`
		ActorName string         `db:"actor_name"`
		Kind      string         `db:"kind"`
		Body      string         `db:"body"`
		Data      []byte         `db:"data"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT e.id, e.at, e.actor, coalesce(st.name, '') AS actor_name, e.kind,
		e.body, e.data FROM monitoring_case_events e LEFT JOIN staff_users st ON st.id = e.actor
		WHERE e.case_token = $1 ORDER BY e.id`, caseToken); err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.CaseEvent, len(rows))
	for i, r := range rows {
		out[i] = monitoring.CaseEvent{ID: r.ID, Case: caseToken, At: r.At.UTC(), Actor: r.Actor.String, ActorName: r.ActorName,
			Kind: r.Kind, Body: r.Body}
		_ = json.Unmarshal(r.Data, &out[i].Data)
	}
	return out, nil
}

type caseDocRow struct {
	Token       string    `db:"token"`
	Case        string    `db:"case_token"`
	Filename    string    `db:"filename"`
	ContentType string    `db:"content_type"`
	Size        int       `db:"size"`
	SHA256      []byte    `db:"sha256"`
	UploadedBy  string    `db:"uploaded_by"`
	UploadedAt  time.Time `db:"uploaded_at"`
	ContentEnc  []byte    `db:"content_enc"`
}

func (r caseDocRow) get() monitoring.CaseDocument {
	return monitoring.CaseDocument{Token: r.Token, Case: r.Case, Filename: r.Filename, ContentType: r.ContentType, Size: r.Size,
		SHA256: hex.EncodeToString(r.SHA256), UploadedBy: r.UploadedBy, UploadedAt: r.UploadedAt.UTC()}
}

// InsertCaseDocument implements monitoring.CaseStore.
func (s *CaseStore) InsertCaseDocument(ctx context.Context, d monitoring.CaseDocument, contentEnc []byte) error {
	sum, err := hex.DecodeString(d.SHA256)
	if err != nil {
		return emi.ErrInternal.Wrap(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO monitoring_case_documents (token, case_token, filename, content_type, size,
		sha256, content_enc, uploaded_by, uploaded_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, d.Token, d.Case, d.Filename,
		d.ContentType, d.Size, sum, contentEnc, d.UploadedBy, d.UploadedAt)
	return Translate(err)
}

// CaseDocuments implements monitoring.CaseStore.
func (s *CaseStore) CaseDocuments(ctx context.Context, caseToken string) ([]monitoring.CaseDocument, error) {
	var rows []caseDocRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT token, case_token, filename, content_type, size, sha256,
		uploaded_by, uploaded_at FROM monitoring_case_documents WHERE case_token = $1 ORDER BY uploaded_at, token`, caseToken); err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.CaseDocument, len(rows))
	for i, r := range rows {
		out[i] = r.get()
	}
	return out, nil
}

// CaseDocument implements monitoring.CaseStore.
func (s *CaseStore) CaseDocument(ctx context.Context, token string) (monitoring.CaseDocument, []byte, bool, error) {
	var r caseDocRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT token, case_token, filename, content_type, size, sha256,
		uploaded_by, uploaded_at, content_enc FROM monitoring_case_documents WHERE token = $1`, token)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.CaseDocument{}, nil, false, nil
	}
	if err != nil {
		return monitoring.CaseDocument{}, nil, false, Translate(err)
	}
	return r.get(), r.ContentEnc, true, nil
}

type infoRequestRow struct {
	Token        string     `db:"token"`
	PartnerID    string     `db:"partner_id"`
	Case         string     `db:"case_token"`
	SubjectKind  string     `db:"subject_kind"`
	SubjectToken string     `db:"subject_token"`
	Topic        string     `db:"topic"`
	Question     string     `db:"question"`
	Status       string     `db:"status"`
	Answer       string     `db:"answer"`
	RequestedBy  string     `db:"requested_by"`
	RequestedAt  time.Time  `db:"requested_at"`
	DueAt        time.Time  `db:"due_at"`
	AnsweredAt   *time.Time `db:"answered_at"`
}

const infoRequestColumns = `token, partner_id, case_token, subject_kind, subject_token, topic, question, status, answer,
	requested_by, requested_at, due_at, answered_at`

func (r infoRequestRow) get() monitoring.InformationRequest {
	out := monitoring.InformationRequest{Token: r.Token, PartnerID: r.PartnerID, Case: r.Case,
		Subject: monitoring.Subject{Kind: r.SubjectKind, Token: r.SubjectToken}, Topic: r.Topic, Question: r.Question, Status: r.Status,
		Answer: r.Answer, RequestedBy: r.RequestedBy, RequestedAt: r.RequestedAt.UTC(), DueAt: r.DueAt.UTC()}
	if r.AnsweredAt != nil {
		at := r.AnsweredAt.UTC()
		out.AnsweredAt = &at
	}
	return out
}

// InsertInformationRequest implements monitoring.CaseStore.
func (s *CaseStore) InsertInformationRequest(ctx context.Context, r monitoring.InformationRequest) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO information_requests (token, partner_id, case_token, subject_kind,
		subject_token, topic, question, status, requested_by, requested_at, due_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		r.Token, r.PartnerID, r.Case, r.Subject.Kind, r.Subject.Token, r.Topic, r.Question, r.Status, r.RequestedBy, r.RequestedAt, r.DueAt)
	return Translate(err)
}

// InformationRequests implements monitoring.CaseStore.
func (s *CaseStore) InformationRequests(ctx context.Context, f monitoring.RequestFilter) ([]monitoring.InformationRequest, error) {
	q := `SELECT ` + infoRequestColumns + ` FROM information_requests WHERE true`
	var args []any
	add := func(col, v string) {
		args = append(args, v)
		q += ` AND ` + col + ` = $` + strconv.Itoa(len(args))
	}
	if f.PartnerID != "" {
		add("partner_id", f.PartnerID)
	}
	if f.Case != "" {
		add("case_token", f.Case)
	}
	if f.Status != "" {
		add("status", f.Status)
	}
	if f.Token != "" {
		add("token", f.Token)
	}
	if f.StartingAfter != "" {
		// The cursor: the partner's request (checked by the service);
		// for a partner's requests, one range of
		// information_requests_partner_order.
		args = append(args, f.StartingAfter)
		q += ` AND (requested_at, token) < (SELECT x.requested_at, x.token FROM information_requests x WHERE x.token = $` +
			strconv.Itoa(len(args)) + `)`
	}
	// 100, or the 101 a page of 100 reads to tell whether more follow.
	limit := f.Limit
	if limit <= 0 || limit > 101 {
		limit = 100
	}
	args = append(args, limit)
	q += ` ORDER BY requested_at DESC, token DESC LIMIT $` + strconv.Itoa(len(args))
	var rows []infoRequestRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.InformationRequest, len(rows))
	for i, r := range rows {
		out[i] = r.get()
	}
	return out, nil
}

// LockInformationRequest implements monitoring.CaseStore.
func (s *CaseStore) LockInformationRequest(ctx context.Context, partnerID, token string) (monitoring.InformationRequest, bool, error) {
	var r infoRequestRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT `+infoRequestColumns+` FROM information_requests
		WHERE token = $1 AND partner_id = $2 FOR UPDATE`, token, partnerID)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.InformationRequest{}, false, nil
	}
	if err != nil {
		return monitoring.InformationRequest{}, false, Translate(err)
	}
	return r.get(), true, nil
}

// AnswerInformationRequest implements monitoring.CaseStore.
func (s *CaseStore) AnswerInformationRequest(ctx context.Context, token, answer string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE information_requests SET status = 'answered', answer = $2, answered_at = $3
		WHERE token = $1 AND status = 'open'`, token, answer, at)
	return Translate(err)
}

// HoldInForce implements monitoring.CaseStore.
func (s *CaseStore) HoldInForce(ctx context.Context, subj monitoring.Subject) (monitoring.ComplianceHold, bool, error) {
	var r struct {
		ID       int64          `db:"id"`
		Case     sql.NullString `db:"case_token"`
		PlacedBy string         `db:"placed_by"`
		PlacedAt time.Time      `db:"placed_at"`
		Reason   string         `db:"reason"`
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT id, case_token, placed_by, placed_at, reason FROM compliance_holds
		WHERE subject_kind = $1 AND subject_token = $2 AND lifted_at IS NULL`, subj.Kind, subj.Token)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.ComplianceHold{}, false, nil
	}
	if err != nil {
		return monitoring.ComplianceHold{}, false, Translate(err)
	}
	return monitoring.ComplianceHold{ID: r.ID, Subject: subj, Case: r.Case.String, PlacedBy: r.PlacedBy, PlacedAt: r.PlacedAt.UTC(),
		Reason: r.Reason}, true, nil
}

// InsertComplianceHold implements monitoring.CaseStore; a second hold in
// force on the subject is a conflict (compliance_holds_in_force).
func (s *CaseStore) InsertComplianceHold(ctx context.Context, h monitoring.ComplianceHold) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO compliance_holds (subject_kind, subject_token, case_token, placed_by,
		placed_at, reason) VALUES ($1, $2, $3, $4, $5, $6)`, h.Subject.Kind, h.Subject.Token, nullUUID(h.Case), h.PlacedBy, h.PlacedAt, h.Reason)
	if UniqueViolation(err, "compliance_holds_in_force") {
		return emi.ErrCaseConflict.WithPublic("A compliance hold is in force on this customer already.")
	}
	return Translate(err)
}

// LiftComplianceHold implements monitoring.CaseStore.
func (s *CaseStore) LiftComplianceHold(ctx context.Context, id int64, by string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE compliance_holds SET lifted_by = $2, lifted_at = $3 WHERE id = $1 AND lifted_at IS NULL`,
		id, by, at)
	return Translate(err)
}

// Officers implements monitoring.CaseStore.
func (s *CaseStore) Officers(ctx context.Context, roles []emi.Role) ([]monitoring.Officer, error) {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	var out []monitoring.Officer
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT id::text AS id, name FROM staff_users
		WHERE disabled_at IS NULL AND roles && $1::text[] ORDER BY name, id`, pq.Array(names))
	return out, Translate(err)
}

// RuleStats implements monitoring.CaseStore: per rule, the alerts whose
// hits name it, and of the cases those alerts joined, how many ended
// closed (no suspicion) and reported.
func (s *CaseStore) RuleStats(ctx context.Context) ([]monitoring.RuleStat, error) {
	var out []monitoring.RuleStat
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `WITH hit AS (
			SELECT DISTINCT h->>'rule' AS rule, a.token, a.case_token FROM monitoring_alerts a, jsonb_array_elements(a.hits) h)
		SELECT hit.rule AS rule, count(DISTINCT hit.token) AS alerts, count(DISTINCT hit.case_token) AS cases,
			count(DISTINCT c.token) FILTER (WHERE c.status = 'closed') AS closed_no_suspicion,
			count(DISTINCT c.token) FILTER (WHERE c.status = 'reported') AS reported
		FROM hit LEFT JOIN monitoring_cases c ON c.token = hit.case_token
		GROUP BY hit.rule ORDER BY hit.rule`)
	return out, Translate(err)
}

type reportRow struct {
	Token        string         `db:"token"`
	Case         string         `db:"case_token"`
	Status       string         `db:"status"`
	Narrative    string         `db:"narrative"`
	Action       string         `db:"action"`
	Transactions []byte         `db:"transactions"`
	DraftedBy    string         `db:"drafted_by"`
	DraftedAt    time.Time      `db:"drafted_at"`
	ApprovedBy   sql.NullString `db:"approved_by"`
	ApprovedAt   *time.Time     `db:"approved_at"`
	XMLEnc       []byte         `db:"xml_enc"`
}

const reportColumns = `token, case_token, status, narrative, action, transactions, drafted_by, drafted_at, approved_by, approved_at, xml_enc`

func (r reportRow) get() monitoring.Report {
	out := monitoring.Report{Token: r.Token, Case: r.Case, Status: r.Status, Narrative: r.Narrative, Action: r.Action,
		DraftedBy: r.DraftedBy, DraftedAt: r.DraftedAt.UTC(), ApprovedBy: r.ApprovedBy.String, ApprovedAt: r.ApprovedAt,
		HasFile: len(r.XMLEnc) > 0}
	_ = json.Unmarshal(r.Transactions, &out.Transactions)
	return out
}

// LockReport implements monitoring.ReportStore.
func (s *CaseStore) LockReport(ctx context.Context, caseToken string) (monitoring.Report, bool, error) {
	var r reportRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT `+reportColumns+` FROM monitoring_reports WHERE case_token = $1 FOR UPDATE`, caseToken)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.Report{}, false, nil
	}
	if err != nil {
		return monitoring.Report{}, false, Translate(err)
	}
	return r.get(), true, nil
}

// UpsertReport implements monitoring.ReportStore.
func (s *CaseStore) UpsertReport(ctx context.Context, r monitoring.Report) error {
	tx, err := json.Marshal(r.Transactions)
	if err != nil {
		return emi.ErrInternal.Wrap(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO monitoring_reports (token, case_token, status, narrative, action, transactions,
		drafted_by, drafted_at) VALUES ($1, $2, 'draft', $3, $4, $5, $6, $7)
		ON CONFLICT (case_token) DO UPDATE SET narrative = EXCLUDED.narrative, action = EXCLUDED.action,
			transactions = EXCLUDED.transactions, drafted_by = EXCLUDED.drafted_by, drafted_at = EXCLUDED.drafted_at
		WHERE monitoring_reports.status = 'draft'`, r.Token, r.Case, r.Narrative, r.Action, jsonText(tx), r.DraftedBy, r.DraftedAt)
	return Translate(err)
}

// ApproveReport implements monitoring.ReportStore.
func (s *CaseStore) ApproveReport(ctx context.Context, token, by string, at time.Time, xmlEnc []byte) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE monitoring_reports SET status = 'approved', approved_by = $2, approved_at = $3,
		xml_enc = $4 WHERE token = $1 AND status = 'draft'`, token, by, at, xmlEnc)
	return Translate(err)
}

// ReportFile implements monitoring.ReportStore.
func (s *CaseStore) ReportFile(ctx context.Context, caseToken string) (monitoring.Report, []byte, bool, error) {
	var r reportRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT `+reportColumns+` FROM monitoring_reports WHERE case_token = $1`, caseToken)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.Report{}, nil, false, nil
	}
	if err != nil {
		return monitoring.Report{}, nil, false, Translate(err)
	}
	return r.get(), r.XMLEnc, true, nil
}
