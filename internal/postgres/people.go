package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
	"emi/internal/service/cards"
	"emi/internal/service/onboarding"
	"emi/internal/service/people"
)

// PeopleStore is the people area's store: merchants, users, documents
// (people_documents.go), AML checks (people_aml.go, people_merchants.go),
// KYC sessions (people_kyc.go) and the watch list (people_watchlist.go).
type PeopleStore struct {
	db *DB
}

// NewPeopleStore returns the people store.
func NewPeopleStore(db *DB) *PeopleStore { return &PeopleStore{db: db} }

var (
	_ people.UserStore        = (*PeopleStore)(nil)
	_ people.AMLStore         = (*PeopleStore)(nil)
	_ people.MerchantAMLStore = (*PeopleStore)(nil)
	_ people.DocumentStore    = (*PeopleStore)(nil)
	_ people.KYCStore         = (*PeopleStore)(nil)
	_ people.WatchlistStore   = (*PeopleStore)(nil)
	// Other areas read people through it: the onboarding checks the
	// remembered false positives, cards the card holder.
	_ onboarding.FalsePositiveReader = (*PeopleStore)(nil)
	_ cards.CardUsers                = (*PeopleStore)(nil)
)

// MerchantUsable implements people.UserStore.
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

// InsertUser implements people.UserStore.
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

// User implements people.UserStore.
func (s *PeopleStore) User(ctx context.Context, partnerID, token string) (emi.User, error) {
	if !validUUID(token) {
		return emi.User{}, emi.ErrUserNotFound
	}
	if partnerID == "" {
		return s.user(ctx, `SELECT `+userColumns+` FROM users WHERE token = $1`, token)
	}
	return s.user(ctx, `SELECT `+userColumns+` FROM users WHERE token = $1 AND partner_id = $2 AND status = 'active'`, token, partnerID)
}

// UserForUpdate implements people.UserStore.
func (s *PeopleStore) UserForUpdate(ctx context.Context, partnerID, token string) (emi.User, error) {
	if !validUUID(token) {
		return emi.User{}, emi.ErrUserNotFound
	}
	return s.user(ctx, `SELECT `+userColumns+` FROM users WHERE token = $1 AND partner_id = $2 AND status = 'active' FOR UPDATE`, token, partnerID)
}

// UpdateUser implements people.UserStore.
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

// RemoveUser implements people.UserStore.
func (s *PeopleStore) RemoveUser(ctx context.Context, u emi.User) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE users SET status = 'removed', removed_at = $2, updated_at = $2 WHERE token = $1`, u.Token, u.RemovedAt)
	return Translate(err)
}

// UserHasProducts implements people.UserStore: a non-terminated account
// or card.
func (s *PeopleStore) UserHasProducts(ctx context.Context, token string) (bool, error) {
	var has bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &has, `SELECT EXISTS (SELECT 1 FROM accounts WHERE user_token = $1 AND status <> 'terminated')
		OR EXISTS (SELECT 1 FROM cards WHERE user_token = $1 AND status <> 'terminated')`, token)
	return has, Translate(err)
}

// SetUserKYCStatus implements people.UserStore.
func (s *PeopleStore) SetUserKYCStatus(ctx context.Context, token string, st emi.KYCStatus) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE users SET kyc_status = $2 WHERE token = $1`, token, st)
	return Translate(err)
}

// Users implements people.UserStore: q matches a token exactly, or a
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

// userSort is the people list's orders.
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

// ActiveUsersAfter implements people.UserStore.
func (s *PeopleStore) ActiveUsersAfter(ctx context.Context, after string, limit int) ([]emi.User, error) {
	if after == "" {
		after = "00000000-0000-0000-0000-000000000000"
	}
	return s.users(ctx, `SELECT `+userColumns+` FROM users WHERE status = 'active' AND token > $1 ORDER BY token LIMIT $2`, after, limit)
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
