package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/internal/service/people"
)

// OnboardingStore keeps applications, companies, members, check results
// and the adverse-media watch list.
type OnboardingStore struct {
	db *DB
}

// NewOnboardingStore returns the onboarding store.
func NewOnboardingStore(db *DB) *OnboardingStore { return &OnboardingStore{db: db} }

var (
	_ onboarding.ApplicationStore = (*OnboardingStore)(nil)
	_ onboarding.ReviewStore      = (*OnboardingStore)(nil)
	_ onboarding.SavedViewStore   = (*OnboardingStore)(nil)
	_ onboarding.MetricsStore     = (*OnboardingStore)(nil)
	// The merchants' ongoing screening (people) lists the onboarded
	// merchants and reads their applications through it.
	_ people.MerchantScreeningApps = (*OnboardingStore)(nil)
)

type applicationRow struct {
	Token           string         `db:"token"`
	PartnerID       string         `db:"partner_id"`
	PartnerName     string         `db:"partner_name"`
	Merchant        string         `db:"merchant"`
	Products        pq.StringArray `db:"products"`
	DueDiligence    string         `db:"due_diligence"`
	PayoutDetails   []byte         `db:"payout_details"`
	IPAddress       string         `db:"ip_address"`
	Fingerprint     string         `db:"fingerprint"`
	Processing      string         `db:"processing"`
	Status          string         `db:"status"`
	RiskScore       string         `db:"risk_score"`
	RiskPoints      int            `db:"risk_points"`
	RiskFactors     []byte         `db:"risk_factors"`
	Revision        int            `db:"revision"`
	CheckedRevision int            `db:"checked_revision"`
	Onboarded       *string        `db:"onboarded_merchant"`
	MID             *string        `db:"mid"`
	TID             *string        `db:"tid"`
	DecisionReason  string         `db:"decision_reason"`
	DecidedAt       *time.Time     `db:"decided_at"`
	CreatedAt       time.Time      `db:"created_at"`
	UpdatedAt       time.Time      `db:"updated_at"`
	CompanyFields   []byte         `db:"company_fields"`

	QueuedAt            *time.Time `db:"queued_at"`
	SLADueAt            *time.Time `db:"sla_due_at"`
	SLALeftSeconds      *float64   `db:"sla_left_seconds"`
	Assignee            *string    `db:"assignee"`
	AssigneeName        *string    `db:"assignee_name"`
	ClaimedAt           *time.Time `db:"claimed_at"`
	LastActivityAt      *time.Time `db:"last_activity_at"`
	FirstApprovalBy     *string    `db:"first_approval_by"`
	FirstApprovalByName *string    `db:"first_approval_by_name"`
	FirstApprovalAt     *time.Time `db:"first_approval_at"`
	FirstApprovalReason string     `db:"first_approval_reason"`
	ManualReview        bool       `db:"manual_review"`
	HasSanctionsHit     bool       `db:"has_sanctions_hit"`
}

const applicationSelect = `SELECT a.token, a.partner_id, p.name AS partner_name, a.merchant, a.products, a.due_diligence,
	a.payout_details, a.ip_address, a.fingerprint, a.processing, a.status, a.risk_score, a.risk_points, a.risk_factors,
	a.revision, a.checked_revision, a.onboarded_merchant, m.mid, m.tid, a.decision_reason, a.decided_at, a.created_at,
	a.updated_at, c.fields AS company_fields,
	a.queued_at, a.sla_due_at, extract(epoch FROM a.sla_left)::float8 AS sla_left_seconds, a.assignee::text AS assignee,
	(SELECT name FROM staff_users s WHERE s.id = a.assignee) AS assignee_name, a.claimed_at, a.last_activity_at,
	a.first_approval_by::text AS first_approval_by,
	(SELECT name FROM staff_users s WHERE s.id = a.first_approval_by) AS first_approval_by_name,
	a.first_approval_at, a.first_approval_reason, a.manual_review, a.has_sanctions_hit
	FROM applications a JOIN partners p ON p.id = a.partner_id
	LEFT JOIN companies c ON c.application = a.token
	LEFT JOIN merchants m ON m.token = a.onboarded_merchant`

