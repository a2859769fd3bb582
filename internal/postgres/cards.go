package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/cards"
)

// CardStore keeps cards, their sealed data, history, wallet tokens and
// text messages.
type CardStore struct {
	db *DB
}

// NewCardStore returns the card store.
func NewCardStore(db *DB) *CardStore { return &CardStore{db: db} }

var (
	_ cards.CardStore     = (*CardStore)(nil)
	_ cards.CardGenerator = (*CardStore)(nil)
)

type cardRow struct {
	Token           string     `db:"token"`
	PartnerID       string     `db:"partner_id"`
	Program         string     `db:"program"`
	Account         *string    `db:"account"`
	Merchant        *string    `db:"merchant"`
	User            *string    `db:"user_token"`
	Type            string     `db:"type"`
	Status          string     `db:"status"`
	Activated       bool       `db:"activated"`
	First6          string     `db:"pan_first6"`
	Last4           string     `db:"pan_last4"`
	ExpiryMonth     int        `db:"expiry_month"`
	ExpiryYear      int        `db:"expiry_year"`
	PINErrors       int        `db:"pin_errors"`
	CVVErrors       int        `db:"cvv_errors"`
	AML             *string    `db:"aml"`
	EmbossName      string     `db:"emboss_name"`
	EmbossNameLine4 string     `db:"emboss_name_line4"`
	Fulfil1         string     `db:"fulfil1"`
	Fulfil2         string     `db:"fulfil2"`
	ThermalLine1    string     `db:"thermal_line1"`
	ThermalLine2    string     `db:"thermal_line2"`
	FirstName       string     `db:"first_name"`
	LastName        string     `db:"last_name"`
	Alias           string     `db:"alias"`
	URL             string     `db:"url"`
	Delivery        []byte     `db:"delivery"`
	Groups          []byte     `db:"groups"`
	OTPSMS          string     `db:"tds_otp_sms"`
	Biometric       bool       `db:"tds_biometric"`
	CreatedAt       time.Time  `db:"created_at"`
	UpdatedAt       time.Time  `db:"updated_at"`
	ActivatedAt     *time.Time `db:"activated_at"`
	TerminatedAt    *time.Time `db:"terminated_at"`
	StatusReason    string     `db:"status_reason"`
	Replaces        *string    `db:"replaces"`
	ReplacedBy      *string    `db:"replaced_by"`
	AccountStatus   string     `db:"account_status"`
	OwnerName       string     `db:"owner_name"`
}

