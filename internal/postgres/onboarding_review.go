package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
)

// EnterQueue implements onboarding.ReviewStore: the application waits for an
// underwriter from at, due at due.
func (s *OnboardingStore) EnterQueue(ctx context.Context, token string, at, due time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE applications SET queued_at = coalesce(queued_at, $2),
		sla_due_at = $3, sla_left = NULL WHERE token = $1`, token, at, due)
	return Translate(err)
}

// PauseSLA implements onboarding.ReviewStore.
func (s *OnboardingStore) PauseSLA(ctx context.Context, token string, left time.Duration) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE applications SET sla_left = make_interval(secs => $2), sla_due_at = NULL
		WHERE token = $1`, token, left.Seconds())
	return Translate(err)
}

// SetReviewFlags implements onboarding.ReviewStore.
func (s *OnboardingStore) SetReviewFlags(ctx context.Context, token string, manual, sanctionsHit bool) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE applications SET manual_review = $2, has_sanctions_hit = $3 WHERE token = $1`,
		token, manual, sanctionsHit)
	return Translate(err)
}

// Claim implements onboarding.ReviewStore: staff takes the application unless
// someone else holds a live claim (expired after emi.ClaimTTL of
// inactivity). One UPDATE decides, so two underwriters racing get one
// winner.
func (s *OnboardingStore) Claim(ctx context.Context, token, staff string, now time.Time) (bool, error) {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE applications SET
		claimed_at = CASE WHEN assignee = $2 AND last_activity_at >= $3 THEN claimed_at ELSE $4 END,
		assignee = $2, last_activity_at = $4
		WHERE token = $1 AND status IN ('in_review', 'information_requested', 'checking')
		AND (assignee IS NULL OR assignee = $2 OR last_activity_at < $3)`,
		token, staff, now.Add(-emi.ClaimTTL), now)
	if err != nil {
		return false, Translate(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Assign implements onboarding.ReviewStore (nil staff releases).
func (s *OnboardingStore) Assign(ctx context.Context, token, staff string, now time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE applications SET assignee = $2,
		claimed_at = CASE WHEN $2::uuid IS NULL THEN NULL ELSE $3::timestamptz END,
		last_activity_at = CASE WHEN $2::uuid IS NULL THEN NULL ELSE $3::timestamptz END WHERE token = $1`,
		token, nullUUID(staff), now)
	return Translate(err)
}

// TouchClaim implements onboarding.ReviewStore: the assignee's activity keeps
// the claim alive.
func (s *OnboardingStore) TouchClaim(ctx context.Context, token, staff string, now time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE applications SET last_activity_at = $3
		WHERE token = $1 AND assignee = $2 AND last_activity_at >= $4`, token, staff, now, now.Add(-emi.ClaimTTL))
	return Translate(err)
}

// NextUnclaimed implements onboarding.ReviewStore: the oldest matching
// application nobody holds, locked (SKIP LOCKED: two underwriters pressing
// "next" at once get different applications).
func (s *OnboardingStore) NextUnclaimed(ctx context.Context, f emi.QueueFilter, staff string, now time.Time) (string, error) {
	f.Tab = emi.AppInReview
	f.Assignee = "none"
	where, args := queueWhere(f, staff, now)
	// Never one whose first approval is the caller's: the second must be
	// another person's, so "take next" after a first approval does not
	// hand the same application back.
	args = append(args, staff)
	where += " AND a.first_approval_by IS DISTINCT FROM $" + itoa(len(args)) + "::uuid"
	var token string
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &token, `SELECT a.token FROM applications a
		LEFT JOIN companies c ON c.application = a.token WHERE `+where+`
		ORDER BY a.queued_at, a.token LIMIT 1 FOR UPDATE OF a SKIP LOCKED`, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return token, Translate(err)
}

// queueWhere builds the queue's filter.
func queueWhere(f emi.QueueFilter, staff string, now time.Time) (string, []any) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + itoa(len(args)) }
	tab := f.Tab
	if tab == "" {
		tab = emi.AppInReview
	}
	where = append(where, "a.status = "+arg(tab))
	if f.PartnerID != "" {
		where = append(where, "a.partner_id = "+arg(f.PartnerID))
	}
	if f.Risk != "" {
		where = append(where, "a.risk_score = "+arg(f.Risk))
	}
	if f.Product != "" {
		where = append(where, arg(f.Product)+" = ANY(a.products)")
	}
	if f.AgeOver > 0 {
		where = append(where, "coalesce(a.queued_at, a.created_at) < "+arg(now.Add(-f.AgeOver)))
	}
	if f.HasSanctionsHit {
		where = append(where, "a.has_sanctions_hit")
	}
	if f.NearSLA {
		where = append(where, "a.sla_due_at < "+arg(now.Add(4*time.Hour)))
	}
	switch f.Assignee {
	case "":
	case "none":
		where = append(where, "(a.assignee IS NULL OR a.last_activity_at < "+arg(now.Add(-emi.ClaimTTL))+")")
	case "me":
		where = append(where, "a.assignee = "+arg(staff)+" AND a.last_activity_at >= "+arg(now.Add(-emi.ClaimTTL)))
	default:
		where = append(where, "a.assignee = "+arg(f.Assignee)+" AND a.last_activity_at >= "+arg(now.Add(-emi.ClaimTTL)))
	}
	return strings.Join(where, " AND "), args
}

