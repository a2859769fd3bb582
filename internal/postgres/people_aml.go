package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
)

// AML checks, their hits, false positives and the sanctions list updates
// (people.AML).

type amlCheckRow struct {
	emi.AMLCheck
	UserTok  *string `db:"user_tok"`
	Bday     *string `db:"bday"`
	Reviewer *string `db:"reviewer"`
	PName    *string `db:"pname"`
}

const amlCheckColumns = `c.token, c.partner_id, c.source, c.user_token AS user_tok, c.first_name, c.last_name, c.nationality,
	to_char(c.birthday, 'YYYY-MM-DD') AS bday, c.person_key, c.status, c.list_version, c.created_at, c.reviewed_at,
	c.reviewed_by::text AS reviewer, p.name AS pname,
	coalesce((SELECT name FROM staff_users s WHERE s.id = c.reviewed_by), '') AS reviewed_by_name,
	coalesce(c.merchant_token::text, '') AS merchant_token, coalesce(c.member_token::text, '') AS member_token,
	coalesce((SELECT m.name FROM merchants m WHERE m.token = c.merchant_token), '') AS merchant_name,
	coalesce((SELECT m.application::text FROM merchants m WHERE m.token = c.merchant_token), '') AS merchant_application`

func (r amlCheckRow) check() emi.AMLCheck {
	c := r.AMLCheck
	if r.UserTok != nil {
		c.UserToken = *r.UserTok
	}
	if r.Bday != nil {
		c.Birthday = *r.Bday
	}
	if r.Reviewer != nil {
		c.ReviewedBy = *r.Reviewer
	}
	if r.PName != nil {
		c.PartnerName = *r.PName
	}
	return c
}

// InsertAMLCheck implements people.AMLStore.
func (s *PeopleStore) InsertAMLCheck(ctx context.Context, c emi.AMLCheck) error {
	return s.db.InTx(ctx, func(ctx context.Context) error {
		_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO aml_checks (token, partner_id, source, user_token,
			first_name, last_name, nationality, birthday, person_key, status, list_version, created_at, merchant_token, member_token)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			c.Token, c.PartnerID, c.Source, nullUUID(c.UserToken), c.FirstName, c.LastName, c.Nationality,
			nullDate(c.Birthday), c.PersonKey, c.Status, c.ListVersion, c.CreatedAt, nullUUID(c.MerchantToken), nullUUID(c.MemberToken))
		if err != nil {
			return Translate(err)
		}
		for _, h := range c.Hits {
			bd, err := json.Marshal(h.Breakdown)
			if err != nil {
				return emi.Internal(err)
			}
			_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO aml_hits (check_token, n, list, entry_id, entry_type,
				name, matched_name, alias, score, fields, breakdown, fingerprint, suppressed)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
				c.Token, h.N, h.List, h.EntryID, h.EntryType, h.Name, h.MatchedName, h.Alias, h.Score,
				pq.StringArray(h.Fields), jsonText(bd), h.Fingerprint, h.Suppressed)
			if err != nil {
				return Translate(err)
			}
		}
		return nil
	})
}

func (s *PeopleStore) amlCheck(ctx context.Context, q string, args ...any) (emi.AMLCheck, error) {
	var r amlCheckRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, q, args...); err != nil {
		return emi.AMLCheck{}, NotFound(err, emi.ErrAMLCheckNotFound)
	}
	c := r.check()
	hits, err := s.amlHits(ctx, c.Token)
	c.Hits = hits
	return c, err
}

type amlHitRow struct {
	emi.AMLHit
	Decision  *string        `db:"decision"`
	DecidedBy *string        `db:"decided_by"`
	FieldsArr pq.StringArray `db:"fields"`
	Breakdown []byte         `db:"breakdown"`
}