const cardColumns = `c.token, c.partner_id, c.program, c.account::text AS account, c.merchant::text AS merchant,
	c.user_token::text AS user_token, c.type, c.status, c.activated, c.pan_first6, c.pan_last4, c.expiry_month, c.expiry_year,
	c.pin_errors, c.cvv_errors, c.aml::text AS aml, c.emboss_name, c.emboss_name_line4, c.fulfil1, c.fulfil2, c.thermal_line1,
	c.thermal_line2, c.first_name, c.last_name, c.alias, c.url, c.delivery, c.groups, c.tds_otp_sms, c.tds_biometric,
	c.created_at, c.updated_at, c.activated_at, c.terminated_at, c.status_reason, c.replaces::text AS replaces,
	(SELECT n.token::text FROM cards n WHERE n.replaces = c.token) AS replaced_by,
	coalesce((SELECT a.status FROM accounts a WHERE a.token = c.account), '') AS account_status,
	coalesce((SELECT u.first_name || ' ' || u.last_name FROM users u WHERE u.token = c.user_token),
	         (SELECT m.name FROM merchants m WHERE m.token = c.merchant), '') AS owner_name`

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (r cardRow) card() (emi.Card, error) {
	c := emi.Card{Token: r.Token, PartnerID: r.PartnerID, Program: r.Program, Account: deref(r.Account), Merchant: deref(r.Merchant),
		User: deref(r.User), Type: r.Type, Status: r.Status, Activated: r.Activated, First6: r.First6, Last4: r.Last4,
		ExpiryMonth: r.ExpiryMonth, ExpiryYear: r.ExpiryYear, PINErrors: r.PINErrors, CVVErrors: r.CVVErrors, AML: deref(r.AML),
		EmbossName: r.EmbossName, EmbossNameLine4: r.EmbossNameLine4, Fulfil1: r.Fulfil1, Fulfil2: r.Fulfil2,
		ThermalLine1: r.ThermalLine1, ThermalLine2: r.ThermalLine2, FirstName: r.FirstName, LastName: r.LastName, Alias: r.Alias,
		URL: r.URL, ThreeDS: emi.ThreeDS{OTPSMS: r.OTPSMS, Biometric: r.Biometric}, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		ActivatedAt: r.ActivatedAt, TerminatedAt: r.TerminatedAt, StatusReason: r.StatusReason, Replaces: deref(r.Replaces),
		ReplacedBy: deref(r.ReplacedBy), AccountStatus: r.AccountStatus, OwnerName: r.OwnerName,
		Groups: map[string]string{}}
	if len(r.Delivery) > 0 {
		c.Delivery = &emi.Delivery{}
		if err := json.Unmarshal(r.Delivery, c.Delivery); err != nil {
			return c, emi.Internal(err)
		}
	}
	if len(r.Groups) > 0 {
		if err := json.Unmarshal(r.Groups, &c.Groups); err != nil {
			return c, emi.Internal(err)
		}
	}
	return c, nil
}

func jsonParam(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, emi.Internal(err)
	}
	// Text, not []byte: with binary parameters lib/pq would send bytes as
	// jsonb's binary format.
	return string(b), nil
}

func deliveryText(d *emi.Delivery) (any, error) {
	if d == nil {
		return nil, nil
	}
	return jsonParam(d)
}

