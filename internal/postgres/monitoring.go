package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/monitoring"
)

// MonitoringStore implements monitoring.Store: movements, rules, alerts.
type MonitoringStore struct {
	db *DB
}

// NewMonitoringStore returns the monitoring store.
func NewMonitoringStore(db *DB) *MonitoringStore { return &MonitoringStore{db: db} }

var _ monitoring.Store = (*MonitoringStore)(nil)

// SubjectOf implements monitoring.Store.
func (s *MonitoringStore) SubjectOf(ctx context.Context, partnerID, account string) (monitoring.Subject, string, bool, error) {
	if !validUUID(partnerID) || !validUUID(account) {
		return monitoring.Subject{}, "", false, nil
	}
	var row struct {
		User     sql.NullString `db:"user_token"`
		Merchant sql.NullString `db:"merchant"`
		Program  string         `db:"program"`
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row, `SELECT user_token::text AS user_token, merchant::text AS merchant, program
		FROM accounts WHERE token = $1 AND partner_id = $2`, account, partnerID)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.Subject{}, "", false, nil
	}
	if err != nil {
		return monitoring.Subject{}, "", false, Translate(err)
	}
	if row.User.Valid {
		return monitoring.Subject{Kind: monitoring.SubjectUser, Token: row.User.String}, row.Program, true, nil
	}
	return monitoring.Subject{Kind: monitoring.SubjectMerchant, Token: row.Merchant.String}, row.Program, true, nil
}

// InsertMovement implements monitoring.Store.
func (s *MonitoringStore) InsertMovement(ctx context.Context, m monitoring.Movement, also ...monitoring.Movement) (int64, error) {
	const cols = 18
	var q strings.Builder
	q.WriteString(`INSERT INTO monitoring_movements (partner_id, subject_kind, subject_token, account, program, kind, direction,
		amount_minor, currency, eur_minor, counterparty_key, counterparty_country, mcc, declined, at, ref, source, screened) VALUES `)
	args := make([]any, 0, cols*(1+len(also)))
	for i, m := range append([]monitoring.Movement{m}, also...) {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteByte('(')
		for c := range cols {
			if c > 0 {
				q.WriteString(", ")
			}
			fmt.Fprintf(&q, "$%d", i*cols+c+1)
		}
		q.WriteByte(')')
		args = append(args, m.PartnerID, m.Subject.Kind, m.Subject.Token, m.Account, m.Program, m.Kind, m.Direction, m.Amount,
			m.Currency, m.EUR, m.CounterpartyKey, m.CounterpartyCountry, m.MCC, m.Declined, m.At, m.Ref, m.Source, m.Screened)
	}
	// The rows take their ids in the order of VALUES: m's is the least.
	q.WriteString(" RETURNING id")
	rows, err := s.db.Ext(ctx).QueryContext(ctx, q.String(), args...)
	if err != nil {
		return 0, Translate(err)
	}
	defer rows.Close()
	var first int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return 0, Translate(err)
		}
		if first == 0 || id < first {
			first = id
		}
	}
	return first, Translate(rows.Err())
}

// PendingSubjects implements monitoring.Store.
func (s *MonitoringStore) PendingSubjects(ctx context.Context, limit int) ([]monitoring.Subject, error) {
	var out []monitoring.Subject
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT DISTINCT subject_kind AS kind, subject_token::text AS token
		FROM monitoring_movements WHERE evaluated_at IS NULL LIMIT $1`, limit)
	return out, Translate(err)
}

// LockSubject implements monitoring.Store.
func (s *MonitoringStore) LockSubject(ctx context.Context, subj monitoring.Subject) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('monitoring:' || $1 || ':' || $2, 2026))`,
		subj.Kind, subj.Token)
	return Translate(err)
}

// movementRow is a monitoring_movements row.
type movementRow struct {
	ID                  int64     `db:"id"`
	PartnerID           string    `db:"partner_id"`
	SubjectKind         string    `db:"subject_kind"`
	SubjectToken        string    `db:"subject_token"`
	Account             string    `db:"account"`
	Program             string    `db:"program"`
	Kind                string    `db:"kind"`
	Direction           string    `db:"direction"`
	Amount              int64     `db:"amount_minor"`
	Currency            string    `db:"currency"`
	EUR                 int64     `db:"eur_minor"`
	CounterpartyKey     string    `db:"counterparty_key"`
	CounterpartyCountry string    `db:"counterparty_country"`
	MCC                 string    `db:"mcc"`
	Declined            bool      `db:"declined"`
	At                  time.Time `db:"at"`
	Ref                 string    `db:"ref"`
	Source              string    `db:"source"`
	Screened            bool      `db:"screened"`
}

