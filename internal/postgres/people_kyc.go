package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
)

// KYC sessions (people.KYC).

type kycRow struct {
	emi.KYCSession
	Reviewer *string `db:"reviewer"`
	PName    *string `db:"pname"`
	UName    *string `db:"uname"`
}

const kycColumns = `k.token, k.partner_id, k.user_token, k.provider, k.status, k.document_kind, k.consent_at,
	k.submitted_at, k.reviewed_at, k.reviewed_by::text AS reviewer, k.reason, k.internal_note, k.expires_at, k.created_at, k.updated_at,
	coalesce((SELECT name FROM staff_users s WHERE s.id = k.reviewed_by), '') AS reviewed_by_name,
	p.name AS pname, (u.first_name || ' ' || u.last_name) AS uname`

const (
	kycJoins = ` JOIN partners p ON p.id = k.partner_id JOIN users u ON u.token = k.user_token`
	kycFrom  = ` FROM kyc_sessions k` + kycJoins
)

func (r kycRow) session() emi.KYCSession {
	s := r.KYCSession
	if r.Reviewer != nil {
		s.ReviewedBy = *r.Reviewer
	}
	if r.PName != nil {
		s.PartnerName = *r.PName
	}
	if r.UName != nil {
		s.UserName = *r.UName
	}
	return s
}

func (s *PeopleStore) kyc(ctx context.Context, q string, args ...any) (emi.KYCSession, error) {
	var r kycRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, q, args...); err != nil {
		return emi.KYCSession{}, NotFound(err, emi.ErrKYCSessionNotFound)
	}
	return r.session(), nil
}

// OpenKYCSession implements people.KYCStore.
func (s *PeopleStore) OpenKYCSession(ctx context.Context, user string) (emi.KYCSession, []byte, error) {
	var row struct {
		kycRow
		Enc []byte `db:"secret_enc"`
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row, `SELECT `+kycColumns+`, k.secret_enc`+kycFrom+`
		WHERE k.user_token = $1 AND k.status IN ('pending', 'submitted') FOR UPDATE OF k`, user)
	if err != nil {
		return emi.KYCSession{}, nil, NotFound(err, emi.ErrKYCSessionNotFound)
	}
	return row.session(), row.Enc, nil
}

// InsertKYCSession implements people.KYCStore.
func (s *PeopleStore) InsertKYCSession(ctx context.Context, k emi.KYCSession, hash, enc []byte) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO kyc_sessions (token, partner_id, user_token, provider,
		secret_hash, secret_enc, status, expires_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
		k.Token, k.PartnerID, k.UserToken, k.Provider, hash, enc, k.Status, k.ExpiresAt, k.CreatedAt)
	return Translate(err)
}

// KYCSessionBySecret implements people.KYCStore.
func (s *PeopleStore) KYCSessionBySecret(ctx context.Context, hash []byte) (emi.KYCSession, error) {
	return s.kyc(ctx, `SELECT `+kycColumns+kycFrom+` WHERE k.secret_hash = $1 FOR UPDATE OF k`, hash)
}

// KYCSession implements people.KYCStore.
func (s *PeopleStore) KYCSession(ctx context.Context, token string, forUpdate bool) (emi.KYCSession, error) {
	if !validUUID(token) {
		return emi.KYCSession{}, emi.ErrKYCSessionNotFound
	}
	q := `SELECT ` + kycColumns + kycFrom + ` WHERE k.token = $1`
	if forUpdate {
		q += ` FOR UPDATE OF k`
	}
	return s.kyc(ctx, q, token)
}

// UpdateKYCSession implements people.KYCStore.
func (s *PeopleStore) UpdateKYCSession(ctx context.Context, k emi.KYCSession) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE kyc_sessions SET status = $2, document_kind = $3, consent_at = $4,
		submitted_at = $5, reviewed_at = $6, reviewed_by = $7, reason = $8, internal_note = $9, updated_at = $10 WHERE token = $1`,
		k.Token, k.Status, k.DocumentKind, k.ConsentAt, k.SubmittedAt, k.ReviewedAt, nullUUID(k.ReviewedBy), k.Reason, k.InternalNote, k.UpdatedAt)
	return Translate(err)
}

// KYCSessions implements people.KYCStore: a page in f.Sort's order, by
// default the submitted queue oldest submission first and anything else
// newest started first, after the session f.After (keyset on the sort
// expression and the token).
func (s *PeopleStore) KYCSessions(ctx context.Context, f emi.KYCFilter) ([]emi.KYCSession, error) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + itoa(len(args)) }
	if f.Status != "" {
		where = append(where, "k.status = "+arg(f.Status))
	}
	if f.UserToken != "" {
		if !validUUID(f.UserToken) {
			return nil, nil
		}
		where = append(where, "k.user_token = "+arg(f.UserToken))
	}
	o := f.Sort
	if o.Key == "" {
		o = emi.SortOrder{Key: "started", Desc: true}
		if f.Status == emi.KYCSubmitted {
			o = emi.SortOrder{Key: "submitted"}
		}
	}
	if validUUID(f.After) {
		where = append(where, kycSort.after(o, arg(f.After)))
	}
	q := `SELECT ` + kycColumns + kycFrom
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += kycSort.orderBy(o) + " LIMIT " + arg(f.Limit)
	var rows []kycRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.KYCSession, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.session())
	}
	return out, nil
}

// kycSort is the KYC lists' orders. The person and partner are read through
// the joins the list's query has, so the cursor row is read through them
// too; a session not yet submitted sorts as submitted at
// -infinity (sort expressions are never NULL).
var kycSort = sortable{def: "started", table: "kyc_sessions k" + kycJoins, tie: "k.token", cols: map[string]string{
	"person":    "lower(u.first_name || ' ' || u.last_name)",
	"partner":   "lower(p.name)",
	"status":    "k.status",
	"started":   "k.created_at",
	"submitted": "coalesce(k.submitted_at, '-infinity')",
}}

// CountKYCSessions implements people.KYCStore.
func (s *PeopleStore) CountKYCSessions(ctx context.Context, st emi.KYCStatus) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM kyc_sessions WHERE status = $1`, st)
	return n, Translate(err)
}

// ExpiredKYCSessions implements people.KYCStore: pending sessions whose
// link expired at now, the oldest first: partnerID's, or ("") those of
// every partner not on a test clock.
func (s *PeopleStore) ExpiredKYCSessions(ctx context.Context, partnerID string, now time.Time, limit int) ([]emi.KYCSession, error) {
	var rows []kycRow
	var err error
	if partnerID == "" {
		err = sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+kycColumns+kycFrom+`
			WHERE k.status = 'pending' AND k.expires_at <= $1 AND NOT `+onClock("k.partner_id")+`
			ORDER BY k.expires_at, k.token LIMIT $2`, now, limit)
	} else {
		err = sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+kycColumns+kycFrom+`
			WHERE k.partner_id = $3 AND k.status = 'pending' AND k.expires_at <= $1
			ORDER BY k.expires_at, k.token LIMIT $2`, now, limit, partnerID)
	}
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.KYCSession, len(rows))
	for i, r := range rows {
		out[i] = r.session()
	}
	return out, nil
}

// NextKYCExpiry implements people.KYCStore.
func (s *PeopleStore) NextKYCExpiry(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error) {
	return earliest(ctx, s.db.Ext(ctx), `SELECT min(expires_at) FROM kyc_sessions
		WHERE partner_id = $1 AND status = 'pending' AND expires_at <= $2`, partnerID, until)
}