// InsertCard implements cards.CardStore.
func (s *CardStore) InsertCard(ctx context.Context, c emi.Card, sc cards.SealedCard) (bool, error) {
	delivery, err := deliveryText(c.Delivery)
	if err != nil {
		return false, err
	}
	groups, err := jsonParam(c.Groups)
	if err != nil {
		return false, err
	}
	res, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO cards (token, partner_id, program, account, merchant, user_token, type,
		status, activated, pan_sealed, pan_lookup, pan_first6, pan_last4, expiry_month, expiry_year, cvv_sealed, pin_sealed, aml,
		emboss_name, emboss_name_line4, fulfil1, fulfil2, thermal_line1, thermal_line2, first_name, last_name, alias, url,
		delivery, groups, tds_otp_sms, tds_biometric, created_at, updated_at, activated_at, replaces)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24,
		$25, $26, $27, $28, $29, $30, $31, $32, $33, $33, $34, $35)
		ON CONFLICT (pan_lookup) DO NOTHING`,
		c.Token, c.PartnerID, c.Program, nullUUID(c.Account), nullUUID(c.Merchant), nullUUID(c.User), c.Type, c.Status, c.Activated,
		sc.PAN, sc.PANLookup, c.First6, c.Last4, c.ExpiryMonth, c.ExpiryYear, sc.CVV, sc.PIN, nullUUID(c.AML),
		c.EmbossName, c.EmbossNameLine4, c.Fulfil1, c.Fulfil2, c.ThermalLine1, c.ThermalLine2, c.FirstName, c.LastName, c.Alias, c.URL,
		delivery, groups, c.ThreeDS.OTPSMS, c.ThreeDS.Biometric, c.CreatedAt, c.ActivatedAt, nullUUID(c.Replaces))
	if UniqueViolation(err, "cards_one_per_account") {
		return false, emi.ErrActiveCardExists
	}
	if UniqueViolation(err, "cards_replaces") {
		return false, emi.ErrCardInvalidTransition.WithDetail("the card was already replaced")
	}
	if err != nil {
		return false, Translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, Translate(err)
}

// PANTaken implements cards.CardStore.
func (s *CardStore) PANTaken(ctx context.Context, lookups [][]byte) (bool, error) {
	var taken bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &taken, `SELECT EXISTS (SELECT 1 FROM cards WHERE pan_lookup = ANY($1))`,
		pq.ByteaArray(lookups))
	return taken, Translate(err)
}

// Card implements cards.CardStore.
func (s *CardStore) Card(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Card, error) {
	if !validUUID(token) {
		return emi.Card{}, emi.ErrCardNotFound
	}
	// One statement: the card and its wallet tokens as a JSON array, so a
	// read is one round trip.
	q := `SELECT ` + cardColumns + `, (SELECT json_agg(json_build_object('token', w.token, 'card', w.card, 'wallet', w.wallet,
		'device_name', w.device_name, 'created_at', w.created_at) ORDER BY w.created_at)
		FROM card_wallet_tokens w WHERE w.card = c.token) AS wallets_json FROM cards c WHERE c.token = $1`
	args := []any{token}
	if partnerID != "" {
		q += ` AND c.partner_id = $2`
		args = append(args, partnerID)
	}
	if forUpdate {
		q += ` FOR UPDATE OF c`
	} else if !s.db.pooler.Prepares() {
		// Nothing is prepared behind a transaction-mode pooler: the same
		// statement in a PL/pgSQL function, whose plan the server keeps
		// (migration 00093).
		q, args = `SELECT * FROM card_read($1, $2)`, []any{token, nullUUID(partnerID)}
	}
	var r struct {
		cardRow
		Wallets []byte `db:"wallets_json"`
	}
	if err := s.db.getPrepared(ctx, &r, q, args...); err != nil { // q is one of five fixed texts
		return emi.Card{}, NotFound(err, emi.ErrCardNotFound)
	}
	c, err := r.card()
	if err != nil {
		return c, err
	}
	if len(r.Wallets) > 0 {
		var ws []walletJSON
		if err := json.Unmarshal(r.Wallets, &ws); err != nil {
			return c, emi.Internal(err)
		}
		c.Wallets = make([]emi.WalletToken, len(ws))
		for i, w := range ws {
			c.Wallets[i] = emi.WalletToken(w)
		}
	}
	return c, nil
}

// walletJSON is emi.WalletToken as the card read's json_build_object
// writes it.
type walletJSON struct {
	Token      string    `json:"token"`
	Card       string    `json:"card"`
	Wallet     string    `json:"wallet"`
	DeviceName string    `json:"device_name"`
	CreatedAt  time.Time `json:"created_at"`
}

// Sealed implements cards.CardStore.
func (s *CardStore) Sealed(ctx context.Context, token string) (cards.SealedCard, error) {
	var row struct {
		PAN    []byte `db:"pan_sealed"`
		Lookup []byte `db:"pan_lookup"`
		CVV    []byte `db:"cvv_sealed"`
		PIN    []byte `db:"pin_sealed"`
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row, `SELECT pan_sealed, pan_lookup, cvv_sealed, pin_sealed FROM cards WHERE token = $1`, token)
	if err != nil {
		return cards.SealedCard{}, NotFound(err, emi.ErrCardNotFound)
	}
	return cards.SealedCard{PAN: row.PAN, PANLookup: row.Lookup, CVV: row.CVV, PIN: row.PIN}, nil
}

// SetPINErrors implements cards.CardStore.
func (s *CardStore) SetPINErrors(ctx context.Context, card string, n int, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE cards SET pin_errors = $2, updated_at = $3 WHERE token = $1`, card, n, at)
	return Translate(err)
}