// Queue implements onboarding.ReviewStore: a page of the queue (keyset on the
// sort key and token) and the count of every tab.
func (s *OnboardingStore) Queue(ctx context.Context, f emi.QueueFilter, staff string, now time.Time) (emi.QueuePage, error) {
	where, args := queueWhere(f, staff, now)
	arg := func(v any) string { args = append(args, v); return "$" + itoa(len(args)) }
	order := "coalesce(a.queued_at, a.created_at), a.token"
	if f.Sort == "risk" {
		order = "a.risk_points DESC, coalesce(a.queued_at, a.created_at), a.token"
	}
	if f.After != "" {
		// The cursor is "points|unix-nanos|token".
		var pts int
		var nanos int64
		var tok string
		if _, err := fmt.Sscanf(strings.ReplaceAll(f.After, "|", " "), "%d %d %s", &pts, &nanos, &tok); err == nil && validUUID(tok) {
			at := time.Unix(0, nanos).UTC()
			if f.Sort == "risk" {
				where += " AND (-a.risk_points, coalesce(a.queued_at, a.created_at), a.token) > (" + arg(-pts) + ", " + arg(at) + ", " + arg(tok) + ")"
			} else {
				where += " AND (coalesce(a.queued_at, a.created_at), a.token) > (" + arg(at) + ", " + arg(tok) + ")"
			}
		}
	}
	limit := f.Limit
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	var rows []struct {
		Token        string         `db:"token"`
		PartnerName  string         `db:"partner_name"`
		LegalName    *string        `db:"legal_name"`
		Products     pq.StringArray `db:"products"`
		RiskScore    string         `db:"risk_score"`
		RiskPoints   int            `db:"risk_points"`
		Status       string         `db:"status"`
		QueuedAt     *time.Time     `db:"queued_at"`
		SLADueAt     *time.Time     `db:"sla_due_at"`
		Assignee     *string        `db:"assignee"`
		AssigneeName *string        `db:"assignee_name"`
		LastActivity *time.Time     `db:"last_activity_at"`
		FirstBy      *string        `db:"first_approval_by"`
		HasHit       bool           `db:"has_sanctions_hit"`
		CreatedAt    time.Time      `db:"created_at"`
	}
	q := `SELECT a.token, p.name AS partner_name, c.legal_name, a.products, a.risk_score, a.risk_points, a.status,
		a.queued_at, a.sla_due_at, a.assignee::text AS assignee, st.name AS assignee_name, a.last_activity_at,
		a.first_approval_by::text AS first_approval_by, a.has_sanctions_hit, a.created_at
		FROM applications a JOIN partners p ON p.id = a.partner_id
		LEFT JOIN companies c ON c.application = a.token
		LEFT JOIN staff_users st ON st.id = a.assignee
		WHERE ` + where + ` ORDER BY ` + order + ` LIMIT ` + arg(limit+1)
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return emi.QueuePage{}, Translate(err)
	}
	page := emi.QueuePage{Counts: map[emi.ApplicationStatus]int64{}}
	for i, r := range rows {
		if i == limit {
			last := rows[limit-1]
			at := last.CreatedAt
			if last.QueuedAt != nil {
				at = *last.QueuedAt
			}
			page.Next = fmt.Sprintf("%d|%d|%s", last.RiskPoints, at.UnixNano(), last.Token)
			break
		}
		row := emi.QueueRow{Token: r.Token, PartnerName: r.PartnerName, Products: r.Products, RiskScore: r.RiskScore,
			RiskPoints: r.RiskPoints, Status: emi.ApplicationStatus(r.Status), QueuedAt: r.QueuedAt, SLADueAt: r.SLADueAt,
			AwaitingSecond: r.FirstBy != nil, HasSanctionsHit: r.HasHit, CreatedAt: r.CreatedAt}
		if r.LegalName != nil {
			row.LegalName = *r.LegalName
		}
		if r.Assignee != nil && r.LastActivity != nil && now.Sub(*r.LastActivity) < emi.ClaimTTL {
			row.Assignee, row.Claimed = *r.Assignee, true
			if r.AssigneeName != nil {
				row.AssigneeName = *r.AssigneeName
			}
		}
		page.Rows = append(page.Rows, row)
	}
	var counts []struct {
		Status string `db:"status"`
		N      int64  `db:"n"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &counts, `SELECT status, count(*) AS n FROM applications
		WHERE status IN ('checking', 'in_review', 'information_requested') GROUP BY status`); err != nil {
		return page, Translate(err)
	}
	for _, c := range counts {
		page.Counts[emi.ApplicationStatus(c.Status)] = c.N
	}
	return page, nil
}

// EvidenceStamp implements onboarding.ReviewStore: it changes whenever what
// an underwriter sees of the application changes (a partner's change raises
// the revision; a new check result adds a history row; a first approval).
func (s *OnboardingStore) EvidenceStamp(ctx context.Context, token string) (string, error) {
	var stamp string
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &stamp, `SELECT a.revision || '.' ||
		coalesce((SELECT max(id) FROM application_check_history h WHERE h.application = a.token), 0) || '.' ||
		coalesce(extract(epoch FROM a.first_approval_at)::bigint, 0)
		FROM applications a WHERE a.token = $1`, token)
	return stamp, NotFound(err, emi.ErrApplicationNotFound)
}

// SetFirstApproval implements onboarding.ReviewStore.
func (s *OnboardingStore) SetFirstApproval(ctx context.Context, token, staff, reason string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE applications SET first_approval_by = $2, first_approval_reason = $3,
		first_approval_at = $4 WHERE token = $1`, token, staff, reason, at)
	return Translate(err)
}