// movement is the row as monitoring reads it.
func (r movementRow) movement() monitoring.Movement {
	return monitoring.Movement{ID: r.ID, PartnerID: r.PartnerID, Subject: monitoring.Subject{Kind: r.SubjectKind, Token: r.SubjectToken},
		Account: r.Account, Program: r.Program, Kind: r.Kind, Direction: r.Direction, Amount: r.Amount, Currency: r.Currency,
		EUR: r.EUR, CounterpartyKey: r.CounterpartyKey, CounterpartyCountry: r.CounterpartyCountry, MCC: r.MCC,
		Declined: r.Declined, At: r.At.UTC(), Ref: r.Ref, Source: r.Source, Screened: r.Screened}
}

// Unevaluated implements monitoring.Store.
func (s *MonitoringStore) Unevaluated(ctx context.Context, subj monitoring.Subject, limit int) ([]monitoring.Movement, error) {
	var rows []movementRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT id, partner_id, subject_kind, subject_token, account, program, kind,
		direction, amount_minor, currency, eur_minor, counterparty_key, counterparty_country, mcc, declined, at, ref, source, screened
		FROM monitoring_movements WHERE subject_kind = $1 AND subject_token = $2 AND evaluated_at IS NULL
		ORDER BY at, id LIMIT $3 FOR UPDATE`, subj.Kind, subj.Token, limit)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.Movement, len(rows))
	for i, r := range rows {
		out[i] = r.movement()
	}
	return out, nil
}

// MarkEvaluated implements monitoring.Store.
func (s *MonitoringStore) MarkEvaluated(ctx context.Context, ids []int64, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE monitoring_movements SET evaluated_at = $2 WHERE id = ANY($1)`, pq.Array(ids), at)
	return Translate(err)
}

// Window implements monitoring.Store: one indexed range scan of the
// subject's movements of one direction.
func (s *MonitoringStore) Window(ctx context.Context, subj monitoring.Subject, q monitoring.WindowQuery) (monitoring.WindowStats, error) {
	var st struct {
		Count    int64 `db:"n"`
		Sum      int64 `db:"total"`
		Distinct int64 `db:"distinct_counterparts"`
	}
	upto := `(at, id) <= ($5, $6)`
	if q.Excluding {
		upto = `(at, id) < ($5, $6)`
	}
	toID := q.ToID
	if toID == 0 {
		toID = 1<<63 - 1
	}
	maxEUR := q.MaxEUR
	if maxEUR == 0 {
		maxEUR = 1<<63 - 1
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &st, `SELECT count(*) AS n, coalesce(sum(eur_minor), 0)::bigint AS total,
		count(DISTINCT nullif(counterparty_key, '')) AS distinct_counterparts
		FROM monitoring_movements
		WHERE subject_kind = $1 AND subject_token = $2 AND direction = $3 AND kind = ANY($4)
		  AND at > $7 AND `+upto+` AND eur_minor >= $8 AND eur_minor < $9 AND declined = $10`,
		subj.Kind, subj.Token, q.Direction, pq.Array(q.Kinds), q.To, toID, q.From, q.MinEUR, maxEUR, q.Declined)
	if err != nil {
		return monitoring.WindowStats{}, Translate(err)
	}
	return monitoring.WindowStats{Count: st.Count, SumEUR: st.Sum, DistinctCounterparts: st.Distinct}, nil
}

// PreviousMovement implements monitoring.Store.
func (s *MonitoringStore) PreviousMovement(ctx context.Context, subj monitoring.Subject, at time.Time, id int64) (time.Time, bool, error) {
	var last sql.NullTime
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &last, `SELECT max(at) FROM monitoring_movements
		WHERE subject_kind = $1 AND subject_token = $2 AND direction = ANY('{in,out}') AND (at, id) < ($3, $4) AND NOT declined`,
		subj.Kind, subj.Token, at, id)
	if err != nil {
		return time.Time{}, false, Translate(err)
	}
	return last.Time.UTC(), last.Valid, nil
}