func (s *PeopleStore) amlHits(ctx context.Context, token string) ([]emi.AMLHit, error) {
	var rows []amlHitRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT n, list, entry_id, entry_type, name, matched_name,
		alias, score, fields, breakdown, fingerprint, suppressed, decision, reason, decided_by::text AS decided_by, decided_at,
		coalesce((SELECT name FROM staff_users s WHERE s.id = h.decided_by), '') AS decided_by_name,
		coalesce(confirmed_by::text, '') AS confirmed_by, confirmed_at,
		coalesce((SELECT name FROM staff_users s WHERE s.id = h.confirmed_by), '') AS confirmed_by_name
		FROM aml_hits h WHERE check_token = $1 ORDER BY n`, token)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.AMLHit, 0, len(rows))
	for _, r := range rows {
		h := r.AMLHit
		h.Fields = r.FieldsArr
		if r.Decision != nil {
			h.Decision = *r.Decision
		}
		if r.DecidedBy != nil {
			h.DecidedBy = *r.DecidedBy
		}
		if err := json.Unmarshal(r.Breakdown, &h.Breakdown); err != nil {
			return nil, emi.Internal(err)
		}
		out = append(out, h)
	}
	return out, nil
}

// AMLCheck implements people.AMLStore.
func (s *PeopleStore) AMLCheck(ctx context.Context, partnerID, token string) (emi.AMLCheck, error) {
	if !validUUID(token) {
		return emi.AMLCheck{}, emi.ErrAMLCheckNotFound
	}
	q := `SELECT ` + amlCheckColumns + ` FROM aml_checks c JOIN partners p ON p.id = c.partner_id WHERE c.token = $1`
	if partnerID == "" {
		return s.amlCheck(ctx, q, token)
	}
	return s.amlCheck(ctx, q+` AND c.partner_id = $2`, token, partnerID)
}

// AMLCheckForUpdate implements people.AMLStore.
func (s *PeopleStore) AMLCheckForUpdate(ctx context.Context, token string) (emi.AMLCheck, error) {
	if !validUUID(token) {
		return emi.AMLCheck{}, emi.ErrAMLCheckNotFound
	}
	return s.amlCheck(ctx, `SELECT `+amlCheckColumns+` FROM aml_checks c JOIN partners p ON p.id = c.partner_id
		WHERE c.token = $1 FOR UPDATE OF c`, token)
}

// DecideAMLHit implements people.AMLStore.
func (s *PeopleStore) DecideAMLHit(ctx context.Context, token string, h emi.AMLHit) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE aml_hits SET decision = $3, reason = $4, decided_by = $5, decided_at = $6,
		confirmed_by = $7, confirmed_at = $8 WHERE check_token = $1 AND n = $2`,
		token, h.N, h.Decision, h.Reason, h.DecidedBy, h.DecidedAt, nullUUID(h.ConfirmedBy), h.ConfirmedAt)
	return Translate(err)
}

// SetAMLCheckStatus implements people.AMLStore.
func (s *PeopleStore) SetAMLCheckStatus(ctx context.Context, token string, st emi.AMLStatus, by string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE aml_checks SET status = $2, reviewed_by = $3, reviewed_at = $4 WHERE token = $1`,
		token, st, nullUUID(by), at)
	return Translate(err)
}

// FalsePositives implements people.AMLStore.
func (s *PeopleStore) FalsePositives(ctx context.Context, partnerID string, key []byte) (map[string]int, error) {
	var rows []struct {
		List        string `db:"list"`
		EntryID     string `db:"entry_id"`
		Fingerprint string `db:"fingerprint"`
		People      int    `db:"people"`
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT list, entry_id, fingerprint,
		CASE WHEN confirmed_by IS NULL THEN 1 ELSE 2 END AS people FROM aml_false_positives
		WHERE partner_id = $1 AND person_key = $2`, partnerID, key)
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.List+"\x00"+r.EntryID+"\x00"+r.Fingerprint] = r.People
	}
	return out, Translate(err)
}