// InsertDecision implements onboarding.ReviewStore.
func (s *OnboardingStore) InsertDecision(ctx context.Context, d emi.DecisionRecord) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO application_decisions (application, action, reason_code, text,
		staff_id, at, snapshot) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		d.Application, d.Action, d.ReasonCode, d.Text, d.StaffID, d.At, jsonText(d.Snapshot))
	return Translate(err)
}

// Decisions implements onboarding.ReviewStore.
func (s *OnboardingStore) Decisions(ctx context.Context, token string) ([]emi.DecisionRecord, error) {
	var out []emi.DecisionRecord
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT d.id, d.application, d.action, d.reason_code, d.text,
		d.staff_id, coalesce(st.name, '') AS staff_name, d.at, d.snapshot FROM application_decisions d
		LEFT JOIN staff_users st ON st.id = d.staff_id WHERE d.application = $1 ORDER BY d.at, d.id`, token)
	return out, Translate(err)
}

// InsertNote implements onboarding.ReviewStore.
func (s *OnboardingStore) InsertNote(ctx context.Context, n emi.Note) (int64, error) {
	var id int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &id, `INSERT INTO application_notes (application, parent_id, author, body,
		mentions, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
		n.Application, n.ParentID, n.Author, n.Body, pq.StringArray(n.Mentions), n.CreatedAt)
	return id, Translate(err)
}

