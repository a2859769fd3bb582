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

// PeopleStore keeps merchants, users, documents, AML checks and KYC
// sessions.
type PeopleStore struct {
	db *DB
}

// NewPeopleStore returns the people store.
func NewPeopleStore(db *DB) *PeopleStore { return &PeopleStore{db: db} }

// MerchantUsable implements service.UserStore.
func (s *PeopleStore) MerchantUsable(ctx context.Context, partnerID, merchant string) (bool, error) {
	if !validUUID(merchant) {
		return false, nil
	}
	var ok bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &ok,
		`SELECT EXISTS (SELECT 1 FROM merchants WHERE token = $1 AND partner_id = $2)`, merchant, partnerID)
	return ok, Translate(err)
}

type userRow struct {
	Token          string     `db:"token"`
	PartnerID      string     `db:"partner_id"`
	MasterMerchant string     `db:"master_merchant"`
	Merchant       string     `db:"merchant"`
	Email          string     `db:"email"`
	Type           string     `db:"type"`
	AML            *string    `db:"aml_check"`
	RegistrationIP string     `db:"registration_ip"`
	Profile        []byte     `db:"profile"`
	Status         string     `db:"status"`
	KYCStatus      string     `db:"kyc_status"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
	RemovedAt      *time.Time `db:"removed_at"`
}

const userColumns = `token, partner_id, master_merchant, merchant, email, type, aml_check, registration_ip, profile,
	status, kyc_status, created_at, updated_at, removed_at`

// storedProfile is the profile column: the updatable fields plus company,
// which is create-only and not a column of its own.
type storedProfile struct {
	emi.UserFields
	Company string `json:"company,omitempty"`
}

func (r userRow) user() (emi.User, error) {
	var p storedProfile
	if err := json.Unmarshal(r.Profile, &p); err != nil {
		return emi.User{}, emi.Internal(err)
	}
	u := emi.User{UserFields: p.UserFields, Token: r.Token, PartnerID: r.PartnerID, MasterMerchant: r.MasterMerchant,
		Email: r.Email, RegistrationIP: r.RegistrationIP, Type: r.Type, Company: p.Company,
		Status: emi.UserStatus(r.Status), KYCStatus: emi.KYCStatus(r.KYCStatus),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, RemovedAt: r.RemovedAt}
	u.Merchant = r.Merchant
	if r.AML != nil {
		u.AML = *r.AML
	}
	return u, nil
}

// InsertUser implements service.UserStore.
func (s *PeopleStore) InsertUser(ctx context.Context, u emi.User) error {
	profile, err := json.Marshal(storedProfile{UserFields: u.UserFields, Company: u.Company})
	if err != nil {
		return emi.Internal(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO users (token, partner_id, master_merchant, merchant, email,
		first_name, middle_name, last_name, birthday, nationality, phone, mobile_phone, type, aml_check, registration_ip,
		profile, status, kyc_status, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $19)`,
		u.Token, u.PartnerID, u.MasterMerchant, u.Merchant, u.Email, u.FirstName, u.MiddleName, u.LastName,
		nullDate(u.Birthday), u.Nationality, u.Phone, u.MobilePhone, u.Type, nullUUID(u.AML), u.RegistrationIP,
		jsonText(profile), u.Status, u.KYCStatus, u.CreatedAt)
	if UniqueViolation(err, "users_email_per_master") {
		return emi.ErrDuplicateUser
	}
	return Translate(err)
}

func (s *PeopleStore) user(ctx context.Context, query string, args ...any) (emi.User, error) {
	var r userRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, query, args...); err != nil {
		return emi.User{}, NotFound(err, emi.ErrUserNotFound)
	}
	return r.user()
}

// User implements service.UserStore.
func (s *PeopleStore) User(ctx context.Context, partnerID, token string) (emi.User, error) {
	if !validUUID(token) {
		return emi.User{}, emi.ErrUserNotFound
	}
	if partnerID == "" {
		return s.user(ctx, `SELECT `+userColumns+` FROM users WHERE token = $1`, token)
	}
	return s.user(ctx, `SELECT `+userColumns+` FROM users WHERE token = $1 AND partner_id = $2 AND status = 'active'`, token, partnerID)
}