// Profile implements monitoring.Store: a person's declared bands and risk
// score (a merchant declares none through the API).
func (s *MonitoringStore) Profile(ctx context.Context, subj monitoring.Subject) (monitoring.Profile, error) {
	if subj.Kind != monitoring.SubjectUser {
		return monitoring.Profile{}, nil
	}
	var p struct {
		In   string `db:"incoming"`
		Out  string `db:"outgoing"`
		Freq string `db:"frequency"`
		Risk string `db:"risk"`
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &p, `SELECT coalesce(profile->>'expected_incoming_monthly_eur', '') AS incoming,
		coalesce(profile->>'expected_outgoing_monthly_eur', '') AS outgoing,
		coalesce(profile->>'expected_monthly_frequency_incoming_transfer', '') AS frequency,
		coalesce(profile->>'risk_score', '') AS risk FROM users WHERE token = $1`, subj.Token)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.Profile{}, nil
	}
	if err != nil {
		return monitoring.Profile{}, Translate(err)
	}
	return monitoring.Profile{IncomingBand: p.In, OutgoingBand: p.Out, FrequencyBand: p.Freq, Risk: p.Risk}, nil
}

// Rules implements monitoring.Store.
func (s *MonitoringStore) Rules(ctx context.Context) ([]monitoring.Rule, error) {
	var rows []ruleRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT code, program, version, description, score, enabled, shadow, params, outcome
		FROM monitoring_rules WHERE current ORDER BY code, program`)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.Rule, len(rows))
	for i, r := range rows {
		if out[i], err = r.rule(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// alertRow is a monitoring_alerts row.
type alertRow struct {
	Token        string         `db:"token"`
	PartnerID    string         `db:"partner_id"`
	SubjectKind  string         `db:"subject_kind"`
	SubjectToken string         `db:"subject_token"`
	Status       string         `db:"status"`
	Score        int            `db:"score"`
	Hits         []byte         `db:"hits"`
	RaisedAt     time.Time      `db:"raised_at"`
	UpdatedAt    time.Time      `db:"updated_at"`
	CaseToken    sql.NullString `db:"case_token"`
}

const alertInsertColumns = `token, partner_id, subject_kind, subject_token, status, score, hits, raised_at, updated_at`

const alertColumns = alertInsertColumns + `, case_token`

func (r alertRow) alert() (monitoring.Alert, error) {
	a := monitoring.Alert{Token: r.Token, PartnerID: r.PartnerID, Subject: monitoring.Subject{Kind: r.SubjectKind, Token: r.SubjectToken},
		Status: r.Status, Score: r.Score, RaisedAt: r.RaisedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), Case: r.CaseToken.String}
	if err := json.Unmarshal(r.Hits, &a.Hits); err != nil {
		return monitoring.Alert{}, emi.ErrInternal.Wrap(err)
	}
	return a, nil
}

// OpenAlert implements monitoring.Store.
func (s *MonitoringStore) OpenAlert(ctx context.Context, subj monitoring.Subject) (monitoring.Alert, bool, error) {
	var r alertRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT `+alertColumns+` FROM monitoring_alerts
		WHERE subject_kind = $1 AND subject_token = $2 AND status = 'open' FOR UPDATE`, subj.Kind, subj.Token)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.Alert{}, false, nil
	}
	if err != nil {
		return monitoring.Alert{}, false, Translate(err)
	}
	a, err := r.alert()
	return a, err == nil, err
}