// Notes implements onboarding.ReviewStore.
func (s *OnboardingStore) Notes(ctx context.Context, token string) ([]emi.Note, error) {
	var rows []struct {
		emi.Note
		M pq.StringArray `db:"mentions"`
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT n.id, n.application, n.parent_id, n.author,
		coalesce(st.name, '') AS author_name, n.body, n.mentions::text[] AS mentions, n.created_at FROM application_notes n
		LEFT JOIN staff_users st ON st.id = n.author WHERE n.application = $1 ORDER BY n.id`, token)
	out := make([]emi.Note, 0, len(rows))
	for _, r := range rows {
		n := r.Note
		n.Mentions = r.M
		out = append(out, n)
	}
	return out, Translate(err)
}

// NoteExists implements onboarding.ReviewStore.
func (s *OnboardingStore) NoteExists(ctx context.Context, token string, id int64) (bool, error) {
	var ok bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &ok, `SELECT EXISTS (SELECT 1 FROM application_notes WHERE application = $1 AND id = $2)`, token, id)
	return ok, Translate(err)
}

// InsertApplicationFalsePositive implements onboarding.ReviewStore: the
// memory of a two-person false positive (by proposed, confirmedBy
// confirmed). A one-person memory of the same entry is upgraded.
func (s *OnboardingStore) InsertApplicationFalsePositive(ctx context.Context, partnerID string, key []byte, list, entry, fingerprint, application, reason, by, confirmedBy string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO aml_false_positives (partner_id, person_key, list, entry_id,
		fingerprint, application, reason, decided_by, confirmed_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (partner_id, person_key, list, entry_id, fingerprint) DO UPDATE SET confirmed_by = EXCLUDED.confirmed_by,
			decided_by = EXCLUDED.decided_by, reason = EXCLUDED.reason, application = EXCLUDED.application,
			check_token = NULL, created_at = EXCLUDED.created_at
		WHERE aml_false_positives.confirmed_by IS NULL`, partnerID, key, list, entry, fingerprint, application, reason, by, confirmedBy, at)
	return Translate(err)
}

// ConfirmHitDecision implements onboarding.ReviewStore: the second person of
// a proposed false positive. Returns emi.ErrReviewClosed when the hit has
// no proposal waiting for confirmation.
func (s *OnboardingStore) ConfirmHitDecision(ctx context.Context, application, key, by string, at time.Time) error {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE application_hit_decisions SET confirmed_by = $3, confirmed_at = $4
		WHERE application = $1 AND hit_key = $2 AND decision = 'false_positive' AND confirmed_by IS NULL`, application, key, by, at)
	if err != nil {
		return Translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return emi.ErrReviewClosed.WithDetail("no false positive waits for confirmation")
	}
	return nil
}

// OverrideHitDecision implements onboarding.ReviewStore: a proposed false
// positive contradicted by a true match. Returns emi.ErrReviewClosed when
// the hit has no proposal waiting for confirmation.
func (s *OnboardingStore) OverrideHitDecision(ctx context.Context, application, key, decision, reason, by string, at time.Time) error {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE application_hit_decisions SET decision = $3, reason = $4, staff_id = $5, at = $6
		WHERE application = $1 AND hit_key = $2 AND decision = 'false_positive' AND confirmed_by IS NULL`, application, key, decision, reason, by, at)
	if err != nil {
		return Translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return emi.ErrReviewClosed.WithDetail("no false positive waits for confirmation")
	}
	return nil
}