func (r applicationRow) application() (emi.Application, error) {
	a := emi.Application{Token: r.Token, PartnerID: r.PartnerID, PartnerName: r.PartnerName, Merchant: r.Merchant,
		Products: r.Products, DueDiligence: r.DueDiligence, IPAddress: r.IPAddress, Fingerprint: r.Fingerprint,
		Processing: emi.Processing(r.Processing), Status: emi.ApplicationStatus(r.Status), RiskScore: r.RiskScore,
		RiskPoints: r.RiskPoints, Revision: r.Revision, CheckedRevision: r.CheckedRevision,
		DecisionReason: r.DecisionReason, DecidedAt: r.DecidedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.Onboarded != nil {
		a.OnboardedMerchant = *r.Onboarded
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	a.Review = emi.ReviewState{QueuedAt: r.QueuedAt, SLADueAt: r.SLADueAt, Assignee: str(r.Assignee),
		AssigneeName: str(r.AssigneeName), ClaimedAt: r.ClaimedAt, LastActivityAt: r.LastActivityAt,
		FirstApprovalBy: str(r.FirstApprovalBy), FirstApprovalByName: str(r.FirstApprovalByName),
		FirstApprovalAt: r.FirstApprovalAt, FirstApprovalReason: r.FirstApprovalReason,
		ManualReview: r.ManualReview, HasSanctionsHit: r.HasSanctionsHit}
	if r.SLALeftSeconds != nil {
		a.Review.SLALeft = time.Duration(*r.SLALeftSeconds * float64(time.Second))
	}
	if r.MID != nil {
		a.MID = *r.MID
	}
	if r.TID != nil {
		a.TID = *r.TID
	}
	if err := json.Unmarshal(r.PayoutDetails, &a.PayoutDetails); err != nil {
		return a, emi.Internal(err)
	}
	if err := json.Unmarshal(r.RiskFactors, &a.RiskFactors); err != nil {
		return a, emi.Internal(err)
	}
	if r.CompanyFields != nil {
		a.Company = &emi.CompanyFields{}
		if err := json.Unmarshal(r.CompanyFields, a.Company); err != nil {
			return a, emi.Internal(err)
		}
	}
	return a, nil
}

// InsertApplication implements onboarding.ApplicationStore.
func (s *OnboardingStore) InsertApplication(ctx context.Context, a emi.Application) error {
	pd, err := json.Marshal(a.PayoutDetails)
	if err != nil {
		return emi.Internal(err)
	}
	if a.PayoutDetails == nil {
		pd = []byte("[]")
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO applications (token, partner_id, merchant, products,
		due_diligence, payout_details, ip_address, fingerprint, processing, status, revision, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)`,
		a.Token, a.PartnerID, a.Merchant, pq.StringArray(a.Products), a.DueDiligence, jsonText(pd), a.IPAddress, a.Fingerprint,
		a.Processing, a.Status, a.Revision, a.CreatedAt)
	return Translate(err)
}

// Application implements onboarding.ApplicationStore.
func (s *OnboardingStore) Application(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Application, error) {
	if !validUUID(token) {
		return emi.Application{}, emi.ErrApplicationNotFound
	}
	q := applicationSelect + ` WHERE a.token = $1`
	args := []any{token}
	if partnerID != "" {
		q += ` AND a.partner_id = $2`
		args = append(args, partnerID)
	}
	if forUpdate {
		q += ` FOR UPDATE OF a`
	}
	var r applicationRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, q, args...); err != nil {
		return emi.Application{}, NotFound(err, emi.ErrApplicationNotFound)
	}
	a, err := r.application()
	if err != nil {
		return a, err
	}
	if a.Members, err = s.members(ctx, `WHERE application = $1 ORDER BY created_at, token`, a.Token); err != nil {
		return a, err
	}
	a.Checks, err = s.checks(ctx, `SELECT name, status, details, updated_at FROM application_checks WHERE application = $1`, a.Token)
	return a, err
}

func (s *OnboardingStore) checks(ctx context.Context, q string, args ...any) ([]emi.CheckResult, error) {
	var rows []struct {
		Name      string    `db:"name"`
		Status    string    `db:"status"`
		Details   []byte    `db:"details"`
		UpdatedAt time.Time `db:"updated_at"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, Translate(err)
	}
	order := map[string]int{}
	for i, n := range emi.CheckNames() {
		order[n] = i
	}
	out := make([]emi.CheckResult, 0, len(rows))
	for _, r := range rows {
		c := emi.CheckResult{Name: r.Name, Status: r.Status, UpdatedAt: r.UpdatedAt}
		if err := json.Unmarshal(r.Details, &c.Details); err != nil {
			return nil, emi.Internal(err)
		}
		out = append(out, c)
	}
	if !strings.Contains(q, "history") {
		sortChecks(out, order)
	}
	return out, nil
}

func sortChecks(cs []emi.CheckResult, order map[string]int) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && order[cs[j].Name] < order[cs[j-1].Name]; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// CheckHistory implements onboarding.ApplicationStore.
func (s *OnboardingStore) CheckHistory(ctx context.Context, application string) ([]emi.CheckResult, error) {
	if !validUUID(application) {
		return nil, emi.ErrApplicationNotFound
	}
	return s.checks(ctx, `SELECT name, status, details, at AS updated_at FROM application_check_history
		WHERE application = $1 ORDER BY at, id`, application)
}

// TouchApplication implements onboarding.ApplicationStore.
func (s *OnboardingStore) TouchApplication(ctx context.Context, token string) (int, error) {
	var rev int
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &rev, `UPDATE applications SET revision = revision + 1, updated_at = now(),
		status = CASE WHEN status IN ('approved', 'rejected') THEN status ELSE 'checking' END
		WHERE token = $1 RETURNING revision`, token)
	return rev, Translate(err)
}

// UpsertCompany implements onboarding.ApplicationStore.
func (s *OnboardingStore) UpsertCompany(ctx context.Context, partnerID, application string, c emi.CompanyFields) error {
	raw, err := json.Marshal(c)
	if err != nil {
		return emi.Internal(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO companies (application, partner_id, legal_name, trade_name, uic, country, fields)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (application) DO UPDATE SET legal_name = EXCLUDED.legal_name, trade_name = EXCLUDED.trade_name,
		uic = EXCLUDED.uic, country = EXCLUDED.country, fields = EXCLUDED.fields, updated_at = now()`,
		application, partnerID, c.LegalName, c.TradeName, c.UIC, c.Country, jsonText(raw))
	return Translate(err)
}

// storedMember is the member's fields column.
type storedMember struct {
	emi.MemberFields
	UIC          string `json:"uic,omitempty"`
	User         string `json:"user,omitempty"`
	PlaceOfBirth string `json:"place_of_birth,omitempty"`
	Nationality  string `json:"nationality,omitempty"`
	Birthday     string `json:"birthday,omitempty"`
}

type memberRow struct {
	Token            string         `db:"token"`
	Application      string         `db:"application"`
	PartnerID        string         `db:"partner_id"`
	Status           string         `db:"status"`
	Types            pq.StringArray `db:"types"`
	UniqueIdentifier string         `db:"unique_identifier"`
	Fields           []byte         `db:"fields"`
	CreatedAt        time.Time      `db:"created_at"`
	UpdatedAt        time.Time      `db:"updated_at"`
}

func (r memberRow) member() (emi.Member, error) {
	var f storedMember
	if err := json.Unmarshal(r.Fields, &f); err != nil {
		return emi.Member{}, emi.Internal(err)
	}
	return emi.Member{MemberFields: f.MemberFields, Token: r.Token, Application: r.Application, PartnerID: r.PartnerID,
		Status: r.Status, Type: r.Types, UIC: f.UIC, UniqueIdentifier: r.UniqueIdentifier, User: f.User,
		PlaceOfBirth: f.PlaceOfBirth, Birthday: f.Birthday, Nationality: f.Nationality,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

const memberColumns = `token, application, partner_id, status, types, unique_identifier, fields, created_at, updated_at`

func (s *OnboardingStore) members(ctx context.Context, where string, args ...any) ([]emi.Member, error) {
	var rows []memberRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+memberColumns+` FROM company_members `+where, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.Member, 0, len(rows))
	for _, r := range rows {
		m, err := r.member()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func memberFields(m emi.Member) ([]byte, error) {
	raw, err := json.Marshal(storedMember{MemberFields: m.MemberFields, UIC: m.UIC, User: m.User,
		PlaceOfBirth: m.PlaceOfBirth, Nationality: m.Nationality, Birthday: m.Birthday})
	if err != nil {
		return nil, emi.Internal(err)
	}
	return raw, nil
}

// InsertMember implements onboarding.ApplicationStore.
func (s *OnboardingStore) InsertMember(ctx context.Context, m emi.Member) error {
	raw, err := memberFields(m)
	if err != nil {
		return err
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO company_members (token, application, partner_id, status, types,
		first_name, last_name, legal_name, unique_identifier, birthday, fields, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)`,
		m.Token, m.Application, m.PartnerID, m.Status, pq.StringArray(m.Type), m.FirstName, m.LastName, m.LegalName,
		m.UniqueIdentifier, nullDate(m.Birthday), jsonText(raw), m.CreatedAt)
	return Translate(err)
}

// Member implements onboarding.ApplicationStore.
func (s *OnboardingStore) Member(ctx context.Context, application, token string) (emi.Member, error) {
	if !validUUID(token) || !validUUID(application) {
		return emi.Member{}, emi.ErrMemberNotFound
	}
	ms, err := s.members(ctx, `WHERE application = $1 AND token = $2`, application, token)
	if err != nil {
		return emi.Member{}, err
	}
	if len(ms) == 0 {
		return emi.Member{}, emi.ErrMemberNotFound
	}
	return ms[0], nil
}

// UpdateMember implements onboarding.ApplicationStore.
func (s *OnboardingStore) UpdateMember(ctx context.Context, m emi.Member) error {
	raw, err := memberFields(m)
	if err != nil {
		return err
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `UPDATE company_members SET status = $2, first_name = $3, last_name = $4,
		legal_name = $5, fields = $6, updated_at = $7 WHERE token = $1`,
		m.Token, m.Status, m.FirstName, m.LastName, m.LegalName, jsonText(raw), m.UpdatedAt)
	return Translate(err)
}

// SaveChecks implements onboarding.ApplicationStore: the latest result per
// check, and a history row whenever a result differs from the previous.
func (s *OnboardingStore) SaveChecks(ctx context.Context, application string, revision int, checks []emi.CheckResult) error {
	for _, c := range checks {
		d, err := json.Marshal(c.Details)
		if err != nil {
			return emi.Internal(err)
		}
		_, err = s.db.Ext(ctx).ExecContext(ctx, `WITH prev AS (
				SELECT status, details FROM application_checks WHERE application = $1 AND name = $2),
			up AS (
				INSERT INTO application_checks (application, name, status, details, revision, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (application, name) DO UPDATE SET status = EXCLUDED.status, details = EXCLUDED.details,
					revision = EXCLUDED.revision, updated_at = EXCLUDED.updated_at)
			INSERT INTO application_check_history (application, name, status, details, revision, at)
			SELECT $1, $2, $3, $4, $5, $6
			WHERE NOT EXISTS (SELECT 1 FROM prev WHERE prev.status = $3 AND prev.details = $4::jsonb)`,
			application, c.Name, c.Status, jsonText(d), revision, c.UpdatedAt)
		if err != nil {
			return Translate(err)
		}
	}
	return nil
}

// SetRisk implements onboarding.ApplicationStore.
func (s *OnboardingStore) SetRisk(ctx context.Context, application, score string, points int, factors []emi.RiskFactor) error {
	raw, err := json.Marshal(factors)
	if err != nil {
		return emi.Internal(err)
	}
	if factors == nil {
		raw = []byte("[]")
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `UPDATE applications SET risk_score = $2, risk_points = $3, risk_factors = $4
		WHERE token = $1`, application, score, points, jsonText(raw))
	return Translate(err)
}

// SetApplicationStatus implements onboarding.ApplicationStore.
func (s *OnboardingStore) SetApplicationStatus(ctx context.Context, token string, st emi.ApplicationStatus, checked int, reason, merchant string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE applications SET status = $2, checked_revision = $3,
		decision_reason = CASE WHEN $4 = '' THEN decision_reason ELSE $4 END,
		onboarded_merchant = coalesce($5::uuid, onboarded_merchant),
		decided_at = CASE WHEN $2 IN ('approved', 'rejected') THEN now() ELSE decided_at END, updated_at = now()
		WHERE token = $1`, token, st, checked, reason, nullUUID(merchant))
	return Translate(err)
}

// InsertOnboardedMerchant implements onboarding.ApplicationStore.
func (s *OnboardingStore) InsertOnboardedMerchant(ctx context.Context, partnerID, token, name, application, mid, tid string) error {
	null := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO merchants (token, partner_id, kind, name, application, mid, tid)
		VALUES ($1, $2, 'onboarded', $3, $4, $5, $6)`, token, partnerID, name, application, null(mid), null(tid))
	if UniqueViolation(err, "merchants_mid_key") || UniqueViolation(err, "merchants_tid_key") {
		return emi.ErrNonUniqueValue
	}
	return Translate(err)
}

// Applications implements onboarding.ApplicationStore.
func (s *OnboardingStore) Applications(ctx context.Context, f emi.ApplicationFilter) ([]emi.Application, error) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + itoa(len(args)) }
	if f.Status != "" {
		where = append(where, "a.status = "+arg(f.Status))
	}
	if f.PartnerID != "" {
		if !validUUID(f.PartnerID) {
			return nil, nil
		}
		where = append(where, "a.partner_id = "+arg(f.PartnerID))
	}
	if q := strings.TrimSpace(f.Q); q != "" {
		if validUUID(q) {
			where = append(where, "(a.token = "+arg(q)+" OR a.onboarded_merchant = "+arg(q)+")")
		} else {
			like := "%" + escapeLike(strings.ToLower(q)) + "%"
			where = append(where, "(lower(c.legal_name) LIKE "+arg(like)+" OR lower(c.trade_name) LIKE "+arg(like)+" OR c.uic = "+arg(q)+")")
		}
	}
	q := applicationSelect
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY a.created_at DESC, a.token DESC LIMIT " + arg(f.Limit)
	var rows []applicationRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.Application, 0, len(rows))
	for _, r := range rows {
		a, err := r.application()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Companies implements onboarding.ApplicationStore.
func (s *OnboardingStore) Companies(ctx context.Context, q string, limit int) ([]emi.CompanyRow, error) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + itoa(len(args)) }
	if q != "" {
		if validUUID(q) {
			where = append(where, "(a.onboarded_merchant = "+arg(q)+" OR a.token = "+arg(q)+" OR a.partner_id = "+arg(q)+")")
		} else {
			like := "%" + escapeLike(strings.ToLower(q)) + "%"
			where = append(where, "(lower(c.legal_name) LIKE "+arg(like)+" OR lower(c.trade_name) LIKE "+arg(like)+
				" OR c.uic = "+arg(q)+" OR lower(p.name) LIKE "+arg(like)+")")
		}
	}
	sql := `SELECT c.application, c.partner_id, p.name AS partner_name, c.legal_name, c.trade_name, c.uic, c.country,
		a.status, coalesce(a.onboarded_merchant::text, '') AS onboarded_merchant, c.updated_at
		FROM companies c JOIN applications a ON a.token = c.application JOIN partners p ON p.id = c.partner_id`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY c.updated_at DESC LIMIT " + arg(limit)
	var out []emi.CompanyRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, sql, args...)
	return out, Translate(err)
}