// UserForUpdate implements service.UserStore.
func (s *PeopleStore) UserForUpdate(ctx context.Context, partnerID, token string) (emi.User, error) {
	if !validUUID(token) {
		return emi.User{}, emi.ErrUserNotFound
	}
	return s.user(ctx, `SELECT `+userColumns+` FROM users WHERE token = $1 AND partner_id = $2 AND status = 'active' FOR UPDATE`, token, partnerID)
}

// UpdateUser implements service.UserStore.
func (s *PeopleStore) UpdateUser(ctx context.Context, u emi.User) error {
	profile, err := json.Marshal(storedProfile{UserFields: u.UserFields, Company: u.Company})
	if err != nil {
		return emi.Internal(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `UPDATE users SET merchant = $2, first_name = $3, middle_name = $4,
		last_name = $5, birthday = $6, nationality = $7, phone = $8, mobile_phone = $9, profile = $10, updated_at = $11
		WHERE token = $1`,
		u.Token, u.Merchant, u.FirstName, u.MiddleName, u.LastName, nullDate(u.Birthday), u.Nationality, u.Phone,
		u.MobilePhone, jsonText(profile), u.UpdatedAt)
	return Translate(err)
}

// RemoveUser implements service.UserStore.
func (s *PeopleStore) RemoveUser(ctx context.Context, u emi.User) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE users SET status = 'removed', removed_at = $2, updated_at = $2 WHERE token = $1`, u.Token, u.RemovedAt)
	return Translate(err)
}

// UserHasProducts implements service.UserStore: a non-terminated account
// or card.
func (s *PeopleStore) UserHasProducts(ctx context.Context, token string) (bool, error) {
	var has bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &has, `SELECT EXISTS (SELECT 1 FROM accounts WHERE user_token = $1 AND status <> 'terminated')
		OR EXISTS (SELECT 1 FROM cards WHERE user_token = $1 AND status <> 'terminated')`, token)
	return has, Translate(err)
}

// SetUserKYCStatus implements service.UserStore.
func (s *PeopleStore) SetUserKYCStatus(ctx context.Context, token string, st emi.KYCStatus) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE users SET kyc_status = $2 WHERE token = $1`, token, st)
	return Translate(err)
}

// Users implements service.UserStore: q matches a token exactly, or a
// prefix of the e-mail, a phone number's digits, or the name.
func (s *PeopleStore) Users(ctx context.Context, f emi.UserFilter) ([]emi.User, error) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + itoa(len(args)) }
	if q := strings.TrimSpace(f.Q); q != "" {
		if validUUID(q) {
			where = append(where, "token = "+arg(q))
		} else {
			like := escapeLike(strings.ToLower(q)) + "%"
			name := "%" + escapeLike(strings.ToLower(q)) + "%"
			digits := onlyDigits(q)
			cond := "(lower(email) LIKE " + arg(like) + " OR lower(first_name || ' ' || last_name) LIKE " + arg(name) +
				" OR lower(last_name || ' ' || first_name) LIKE " + arg(name)
			if len(digits) >= 4 {
				d := arg("%" + digits + "%")
				cond += " OR regexp_replace(phone, '[^0-9]', '', 'g') LIKE " + d + " OR regexp_replace(mobile_phone, '[^0-9]', '', 'g') LIKE " + d
			}
			where = append(where, cond+")")
		}
	}
	if f.PartnerID != "" {
		where = append(where, "partner_id = "+arg(f.PartnerID))
	}
	if f.KYCStatus != "" {
		where = append(where, "kyc_status = "+arg(f.KYCStatus))
	}
	order := " ORDER BY created_at DESC, token DESC"
	switch {
	case f.Sort.Key != "":
		if validUUID(f.BeforeToken) {
			where = append(where, userSort.after(f.Sort, arg(f.BeforeToken)))
		}
		order = userSort.orderBy(f.Sort)
	case !f.BeforeAt.IsZero() && validUUID(f.BeforeToken):
		where = append(where, "(created_at, token) < ("+arg(f.BeforeAt)+", "+arg(f.BeforeToken)+")")
	}
	q := `SELECT ` + userColumns + ` FROM users`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += order + " LIMIT " + arg(f.Limit)
	return s.users(ctx, q, args...)
}