// InsertHitDecision implements onboarding.ReviewStore. Returns
// emi.ErrReviewClosed when the hit is already decided.
func (s *OnboardingStore) InsertHitDecision(ctx context.Context, application, key, decision, reason, by string, at time.Time) error {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO application_hit_decisions (application, hit_key, decision, reason, staff_id, at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, application, key, decision, reason, by, at)
	if err != nil {
		return Translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return emi.ErrReviewClosed.WithDetail("hit already decided")
	}
	return nil
}

// HitDecisions implements onboarding.ReviewStore.
func (s *OnboardingStore) HitDecisions(ctx context.Context, application string) (map[string]emi.HitDecisionRecord, error) {
	var rows []emi.HitDecisionRecord
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT d.hit_key, d.decision, d.reason, d.staff_id::text AS staff_id,
		coalesce(st.name, '') AS staff_name, d.at, coalesce(d.confirmed_by::text, '') AS confirmed_by,
		coalesce(cf.name, '') AS confirmed_by_name, d.confirmed_at
		FROM application_hit_decisions d LEFT JOIN staff_users st ON st.id = d.staff_id
		LEFT JOIN staff_users cf ON cf.id = d.confirmed_by
		WHERE d.application = $1`, application)
	out := make(map[string]emi.HitDecisionRecord, len(rows))
	for _, r := range rows {
		out[r.Key] = r
	}
	return out, Translate(err)
}

// SavedViews implements onboarding.SavedViewStore.
func (s *OnboardingStore) SavedViews(ctx context.Context, staff string) ([]emi.SavedView, error) {
	var out []emi.SavedView
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT id, name, query FROM saved_views WHERE staff_id = $1 ORDER BY name`, staff)
	return out, Translate(err)
}

// InsertSavedView implements onboarding.SavedViewStore (a name already used
// by the same user is replaced).
func (s *OnboardingStore) InsertSavedView(ctx context.Context, staff string, v emi.SavedView) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO saved_views (id, staff_id, name, query) VALUES ($1, $2, $3, $4)
		ON CONFLICT (staff_id, name) DO UPDATE SET query = EXCLUDED.query`, v.ID, staff, v.Name, v.Query)
	return Translate(err)
}

// DeleteSavedView implements onboarding.SavedViewStore.
func (s *OnboardingStore) DeleteSavedView(ctx context.Context, staff, id string) error {
	if !validUUID(id) {
		return nil
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM saved_views WHERE staff_id = $1 AND id = $2`, staff, id)
	return Translate(err)
}