// InsertAlert implements monitoring.Store.
func (s *MonitoringStore) InsertAlert(ctx context.Context, a monitoring.Alert) error {
	hits, err := json.Marshal(a.Hits)
	if err != nil {
		return emi.ErrInternal.Wrap(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO monitoring_alerts (`+alertInsertColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		a.Token, a.PartnerID, a.Subject.Kind, a.Subject.Token, a.Status, a.Score, jsonText(hits), a.RaisedAt, a.UpdatedAt)
	return Translate(err)
}

// UpdateAlert implements monitoring.Store.
func (s *MonitoringStore) UpdateAlert(ctx context.Context, a monitoring.Alert) error {
	hits, err := json.Marshal(a.Hits)
	if err != nil {
		return emi.ErrInternal.Wrap(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `UPDATE monitoring_alerts SET status = $2, score = $3, hits = $4, updated_at = $5 WHERE token = $1`,
		a.Token, a.Status, a.Score, jsonText(hits), a.UpdatedAt)
	return Translate(err)
}

// Alerts implements monitoring.Store.
func (s *MonitoringStore) Alerts(ctx context.Context, f monitoring.AlertFilter) ([]monitoring.Alert, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	var partner any
	if f.PartnerID != "" {
		if !validUUID(f.PartnerID) {
			return nil, nil
		}
		partner = f.PartnerID
	}
	var rows []alertRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+alertColumns+` FROM monitoring_alerts
		WHERE ($1::uuid IS NULL OR partner_id = $1) AND raised_at >= $2 AND ($3 = '' OR status = $3)
		ORDER BY raised_at, token LIMIT $4`, partner, f.Since, f.Status, limit)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.Alert, len(rows))
	for i, r := range rows {
		if out[i], err = r.alert(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CountPending implements monitoring.Store.
func (s *MonitoringStore) CountPending(ctx context.Context) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM monitoring_movements WHERE evaluated_at IS NULL`)
	return n, Translate(err)
}

// alertViewRow is an alert with its subject's and partner's names.
type alertViewRow struct {
	alertRow
	SubjectName string `db:"subject_name"`
	PartnerName string `db:"partner_name"`
}

const alertViewSelect = `SELECT a.token, a.partner_id, a.subject_kind, a.subject_token, a.status, a.score, a.hits, a.raised_at, a.updated_at,
	a.case_token,
	coalesce(CASE a.subject_kind WHEN 'user' THEN trim(u.first_name || ' ' || u.last_name) ELSE m.name END, '') AS subject_name,
	p.name AS partner_name
	FROM monitoring_alerts a
	JOIN partners p ON p.id = a.partner_id
	LEFT JOIN users u ON a.subject_kind = 'user' AND u.token = a.subject_token
	LEFT JOIN merchants m ON a.subject_kind = 'merchant' AND m.token = a.subject_token`

func (r alertViewRow) view() (monitoring.AlertView, error) {
	a, err := r.alert()
	return monitoring.AlertView{Alert: a, SubjectName: r.SubjectName, PartnerName: r.PartnerName}, err
}

// AlertViews implements monitoring.Store.
func (s *MonitoringStore) AlertViews(ctx context.Context, limit int) ([]monitoring.AlertView, error) {
	var rows []alertViewRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, alertViewSelect+` WHERE a.status = 'open' ORDER BY a.raised_at, a.token LIMIT $1`, limit)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.AlertView, len(rows))
	for i, r := range rows {
		if out[i], err = r.view(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AlertView implements monitoring.Store.
func (s *MonitoringStore) AlertView(ctx context.Context, token string) (monitoring.AlertView, bool, error) {
	if !validUUID(token) {
		return monitoring.AlertView{}, false, nil
	}
	var r alertViewRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, alertViewSelect+` WHERE a.token = $1`, token)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.AlertView{}, false, nil
	}
	if err != nil {
		return monitoring.AlertView{}, false, Translate(err)
	}
	v, err := r.view()
	return v, err == nil, err
}

// CountOpen implements monitoring.Store.
func (s *MonitoringStore) CountOpen(ctx context.Context) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM monitoring_alerts WHERE status = 'open'`)
	return n, Translate(err)
}

// ruleRow is a monitoring_rules row.
type ruleRow struct {
	Code        string `db:"code"`
	Program     string `db:"program"`
	Version     int    `db:"version"`
	Description string `db:"description"`
	Score       int    `db:"score"`
	Enabled     bool   `db:"enabled"`
	Shadow      bool   `db:"shadow"`
	Params      []byte `db:"params"`
	Outcome     string `db:"outcome"`
}

func (r ruleRow) rule() (monitoring.Rule, error) {
	out := monitoring.Rule{Code: r.Code, Program: r.Program, Version: r.Version, Description: r.Description, Score: r.Score,
		Enabled: r.Enabled, Shadow: r.Shadow, Outcome: r.Outcome}
	if err := json.Unmarshal(r.Params, &out.Params); err != nil {
		return monitoring.Rule{}, emi.ErrInternal.Wrap(err)
	}
	return out, nil
}

// LockRule implements monitoring.Store.
func (s *MonitoringStore) LockRule(ctx context.Context, code, program string) (monitoring.Rule, bool, error) {
	var r ruleRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT code, program, version, description, score, enabled, shadow, params, outcome
		FROM monitoring_rules WHERE code = $1 AND program = $2 AND current FOR UPDATE`, code, program)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.Rule{}, false, nil
	}
	if err != nil {
		return monitoring.Rule{}, false, Translate(err)
	}
	out, err := r.rule()
	return out, err == nil, err
}