// UpdateCard implements cards.CardStore.
func (s *CardStore) UpdateCard(ctx context.Context, c emi.Card) error {
	delivery, err := deliveryText(c.Delivery)
	if err != nil {
		return err
	}
	groups, err := jsonParam(c.Groups)
	if err != nil {
		return err
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `UPDATE cards SET account = $2, merchant = $3, user_token = $4, type = $5, status = $6,
		activated = $7, expiry_month = $8, expiry_year = $9, pin_errors = $10, cvv_errors = $11, aml = $12, delivery = $13,
		groups = $14, tds_otp_sms = $15, tds_biometric = $16, updated_at = $17, activated_at = $18, terminated_at = $19,
		status_reason = $20,
		cvv_sealed = CASE WHEN $6 = 'terminated' THEN NULL ELSE cvv_sealed END,
		pin_sealed = CASE WHEN $6 = 'terminated' THEN NULL ELSE pin_sealed END
		WHERE token = $1`,
		c.Token, nullUUID(c.Account), nullUUID(c.Merchant), nullUUID(c.User), c.Type, c.Status, c.Activated, c.ExpiryMonth,
		c.ExpiryYear, c.PINErrors, c.CVVErrors, nullUUID(c.AML), delivery, groups, c.ThreeDS.OTPSMS, c.ThreeDS.Biometric,
		c.UpdatedAt, c.ActivatedAt, c.TerminatedAt, c.StatusReason)
	if UniqueViolation(err, "cards_one_per_account") {
		return emi.ErrActiveCardExists
	}
	return Translate(err)
}

// ReplaceCVV implements cards.CardStore.
func (s *CardStore) ReplaceCVV(ctx context.Context, token string, cvv []byte) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE cards SET cvv_sealed = $2, cvv_errors = 0 WHERE token = $1`, token, cvv)
	return Translate(err)
}

// OpenCardOfAccount implements cards.CardStore.
func (s *CardStore) OpenCardOfAccount(ctx context.Context, account string) (emi.Card, bool, error) {
	var token string
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &token, `SELECT token::text FROM cards WHERE account = $1 AND status <> 'terminated'`, account)
	if errors.Is(err, sql.ErrNoRows) {
		return emi.Card{}, false, nil
	}
	if err != nil {
		return emi.Card{}, false, Translate(err)
	}
	c, err := s.Card(ctx, "", token, true)
	return c, err == nil, err
}

// InsertCardChange implements cards.CardStore.
func (s *CardStore) InsertCardChange(ctx context.Context, card string, c emi.CardChange) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO card_history (card, change, from_value, to_value, reason, reason_code, actor, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, card, c.Change, c.From, c.To, c.Reason, c.ReasonCode, c.Actor, c.At)
	return Translate(err)
}

// LastChange implements cards.CardStore: the latest history entry of the
// card among changes, and whether a staff member made it (its actor is a
// staff user's id); found is false when there is none.
func (s *CardStore) LastChange(ctx context.Context, card string, changes []string) (cards.CardChangeSeen, error) {
	var row struct {
		At      time.Time `db:"at"`
		ByStaff bool      `db:"by_staff"`
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row, `SELECT at,
		EXISTS (SELECT 1 FROM staff_users WHERE id::text = h.actor) AS by_staff
		FROM card_history h WHERE card = $1 AND change = ANY($2) ORDER BY id DESC LIMIT 1`, card, pq.Array(changes))
	if errors.Is(err, sql.ErrNoRows) {
		return cards.CardChangeSeen{}, nil
	}
	if err != nil {
		return cards.CardChangeSeen{}, Translate(err)
	}
	return cards.CardChangeSeen{Found: true, At: row.At, ByStaff: row.ByStaff}, nil
}

// LastStaffChange implements cards.CardStore: when a staff member last
// made one of changes to the card (zero when never).
func (s *CardStore) LastStaffChange(ctx context.Context, card string, changes []string) (time.Time, error) {
	var at *time.Time
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &at, `SELECT max(at) FROM card_history h WHERE card = $1 AND change = ANY($2)
		AND EXISTS (SELECT 1 FROM staff_users WHERE id::text = h.actor)`, card, pq.Array(changes))
	if err != nil || at == nil {
		return time.Time{}, Translate(err)
	}
	return *at, nil
}

// CardHistory implements cards.CardStore.
func (s *CardStore) CardHistory(ctx context.Context, card string) ([]emi.CardChange, error) {
	var out []emi.CardChange
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT change, from_value, to_value, reason, reason_code, actor,
		coalesce((SELECT name FROM staff_users WHERE id::text = h.actor),
		         CASE WHEN EXISTS (SELECT 1 FROM partner_keys k WHERE k.id::text = h.actor) THEN 'partner API' END, h.actor) AS actor_name,
		at FROM card_history h WHERE card = $1 ORDER BY id`, card)
	return out, Translate(err)
}