// MembersLike implements onboarding.ApplicationStore.
func (s *OnboardingStore) MembersLike(ctx context.Context, m emi.Member) ([]emi.Member, error) {
	if m.UniqueIdentifier != "" {
		return s.members(ctx, `WHERE unique_identifier = $1 OR (lower(last_name) = lower($2) AND lower(first_name) = lower($3)
			AND birthday IS NOT DISTINCT FROM $4::date AND last_name <> '') ORDER BY created_at`,
			m.UniqueIdentifier, m.LastName, m.FirstName, nullDate(m.Birthday))
	}
	if m.LastName == "" {
		return s.members(ctx, `WHERE lower(legal_name) = lower($1) AND legal_name <> '' ORDER BY created_at`, m.LegalName)
	}
	return s.members(ctx, `WHERE lower(last_name) = lower($1) AND lower(first_name) = lower($2)
		AND birthday IS NOT DISTINCT FROM $3::date ORDER BY created_at`, m.LastName, m.FirstName, nullDate(m.Birthday))
}

// PendingApplications implements onboarding.ApplicationStore.
func (s *OnboardingStore) PendingApplications(ctx context.Context) ([]string, error) {
	var out []string
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT token::text FROM applications
		WHERE status IN ('checking', 'in_review') ORDER BY created_at`)
	return out, Translate(err)
}

// CountApplications implements onboarding.ApplicationStore.
func (s *OnboardingStore) CountApplications(ctx context.Context, st emi.ApplicationStatus) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM applications WHERE status = $1`, st)
	return n, Translate(err)
}

// OnboardedMerchantsAfter implements people.MerchantScreeningApps: the
// onboarded merchants whose application is approved, in token order after
// after ("" from the start).
func (s *OnboardingStore) OnboardedMerchantsAfter(ctx context.Context, after string, limit int) ([]people.ScreenedMerchant, error) {
	if after != "" && !validUUID(after) {
		return nil, nil
	}
	var out []people.ScreenedMerchant
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT m.token::text AS token, m.partner_id::text AS partner_id,
		m.name, a.token::text AS application
		FROM merchants m JOIN applications a ON a.token = m.application
		WHERE m.kind = 'onboarded' AND a.status = 'approved' AND ($1 = '' OR m.token > $1::uuid)
		ORDER BY m.token LIMIT $2`, after, limit)
	return out, Translate(err)
}