// userSort is the people list's orders (issue 23).
var userSort = sortable{def: "created", table: "users", tie: "token", cols: map[string]string{
	"name":    "lower(last_name || ' ' || first_name)",
	"email":   "lower(email)",
	"kyc":     "kyc_status",
	"created": "created_at",
}}

func (s *PeopleStore) users(ctx context.Context, q string, args ...any) ([]emi.User, error) {
	var rows []userRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.User, 0, len(rows))
	for _, r := range rows {
		u, err := r.user()
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// ActiveUsersAfter implements service.UserStore.
func (s *PeopleStore) ActiveUsersAfter(ctx context.Context, after string, limit int) ([]emi.User, error) {
	if after == "" {
		after = "00000000-0000-0000-0000-000000000000"
	}
	return s.users(ctx, `SELECT `+userColumns+` FROM users WHERE status = 'active' AND token > $1 ORDER BY token LIMIT $2`, after, limit)
}

// InsertDocument implements service.DocumentStore.
func (s *PeopleStore) InsertDocument(ctx context.Context, d emi.StoredDocument, enc []byte) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO documents (token, partner_id, owner_type, owner_token,
		document_type, file_type, content_type, size, sha256, content_enc, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		d.Token, d.PartnerID, d.OwnerType, d.OwnerToken, d.DocumentType, d.FileType, d.ContentType, d.Size, d.SHA256, enc, d.CreatedAt)
	return Translate(err)
}

const documentColumns = `token, partner_id, owner_type, owner_token, document_type, file_type, content_type, size, sha256, created_at`

// Documents implements service.DocumentStore.
func (s *PeopleStore) Documents(ctx context.Context, ownerType, ownerToken string) ([]emi.StoredDocument, error) {
	var out []emi.StoredDocument
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT `+documentColumns+` FROM documents
		WHERE owner_type = $1 AND owner_token = $2 ORDER BY created_at, token`, ownerType, ownerToken)
	return out, Translate(err)
}

// Document implements service.DocumentStore.
func (s *PeopleStore) Document(ctx context.Context, token string) (emi.StoredDocument, []byte, error) {
	var row struct {
		emi.StoredDocument
		Enc []byte `db:"content_enc"`
	}
	if !validUUID(token) {
		return emi.StoredDocument{}, nil, emi.ErrDocumentNotFound
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row, `SELECT `+documentColumns+`, content_enc FROM documents WHERE token = $1`, token)
	if err != nil {
		return emi.StoredDocument{}, nil, NotFound(err, emi.ErrDocumentNotFound)
	}
	return row.StoredDocument, row.Enc, nil
}

// --- AML checks ---

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

// InsertAMLCheck implements service.AMLStore.
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

// AMLCheck implements service.AMLStore.
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

// AMLCheckForUpdate implements service.AMLStore.
func (s *PeopleStore) AMLCheckForUpdate(ctx context.Context, token string) (emi.AMLCheck, error) {
	if !validUUID(token) {
		return emi.AMLCheck{}, emi.ErrAMLCheckNotFound
	}
	return s.amlCheck(ctx, `SELECT `+amlCheckColumns+` FROM aml_checks c JOIN partners p ON p.id = c.partner_id
		WHERE c.token = $1 FOR UPDATE OF c`, token)
}

// DecideAMLHit implements service.AMLStore.
func (s *PeopleStore) DecideAMLHit(ctx context.Context, token string, h emi.AMLHit) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE aml_hits SET decision = $3, reason = $4, decided_by = $5, decided_at = $6,
		confirmed_by = $7, confirmed_at = $8 WHERE check_token = $1 AND n = $2`,
		token, h.N, h.Decision, h.Reason, h.DecidedBy, h.DecidedAt, nullUUID(h.ConfirmedBy), h.ConfirmedAt)
	return Translate(err)
}