// InsertFalsePositive implements people.AMLStore.
func (s *PeopleStore) InsertFalsePositive(ctx context.Context, partnerID string, key []byte, h emi.AMLHit, check, reason, by, confirmedBy string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO aml_false_positives (partner_id, person_key, list, entry_id,
		fingerprint, check_token, reason, decided_by, confirmed_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (partner_id, person_key, list, entry_id, fingerprint) DO UPDATE SET confirmed_by = EXCLUDED.confirmed_by,
			decided_by = EXCLUDED.decided_by, reason = EXCLUDED.reason, check_token = EXCLUDED.check_token,
			application = NULL, created_at = EXCLUDED.created_at
		WHERE aml_false_positives.confirmed_by IS NULL AND EXCLUDED.confirmed_by IS NOT NULL`,
		partnerID, key, h.List, h.EntryID, h.Fingerprint, check, reason, by, nullUUID(confirmedBy), at)
	return Translate(err)
}

// AMLChecks implements people.AMLStore: a page in f.Sort's order, by
// default the match queue oldest first and anything else newest first,
// after the check f.After (keyset on the sort expression and the token).
func (s *PeopleStore) AMLChecks(ctx context.Context, f emi.AMLFilter) ([]emi.AMLCheck, error) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + itoa(len(args)) }
	if f.Status != "" {
		where = append(where, "c.status = "+arg(f.Status))
	}
	if f.PartnerID != "" {
		where = append(where, "c.partner_id = "+arg(f.PartnerID))
	}
	if f.UserToken != "" {
		if !validUUID(f.UserToken) {
			return nil, nil
		}
		// A user's checks: the re-screenings that name it and the check
		// its creation was backed by.
		where = append(where, "(c.user_token = "+arg(f.UserToken)+" OR c.token = (SELECT aml_check FROM users WHERE token = "+arg(f.UserToken)+"))")
	}
	o := f.Sort
	if o.Key == "" {
		o = emi.SortOrder{Key: "created", Desc: f.Status != emi.AMLMatch}
	}
	if validUUID(f.After) {
		where = append(where, amlSort.after(o, arg(f.After)))
	}
	q := `SELECT ` + amlCheckColumns + ` FROM aml_checks c JOIN partners p ON p.id = c.partner_id`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += amlSort.orderBy(o) + " LIMIT " + arg(f.Limit)
	var rows []amlCheckRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.AMLCheck, 0, len(rows))
	for _, r := range rows {
		c := r.check()
		hits, err := s.amlHits(ctx, c.Token)
		if err != nil {
			return nil, err
		}
		c.Hits = hits
		out = append(out, c)
	}
	return out, nil
}

// amlSort is the AML lists' orders. The partner is read through the join
// the list's query has, so the cursor row is read through it too.
var amlSort = sortable{def: "created", table: "aml_checks c JOIN partners p ON p.id = c.partner_id", tie: "c.token", cols: map[string]string{
	"person":  "lower(c.first_name || ' ' || c.last_name)",
	"partner": "lower(p.name)",
	"status":  "c.status",
	"created": "c.created_at",
}}

// CountAMLChecks implements people.AMLStore.
func (s *PeopleStore) CountAMLChecks(ctx context.Context, st emi.AMLStatus) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM aml_checks WHERE status = $1`, st)
	return n, Translate(err)
}

// RaisedForUser implements people.AMLStore.
func (s *PeopleStore) RaisedForUser(ctx context.Context, user string) (map[string]bool, error) {
	var rows []struct {
		List        string `db:"list"`
		EntryID     string `db:"entry_id"`
		Fingerprint string `db:"fingerprint"`
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT h.list, h.entry_id, h.fingerprint FROM aml_hits h
		JOIN aml_checks c ON c.token = h.check_token
		WHERE c.user_token = $1 OR c.token = (SELECT aml_check FROM users WHERE token = $1)`, user)
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r.List+"\x00"+r.EntryID+"\x00"+r.Fingerprint] = true
	}
	return out, Translate(err)
}

// UserScreening implements people.AMLStore.
func (s *PeopleStore) UserScreening(ctx context.Context, user string) (emi.UserScreening, error) {
	var out emi.UserScreening
	if !validUUID(user) {
		return out, nil
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &out, `SELECT
		count(*) FILTER (WHERE status = 'match') AS open,
		count(*) FILTER (WHERE status = 'confirmed') AS confirmed,
		max(created_at) FILTER (WHERE source = 'user_update') AS identity_since
		FROM aml_checks WHERE user_token = $1`, user)
	return out, Translate(err)
}

// InsertSanctionsUpdate implements people.AMLStore.
func (s *PeopleStore) InsertSanctionsUpdate(ctx context.Context, u emi.SanctionsUpdate) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO sanctions_updates (at, instance, ok, error, version, changed)
		VALUES ($1, $2, $3, $4, $5, $6)`, u.At, u.Instance, u.OK, u.Error, u.Version, u.Changed)
	return Translate(err)
}

// SanctionsUpdates implements people.AMLStore.
func (s *PeopleStore) SanctionsUpdates(ctx context.Context, limit int) ([]emi.SanctionsUpdate, error) {
	var out []emi.SanctionsUpdate
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT at, instance, ok, error, version, changed
		FROM sanctions_updates ORDER BY at DESC, id DESC LIMIT $1`, limit)
	return out, Translate(err)
}