// ApplyRule implements monitoring.Store.
func (s *MonitoringStore) ApplyRule(ctx context.Context, r monitoring.Rule) error {
	params, err := json.Marshal(r.Params)
	if err != nil {
		return emi.ErrInternal.Wrap(err)
	}
	ext := s.db.Ext(ctx)
	if _, err := ext.ExecContext(ctx, `UPDATE monitoring_rules SET current = false WHERE code = $1 AND program = $2 AND current`,
		r.Code, r.Program); err != nil {
		return Translate(err)
	}
	_, err = ext.ExecContext(ctx, `INSERT INTO monitoring_rules (code, program, version, description, score, enabled, shadow, params, outcome, current)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, true)`, r.Code, r.Program, r.Version, r.Description, r.Score, r.Enabled, r.Shadow,
		jsonText(params), r.Outcome)
	return Translate(err)
}

// ProgramExists implements monitoring.Store.
func (s *MonitoringStore) ProgramExists(ctx context.Context, code string) (bool, error) {
	var ok bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &ok, `SELECT EXISTS (SELECT 1 FROM programs WHERE code = $1)`, code)
	return ok, Translate(err)
}

// InsertRuleChange implements monitoring.Store.
func (s *MonitoringStore) InsertRuleChange(ctx context.Context, request string, base int, c monitoring.RuleChange, bt monitoring.Backtest) error {
	params, err := json.Marshal(c.Params)
	if err != nil {
		return emi.ErrInternal.Wrap(err)
	}
	b, err := json.Marshal(bt)
	if err != nil {
		return emi.ErrInternal.Wrap(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO monitoring_rule_changes (request, code, program, base_version, score, enabled,
		shadow, params, backtest, outcome) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, request, c.Code, c.Program, base, c.Score, c.Enabled,
		c.Shadow, jsonText(params), jsonText(b), c.Outcome)
	return Translate(err)
}

type ruleChangeRow struct {
	Request     string `db:"request"`
	Code        string `db:"code"`
	Program     string `db:"program"`
	BaseVersion int    `db:"base_version"`
	Score       int    `db:"score"`
	Enabled     bool   `db:"enabled"`
	Shadow      bool   `db:"shadow"`
	Params      []byte `db:"params"`
	Backtest    []byte `db:"backtest"`
	Outcome     string `db:"outcome"`
}

func (r ruleChangeRow) change() (monitoring.PendingRuleChange, error) {
	p := monitoring.PendingRuleChange{BaseVersion: r.BaseVersion,
		Change: monitoring.RuleChange{Code: r.Code, Program: r.Program, Score: r.Score, Enabled: r.Enabled, Shadow: r.Shadow, Outcome: r.Outcome}}
	p.Request.ID = r.Request
	if err := json.Unmarshal(r.Params, &p.Change.Params); err != nil {
		return p, emi.ErrInternal.Wrap(err)
	}
	if err := json.Unmarshal(r.Backtest, &p.Backtest); err != nil {
		return p, emi.ErrInternal.Wrap(err)
	}
	return p, nil
}

const ruleChangeColumns = `c.request, c.code, c.program, c.base_version, c.score, c.enabled, c.shadow, c.params, c.backtest, c.outcome`

// RuleChange implements monitoring.Store.
func (s *MonitoringStore) RuleChange(ctx context.Context, request string) (monitoring.PendingRuleChange, error) {
	var r ruleChangeRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT `+ruleChangeColumns+` FROM monitoring_rule_changes c WHERE c.request = $1`, request)
	if err != nil {
		return monitoring.PendingRuleChange{}, Translate(err)
	}
	return r.change()
}

// RuleChanges implements monitoring.Store.
func (s *MonitoringStore) RuleChanges(ctx context.Context) ([]monitoring.PendingRuleChange, error) {
	var rows []ruleChangeRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+ruleChangeColumns+` FROM monitoring_rule_changes c
		JOIN control_requests q ON q.id = c.request WHERE q.status = 'pending' ORDER BY q.proposed_at`)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.PendingRuleChange, len(rows))
	for i, r := range rows {
		if out[i], err = r.change(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RecentMovements implements monitoring.Store.
func (s *MonitoringStore) RecentMovements(ctx context.Context, since time.Time, limit int) ([]monitoring.Movement, bool, error) {
	var rows []movementRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT * FROM (SELECT id, partner_id, subject_kind, subject_token, account,
		program, kind, direction, amount_minor, currency, eur_minor, counterparty_key, counterparty_country, mcc, declined, at, ref, source, screened
		FROM monitoring_movements WHERE at > $1 ORDER BY at DESC, id DESC LIMIT $2) m ORDER BY at, id`, since, limit+1)
	if err != nil {
		return nil, false, Translate(err)
	}
	more := len(rows) > limit
	if more {
		rows = rows[1:] // the oldest one beyond the limit
	}
	out := make([]monitoring.Movement, len(rows))
	for i, r := range rows {
		out[i] = r.movement()
	}
	return out, more, nil
}