// Cards implements cards.CardStore.
func (s *CardStore) Cards(ctx context.Context, f emi.CardFilter) ([]emi.Card, int64, error) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + itoa(len(args)) }
	if f.PartnerID != "" {
		where = append(where, "c.partner_id = "+arg(f.PartnerID))
	}
	if f.Program != "" {
		where = append(where, "c.program = "+arg(f.Program))
	}
	for col, v := range map[string]string{"c.merchant": f.Merchant, "c.user_token": f.User, "c.account": f.Account} {
		if v == "" {
			continue
		}
		if !validUUID(v) {
			return []emi.Card{}, 0, nil
		}
		where = append(where, col+" = "+arg(v))
	}
	w := ""
	if len(where) > 0 {
		w = " WHERE " + strings.Join(where, " AND ")
	}
	var total int64
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &total, `SELECT count(*) FROM cards c`+w, args...); err != nil {
		return nil, 0, Translate(err)
	}
	if f.StartingAfter != "" {
		// The cursor: a card of the partner (checked by the service);
		// the page counts from the one after it.
		cursor := "(c.created_at, c.token) < (SELECT x.created_at, x.token FROM cards x WHERE x.token = " + arg(f.StartingAfter) + ")"
		if w == "" {
			w = " WHERE " + cursor
		} else {
			w += " AND " + cursor
		}
	}
	limit, page := max(f.Limit, 1), max(f.Page, 1)
	return s.list(ctx, total, `SELECT `+cardColumns+` FROM cards c`+w+` ORDER BY c.created_at DESC, c.token DESC LIMIT `+
		arg(limit)+` OFFSET `+arg((page-1)*limit), args...)
}

func (s *CardStore) list(ctx context.Context, total int64, q string, args ...any) ([]emi.Card, int64, error) {
	var rows []cardRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, 0, Translate(err)
	}
	out := make([]emi.Card, 0, len(rows))
	for _, r := range rows {
		c, err := r.card()
		if err != nil {
			return nil, 0, err
		}
		out = append(out, c)
	}
	return out, total, nil
}