// ReviewMetrics implements onboarding.MetricsStore.
func (s *OnboardingStore) ReviewMetrics(ctx context.Context, now time.Time) (onboarding.Metrics, error) {
	m := onboarding.Metrics{Counts: map[emi.ApplicationStatus]int64{}}
	var counts []struct {
		Status string `db:"status"`
		N      int64  `db:"n"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &counts, `SELECT status, count(*) AS n FROM applications GROUP BY status`); err != nil {
		return m, Translate(err)
	}
	for _, c := range counts {
		m.Counts[emi.ApplicationStatus(c.Status)] = c.N
	}
	var age struct {
		A int64 `db:"a"`
		B int64 `db:"b"`
		C int64 `db:"c"`
		D int64 `db:"d"`
		E int64 `db:"e"`
	}
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &age, `SELECT
		count(*) FILTER (WHERE w < interval '4 hours') AS a,
		count(*) FILTER (WHERE w >= interval '4 hours' AND w < interval '1 day') AS b,
		count(*) FILTER (WHERE w >= interval '1 day' AND w < interval '3 days') AS c,
		count(*) FILTER (WHERE w >= interval '3 days' AND w < interval '7 days') AS d,
		count(*) FILTER (WHERE w >= interval '7 days') AS e
		FROM (SELECT $1 - coalesce(queued_at, created_at) AS w FROM applications WHERE status = 'in_review') q`, now); err != nil {
		return m, Translate(err)
	}
	m.Ageing = []onboarding.Bucket{{Label: "< 4 h", Count: age.A}, {Label: "4 h – 1 d", Count: age.B}, {Label: "1 – 3 d", Count: age.C},
		{Label: "3 – 7 d", Count: age.D}, {Label: "> 7 d", Count: age.E}}
	var days []struct {
		Day      time.Time `db:"day"`
		Approved int64     `db:"approved"`
		Rejected int64     `db:"rejected"`
		Info     int64     `db:"info"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &days, `SELECT d::date::timestamptz AS day,
		count(x.id) FILTER (WHERE x.action = 'approved') AS approved,
		count(x.id) FILTER (WHERE x.action = 'rejected') AS rejected,
		count(x.id) FILTER (WHERE x.action = 'information_requested') AS info
		FROM generate_series(($1::timestamptz - interval '29 days')::date, $1::date, interval '1 day') d
		LEFT JOIN application_decisions x ON x.at >= d AND x.at < d + interval '1 day'
		GROUP BY d ORDER BY d`, now); err != nil {
		return m, Translate(err)
	}
	for _, d := range days {
		m.DecisionsPerDay = append(m.DecisionsPerDay, onboarding.DayCount{Day: d.Day, Approved: d.Approved, Rejected: d.Rejected, InfoRequested: d.Info})
	}
	var median *float64
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &median, `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM decided_at - coalesce(queued_at, created_at)))
		FROM applications WHERE decided_at >= $1::timestamptz - interval '30 days'`, now); err != nil {
		return m, Translate(err)
	}
	if median != nil {
		m.MedianToDecision = time.Duration(*median * float64(time.Second))
	}
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &m.SLABreaches, `SELECT count(*) FROM applications WHERE status = 'in_review' AND sla_due_at < $1`, now); err != nil {
		return m, Translate(err)
	}
	var per []struct {
		Name  string `db:"name"`
		Count int64  `db:"n"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &per, `SELECT coalesce(st.name, x.staff_id::text) AS name, count(*) AS n
		FROM application_decisions x LEFT JOIN staff_users st ON st.id = x.staff_id
		WHERE x.at >= $1::timestamptz - interval '30 days' GROUP BY 1 ORDER BY n DESC, name LIMIT 20`, now); err != nil {
		return m, Translate(err)
	}
	for _, p := range per {
		m.PerUnderwriter = append(m.PerUnderwriter, onboarding.NamedCount{Name: p.Name, Count: p.Count})
	}
	return m, nil
}

// GenerateApplications inserts n synthetic applications of a partner for
// benchmarks, set-based: each with a company, a UBO, the four check results
// and six check-history rows (n * 10 check results), spread over 60 days,
// about 12 % in review, 3 % information requested, 3 % checking, the rest
// decided. Only for sandbox databases (the command refuses otherwise).
func (s *OnboardingStore) GenerateApplications(ctx context.Context, partnerID, merchant string, n int) error {
	err := s.db.InTx(ctx, func(ctx context.Context) error {
		x := s.db.Ext(ctx)
		type step struct {
			q    string
			args []any
		}
		steps := []step{
			{`CREATE TEMP TABLE gen ON COMMIT DROP AS
			 SELECT gen_random_uuid() AS token, i,
			   $2::timestamptz - (random() * interval '60 days') AS created,
			   (ARRAY['in_review','in_review','in_review','in_review','information_requested','checking','approved','approved',
			          'approved','approved','approved','approved','approved','approved','approved','approved','approved',
			          'approved','rejected','rejected','rejected','rejected','rejected','approved','approved','approved',
			          'approved','approved','approved','approved','approved','approved','approved'])[1 + (i % 33)] AS status,
			   (ARRAY['Low','Low','Medium','High'])[1 + (i % 4)] AS risk,
			   (i * 7) % 100 AS points
			 FROM generate_series(1, $1) i`, []any{n, time.Now().UTC()}},
			{`INSERT INTO applications (token, partner_id, merchant, products, due_diligence, processing, status, risk_score,
			   risk_points, revision, checked_revision, created_at, updated_at, queued_at, sla_due_at, decided_at, has_sanctions_hit)
			 SELECT token, $1, $2, ARRAY['account-opening','card-issuing'], 'CDD', 'semi-automatic', status, risk, points, 1, 1,
			   created, created, CASE WHEN status <> 'checking' THEN created + interval '1 minute' END,
			   CASE WHEN status = 'in_review' THEN created + interval '3 days' END,
			   CASE WHEN status IN ('approved','rejected') THEN created + interval '20 hours' END, i % 10 = 0
			 FROM gen`, []any{partnerID, merchant}},
			{`INSERT INTO companies (application, partner_id, legal_name, trade_name, uic, country, fields)
			 SELECT token, $1, 'Bench Company ' || i || ' Ltd', 'Bench ' || i, (200000000 + i)::text, 'GB',
			   jsonb_build_object('legal_name', 'Bench Company ' || i || ' Ltd', 'trade_name', 'Bench ' || i,
			     'uic', (200000000 + i)::text, 'country', 'GB', 'city', 'London')
			 FROM gen`, []any{partnerID}},
			{`INSERT INTO company_members (token, application, partner_id, types, first_name, last_name, unique_identifier, birthday, fields)
			 SELECT gen_random_uuid(), token, $1, ARRAY['ubo'], 'Person', 'Number' || i, 'B' || i, date '1980-01-01' + (i % 9000),
			   jsonb_build_object('first_name', 'Person', 'last_name', 'Number' || i, 'ownership_percentage', 100)
			 FROM gen`, []any{partnerID}},
			{`INSERT INTO application_checks (application, name, status, details, revision, updated_at)
			 SELECT token, c, CASE WHEN status = 'in_review' AND c = 'sanctions' AND i % 10 = 0 THEN 'review' ELSE 'passed' END,
			   '{}'::jsonb, 1, created
			 FROM gen, unnest(ARRAY['risk','trade_register','sanctions','adverse_media']) c`, nil},
			{`INSERT INTO application_check_history (application, name, status, details, revision, at)
			 SELECT token, c, 'passed', '{}'::jsonb, 1, created
			 FROM gen, unnest(ARRAY['risk','trade_register','sanctions','adverse_media','risk','trade_register']) c`, nil},
		}
		for _, st := range steps {
			if _, err := x.ExecContext(ctx, st.q, st.args...); err != nil {
				return Translate(fmt.Errorf("generate: %w", err))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Fresh statistics and visibility map, as autovacuum would give them.
	for _, t := range []string{"applications", "companies", "company_members", "application_checks", "application_check_history"} {
		if _, err := s.db.ExecContext(ctx, "VACUUM ANALYZE "+t); err != nil {
			return Translate(err)
		}
	}
	return nil
}

// AllDecisions implements onboarding.ReviewStore.
func (s *OnboardingStore) AllDecisions(ctx context.Context, from, to time.Time, limit int) ([]emi.DecisionRecord, error) {
	var out []emi.DecisionRecord
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT d.id, d.application, d.action, d.reason_code, d.text,
		d.staff_id, coalesce(st.name, '') AS staff_name, d.at, '{}'::jsonb AS snapshot FROM application_decisions d
		LEFT JOIN staff_users st ON st.id = d.staff_id WHERE d.at >= $1 AND d.at < $2 ORDER BY d.at, d.id LIMIT $3`, from, to, limit)
	return out, Translate(err)
}