// InsertShadowHits implements monitoring.Store.
func (s *MonitoringStore) InsertShadowHits(ctx context.Context, hits []monitoring.ShadowHit) error {
	for _, h := range hits {
		if _, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO monitoring_shadow_hits (code, version, program, subject_kind,
			subject_token, movement, at) VALUES ($1, $2, $3, $4, $5, $6, $7)`, h.Rule, h.Version, h.Program, h.Subject.Kind,
			h.Subject.Token, h.Movement, h.At); err != nil {
			return Translate(err)
		}
	}
	return nil
}

// ShadowCounts implements monitoring.Store.
func (s *MonitoringStore) ShadowCounts(ctx context.Context, since time.Time) (map[string]int64, error) {
	var rows []struct {
		Code string `db:"code"`
		N    int64  `db:"n"`
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT code, count(*) AS n FROM monitoring_shadow_hits WHERE at > $1 GROUP BY code`, since)
	if err != nil {
		return nil, Translate(err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.Code] = r.N
	}
	return out, nil
}

// LockScreen implements monitoring.Store.
func (s *MonitoringStore) LockScreen(ctx context.Context, subj monitoring.Subject) (time.Time, error) {
	ext := s.db.Ext(ctx)
	if _, err := ext.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('monitoring screen:' || $1 || ':' || $2, 2026))`,
		subj.Kind, subj.Token); err != nil {
		return time.Time{}, Translate(err)
	}
	var last sql.NullTime
	err := sqlx.GetContext(ctx, ext, &last, `SELECT max(at) FROM monitoring_movements WHERE subject_kind = $1 AND subject_token = $2`,
		subj.Kind, subj.Token)
	return last.Time.UTC(), Translate(err)
}

// MarkDeclined implements monitoring.Store.
func (s *MonitoringStore) MarkDeclined(ctx context.Context, id int64) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE monitoring_movements SET declined = true WHERE id = $1`, id)
	return Translate(err)
}

// holdRow is a monitoring_holds row.
type holdRow struct {
	Transfer     string     `db:"transfer"`
	PartnerID    string     `db:"partner_id"`
	SubjectKind  string     `db:"subject_kind"`
	SubjectToken string     `db:"subject_token"`
	Alert        *string    `db:"alert"`
	Movement     *int64     `db:"movement"`
	Hits         []byte     `db:"hits"`
	InitiatedBy  string     `db:"initiated_by"`
	Status       string     `db:"status"`
	HeldAt       time.Time  `db:"held_at"`
	DecidedBy    string     `db:"decided_by"`
	DecidedAt    *time.Time `db:"decided_at"`
	Reason       string     `db:"reason"`
}

const holdColumns = `transfer, partner_id, subject_kind, subject_token, alert, movement, hits, initiated_by, status, held_at, decided_by,
	decided_at, reason`

func (r holdRow) hold() (monitoring.Hold, error) {
	h := monitoring.Hold{Transfer: r.Transfer, PartnerID: r.PartnerID, Subject: monitoring.Subject{Kind: r.SubjectKind, Token: r.SubjectToken},
		InitiatedBy: r.InitiatedBy, Status: r.Status, HeldAt: r.HeldAt.UTC(), DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt, Reason: r.Reason}
	if r.Alert != nil {
		h.Alert = *r.Alert
	}
	if r.Movement != nil {
		h.Movement = *r.Movement
	}
	if err := json.Unmarshal(r.Hits, &h.Hits); err != nil {
		return h, emi.ErrInternal.Wrap(err)
	}
	return h, nil
}