// SetAMLCheckStatus implements service.AMLStore.
func (s *PeopleStore) SetAMLCheckStatus(ctx context.Context, token string, st emi.AMLStatus, by string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE aml_checks SET status = $2, reviewed_by = $3, reviewed_at = $4 WHERE token = $1`,
		token, st, nullUUID(by), at)
	return Translate(err)
}

// FalsePositives implements service.AMLStore.
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

// InsertFalsePositive implements service.AMLStore.
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

// AMLChecks implements service.AMLStore: the match queue oldest first,
// anything else newest first.
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
	q := `SELECT ` + amlCheckColumns + ` FROM aml_checks c JOIN partners p ON p.id = c.partner_id`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if f.Status == emi.AMLMatch {
		q += " ORDER BY c.created_at, c.token"
	} else {
		q += " ORDER BY c.created_at DESC, c.token DESC"
	}
	q += " LIMIT " + arg(f.Limit)
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

// CountAMLChecks implements service.AMLStore.
func (s *PeopleStore) CountAMLChecks(ctx context.Context, st emi.AMLStatus) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM aml_checks WHERE status = $1`, st)
	return n, Translate(err)
}

// RaisedForUser implements service.AMLStore.
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

// UserScreening implements service.AMLStore.
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

// InsertSanctionsUpdate implements service.AMLStore.
func (s *PeopleStore) InsertSanctionsUpdate(ctx context.Context, u emi.SanctionsUpdate) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO sanctions_updates (at, instance, ok, error, version, changed)
		VALUES ($1, $2, $3, $4, $5, $6)`, u.At, u.Instance, u.OK, u.Error, u.Version, u.Changed)
	return Translate(err)
}

// SanctionsUpdates implements service.AMLStore.
func (s *PeopleStore) SanctionsUpdates(ctx context.Context, limit int) ([]emi.SanctionsUpdate, error) {
	var out []emi.SanctionsUpdate
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT at, instance, ok, error, version, changed
		FROM sanctions_updates ORDER BY at DESC, id DESC LIMIT $1`, limit)
	return out, Translate(err)
}

// --- KYC sessions ---

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

const kycFrom = ` FROM kyc_sessions k JOIN partners p ON p.id = k.partner_id JOIN users u ON u.token = k.user_token`

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

// OpenKYCSession implements service.KYCStore.
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

// InsertKYCSession implements service.KYCStore.
func (s *PeopleStore) InsertKYCSession(ctx context.Context, k emi.KYCSession, hash, enc []byte) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO kyc_sessions (token, partner_id, user_token, provider,
		secret_hash, secret_enc, status, expires_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
		k.Token, k.PartnerID, k.UserToken, k.Provider, hash, enc, k.Status, k.ExpiresAt, k.CreatedAt)
	return Translate(err)
}

// KYCSessionBySecret implements service.KYCStore.
func (s *PeopleStore) KYCSessionBySecret(ctx context.Context, hash []byte) (emi.KYCSession, error) {
	return s.kyc(ctx, `SELECT `+kycColumns+kycFrom+` WHERE k.secret_hash = $1 FOR UPDATE OF k`, hash)
}

// KYCSession implements service.KYCStore.
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

// UpdateKYCSession implements service.KYCStore.
func (s *PeopleStore) UpdateKYCSession(ctx context.Context, k emi.KYCSession) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE kyc_sessions SET status = $2, document_kind = $3, consent_at = $4,
		submitted_at = $5, reviewed_at = $6, reviewed_by = $7, reason = $8, internal_note = $9, updated_at = $10 WHERE token = $1`,
		k.Token, k.Status, k.DocumentKind, k.ConsentAt, k.SubmittedAt, k.ReviewedAt, nullUUID(k.ReviewedBy), k.Reason, k.InternalNote, k.UpdatedAt)
	return Translate(err)
}

// KYCSessions implements service.KYCStore: the submitted queue oldest
// first, anything else newest first.
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
	q := `SELECT ` + kycColumns + kycFrom
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if f.Status == emi.KYCSubmitted {
		q += " ORDER BY k.submitted_at, k.token"
	} else {
		q += " ORDER BY k.created_at DESC, k.token DESC"
	}
	q += " LIMIT " + arg(f.Limit)
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

// CountKYCSessions implements service.KYCStore.
func (s *PeopleStore) CountKYCSessions(ctx context.Context, st emi.KYCStatus) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM kyc_sessions WHERE status = $1`, st)
	return n, Translate(err)
}

// onlyDigits keeps the digits of s.
func onlyDigits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