// SearchCards implements cards.CardStore.
func (s *CardStore) SearchCards(ctx context.Context, q cards.CardQuery) ([]emi.Card, error) {
	var where string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + itoa(len(args)) }
	switch {
	case q.Token != "":
		if !validUUID(q.Token) {
			return []emi.Card{}, nil
		}
		where = "c.token = " + arg(q.Token)
	case len(q.PANLookups) > 0:
		where = "c.pan_lookup = ANY(" + arg(pq.ByteaArray(q.PANLookups)) + ")"
	case q.IBAN != "":
		where = "c.account IN (SELECT account FROM ibans WHERE iban = " + arg(q.IBAN) + ")"
	case q.Last4 != "":
		owner := strings.ToLower(strings.TrimSpace(q.Owner))
		where = "c.pan_last4 = " + arg(q.Last4)
		if owner != "" {
			like := "%" + escapeLike(owner) + "%"
			where += " AND (c.user_token IN (SELECT token FROM users WHERE lower(first_name || ' ' || last_name) LIKE " + arg(like) +
				" OR lower(email) = " + arg(owner) + ")" +
				" OR c.merchant IN (SELECT token FROM merchants WHERE lower(name) LIKE " + arg(like) + "))"
		}
	case q.Owner != "":
		owner := strings.ToLower(strings.TrimSpace(q.Owner))
		phone := q.Phone
		cond := "c.user_token IN (SELECT token FROM users WHERE lower(email) = " + arg(owner)
		if len(phone) >= 6 {
			cond += " OR regexp_replace(mobile_phone, '[^+0-9]', '', 'g') = " + arg(phone) +
				" OR regexp_replace(phone, '[^+0-9]', '', 'g') = " + arg(phone)
			cond += ") OR c.tds_otp_sms = " + arg(phone) + " OR c.delivery->>'phone' = " + arg(phone)
		} else {
			cond += ")"
		}
		if len([]rune(owner)) >= 3 {
			// A name: the cards of the people (and merchants) of the card's
			// own partner whose name holds it.
			like := "%" + escapeLike(owner) + "%"
			cond += " OR EXISTS (SELECT 1 FROM users u WHERE u.token = c.user_token AND u.partner_id = c.partner_id" +
				" AND lower(u.first_name || ' ' || u.last_name) LIKE " + arg(like) + ")" +
				" OR EXISTS (SELECT 1 FROM merchants m WHERE m.token = c.merchant AND m.partner_id = c.partner_id" +
				" AND lower(m.name) LIKE " + arg(like) + ")"
		}
		where = "(" + cond + ")"
	default:
		return []emi.Card{}, nil
	}
	limit := q.Limit
	if limit <= 0 || limit > 100 {
		limit = 50
	}
	out, _, err := s.list(ctx, 0, `SELECT `+cardColumns+` FROM cards c WHERE `+where+` ORDER BY c.created_at DESC LIMIT `+arg(limit), args...)
	return out, err
}

// InsertWalletToken implements cards.CardStore.
func (s *CardStore) InsertWalletToken(ctx context.Context, w emi.WalletToken) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO card_wallet_tokens (token, card, wallet, device_name, created_at)
		VALUES ($1, $2, $3, $4, $5)`, w.Token, w.Card, w.Wallet, w.DeviceName, w.CreatedAt)
	return Translate(err)
}

// InsertSMS implements cards.CardStore.
func (s *CardStore) InsertSMS(ctx context.Context, m emi.SMSMessage) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO sms_messages (partner_id, card, to_phone, text_masked, provider, status,
		provider_ref, error, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		m.PartnerID, m.Card, m.To, m.TextMasked, m.Provider, m.Status, m.ProviderRef, m.Error, m.CreatedAt)
	return Translate(err)
}

// SMSMessages implements cards.CardStore ("" card: every message).
func (s *CardStore) SMSMessages(ctx context.Context, card string, limit int) ([]emi.SMSMessage, error) {
	out := []emi.SMSMessage{}
	q := `SELECT id, partner_id, card::text AS card, to_phone, text_masked, provider, status, provider_ref, error, created_at FROM sms_messages`
	args := []any{limit}
	if card != "" {
		if !validUUID(card) {
			return out, nil
		}
		q += ` WHERE card = $2`
		args = append(args, card)
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, q+` ORDER BY created_at DESC, id DESC LIMIT $1`, args...)
	return out, Translate(err)
}

// StaffNames implements cards.CardStore.
func (s *CardStore) StaffNames(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	var valid []string
	for _, id := range ids {
		if validUUID(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	var rows []struct {
		ID   string `db:"id"`
		Name string `db:"name"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT id::text AS id, name FROM staff_users WHERE id = ANY($1::uuid[])`,
		pq.StringArray(valid)); err != nil {
		return nil, Translate(err)
	}
	for _, r := range rows {
		out[r.ID] = r.Name
	}
	return out, nil
}

// UserPhone implements cards.CardStore: the mobile phone, else the
// phone.
func (s *CardStore) UserPhone(ctx context.Context, user string) (string, error) {
	var phone string
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &phone, `SELECT coalesce(nullif(mobile_phone, ''), phone) FROM users WHERE token = $1`, user)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return phone, Translate(err)
}