// InsertHold implements monitoring.Store.
func (s *MonitoringStore) InsertHold(ctx context.Context, h monitoring.Hold) error {
	hits, err := json.Marshal(h.Hits)
	if err != nil {
		return emi.ErrInternal.Wrap(err)
	}
	var alert *string
	if h.Alert != "" {
		alert = &h.Alert
	}
	var movement *int64
	if h.Movement != 0 {
		movement = &h.Movement
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO monitoring_holds (transfer, partner_id, subject_kind, subject_token, alert,
		movement, hits, initiated_by, status, held_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, h.Transfer, h.PartnerID,
		h.Subject.Kind, h.Subject.Token, alert, movement, jsonText(hits), h.InitiatedBy, h.Status, h.HeldAt)
	return Translate(err)
}

// LockHold implements monitoring.Store.
func (s *MonitoringStore) LockHold(ctx context.Context, transfer string) (monitoring.Hold, bool, error) {
	if !validUUID(transfer) {
		return monitoring.Hold{}, false, nil
	}
	var r holdRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT `+holdColumns+` FROM monitoring_holds WHERE transfer = $1 FOR UPDATE`, transfer)
	if errors.Is(err, sql.ErrNoRows) {
		return monitoring.Hold{}, false, nil
	}
	if err != nil {
		return monitoring.Hold{}, false, Translate(err)
	}
	h, err := r.hold()
	return h, err == nil, err
}

// DecideHold implements monitoring.Store.
func (s *MonitoringStore) DecideHold(ctx context.Context, transfer, status, by string, at time.Time, reason string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE monitoring_holds SET status = $2, decided_by = $3, decided_at = $4, reason = $5
		WHERE transfer = $1 AND status = 'held'`, transfer, status, by, at, reason)
	return Translate(err)
}

// Holds implements monitoring.Store.
func (s *MonitoringStore) Holds(ctx context.Context, f monitoring.HoldFilter) ([]monitoring.Hold, error) {
	q := `SELECT ` + holdColumns + ` FROM monitoring_holds WHERE true`
	var args []any
	if f.Subject.Token != "" {
		if !validUUID(f.Subject.Token) {
			return nil, nil
		}
		args = append(args, f.Subject.Kind, f.Subject.Token)
		q += ` AND subject_kind = $1 AND subject_token = $2`
	}
	order := ` ORDER BY held_at DESC, transfer`
	if f.Status != "" {
		args = append(args, f.Status)
		q += ` AND status = $` + strconv.Itoa(len(args))
		order = ` ORDER BY held_at, transfer`
	}
	limit := f.Limit
	if limit <= 0 || limit > 500 {
		limit = 500
	}
	args = append(args, limit)
	q += order + ` LIMIT $` + strconv.Itoa(len(args))
	var rows []holdRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]monitoring.Hold, len(rows))
	for i, r := range rows {
		h, err := r.hold()
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// CaseOfAlert implements monitoring.Store.
func (s *MonitoringStore) CaseOfAlert(ctx context.Context, alert string) (string, error) {
	return (&CaseStore{db: s.db}).CaseOfAlert(ctx, alert)
}

// InsertCaseEvent implements monitoring.Store.
func (s *MonitoringStore) InsertCaseEvent(ctx context.Context, e monitoring.CaseEvent) error {
	return (&CaseStore{db: s.db}).InsertCaseEvent(ctx, e)
}

// SubjectsOf implements monitoring.Store: SubjectOf's query for many
// accounts.
func (s *MonitoringStore) SubjectsOf(ctx context.Context, partnerID string, accounts []string) (map[string]monitoring.AccountSubject, error) {
	out := map[string]monitoring.AccountSubject{}
	var valid []string
	for _, a := range accounts {
		if validUUID(a) {
			valid = append(valid, a)
		}
	}
	if !validUUID(partnerID) || len(valid) == 0 {
		return out, nil
	}
	var rows []struct {
		Token    string         `db:"token"`
		User     sql.NullString `db:"user_token"`
		Merchant sql.NullString `db:"merchant"`
		Program  string         `db:"program"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT token::text AS token, user_token::text AS user_token,
		merchant::text AS merchant, program FROM accounts WHERE token = ANY($1::uuid[]) AND partner_id = $2`,
		pq.StringArray(valid), partnerID); err != nil {
		return nil, Translate(err)
	}
	byToken := make(map[string]monitoring.AccountSubject, len(rows))
	for _, r := range rows {
		subj := monitoring.Subject{Kind: monitoring.SubjectMerchant, Token: r.Merchant.String}
		if r.User.Valid {
			subj = monitoring.Subject{Kind: monitoring.SubjectUser, Token: r.User.String}
		}
		byToken[r.Token] = monitoring.AccountSubject{Subject: subj, Program: r.Program}
	}
	// Keyed by the tokens as the caller spelled them.
	for _, a := range valid {
		if as, ok := byToken[strings.ToLower(a)]; ok {
			out[a] = as
		}
	}
	return out, nil
}

// InsertMovements implements monitoring.Store: InsertMovement's row for
// each movement, in one statement.
func (s *MonitoringStore) InsertMovements(ctx context.Context, ms []monitoring.Movement) error {
	if len(ms) == 0 {
		return nil
	}
	n := len(ms)
	partners, kinds, tokens, accounts, programs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	mkinds, directions, currencies, keys, countries := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	mccs, ats, refs, sources := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	amounts, eurs := make([]int64, n), make([]int64, n)
	declined := make([]bool, n)
	for i, m := range ms {
		partners[i], kinds[i], tokens[i], accounts[i], programs[i] = m.PartnerID, m.Subject.Kind, m.Subject.Token, m.Account, m.Program
		mkinds[i], directions[i], currencies[i], keys[i], countries[i] = m.Kind, m.Direction, m.Currency, m.CounterpartyKey, m.CounterpartyCountry
		mccs[i], ats[i], refs[i], sources[i] = m.MCC, m.At.UTC().Format(time.RFC3339Nano), m.Ref, m.Source
		amounts[i], eurs[i], declined[i] = m.Amount, m.EUR, m.Declined
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO monitoring_movements (partner_id, subject_kind, subject_token, account,
		program, kind, direction, amount_minor, currency, eur_minor, counterparty_key, counterparty_country, mcc, declined, at, ref, source)
		SELECT p::uuid, sk, st::uuid, a::uuid, pr, k, d, am, c, e, ck, cc, mc, dc, t::timestamptz, r, so
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[],
			$10::bigint[], $11::text[], $12::text[], $13::text[], $14::boolean[], $15::text[], $16::text[], $17::text[])
			WITH ORDINALITY AS m(p, sk, st, a, pr, k, d, am, c, e, ck, cc, mc, dc, t, r, so, n)
		ORDER BY n`,
		pq.StringArray(partners), pq.StringArray(kinds), pq.StringArray(tokens), pq.StringArray(accounts), pq.StringArray(programs),
		pq.StringArray(mkinds), pq.StringArray(directions), pq.Int64Array(amounts), pq.StringArray(currencies), pq.Int64Array(eurs),
		pq.StringArray(keys), pq.StringArray(countries), pq.StringArray(mccs), pq.BoolArray(declined), pq.StringArray(ats),
		pq.StringArray(refs), pq.StringArray(sources))
	return Translate(err)
}

// SubjectMovements implements monitoring.Store: a range of the window
// index, both directions, the columns the windows read scanned without
// reflection (a history's evaluation reads hundreds of thousands).
func (s *MonitoringStore) SubjectMovements(ctx context.Context, subj monitoring.Subject, after, to time.Time, toID int64, limit int) ([]monitoring.Movement, error) {
	rows, err := s.db.Ext(ctx).QueryContext(ctx, `SELECT id, kind, direction, eur_minor, counterparty_key, declined, at
		FROM monitoring_movements WHERE subject_kind = $1 AND subject_token = $2 AND direction = ANY('{in,out}')
		  AND at > $3 AND (at, id) <= ($4, $5)
		ORDER BY at, id LIMIT $6`, subj.Kind, subj.Token, after, to, toID, limit)
	if err != nil {
		return nil, Translate(err)
	}
	defer rows.Close()
	var out []monitoring.Movement
	for rows.Next() {
		m := monitoring.Movement{Subject: subj}
		if err := rows.Scan(&m.ID, &m.Kind, &m.Direction, &m.EUR, &m.CounterpartyKey, &m.Declined, &m.At); err != nil {
			return nil, Translate(err)
		}
		m.At = m.At.UTC()
		out = append(out, m)
	}
	return out, Translate(rows.Err())
}
