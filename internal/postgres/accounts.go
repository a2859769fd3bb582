package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/cards"
)

// AccountStore keeps programs, accounts, balances and issued identifiers.
type AccountStore struct {
	db *DB
}

// NewAccountStore returns the account store.
func NewAccountStore(db *DB) *AccountStore { return &AccountStore{db: db} }

var (
	_ accounts.AccountStore = (*AccountStore)(nil)
	_ accounts.ProgramStore = (*AccountStore)(nil)
	// Cards read the card's account and program through it.
	_ cards.CardAccounts = (*AccountStore)(nil)
)

type programRow struct {
	Code               string         `db:"code"`
	Name               string         `db:"name"`
	Currencies         pq.StringArray `db:"currencies"`
	Schemes            pq.StringArray `db:"schemes"`
	CardsAllowed       bool           `db:"cards_allowed"`
	CardTypes          pq.StringArray `db:"card_types"`
	BINPrefix          string         `db:"bin_prefix"`
	CardValidityMonths int            `db:"card_validity_months"`
	AMLRequired        bool           `db:"aml_required"`
	Overdraft          bool           `db:"overdraft"`
	PINBySMS           bool           `db:"pin_by_sms"`
	WalletProvisioning bool           `db:"wallet_provisioning"`
	AllowedPartners    pq.StringArray `db:"allowed_partners"`
	UpdatedAt          time.Time      `db:"updated_at"`
}

func (s *AccountStore) programs(ctx context.Context, where string, args ...any) ([]emi.Program, error) {
	var rows []programRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT code, name, currencies, schemes, cards_allowed, card_types,
		bin_prefix, card_validity_months, aml_required, overdraft, pin_by_sms, wallet_provisioning, allowed_partners::text[] AS allowed_partners, updated_at
		FROM programs `+where+` ORDER BY code`, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.Program, 0, len(rows))
	for _, r := range rows {
		p := emi.Program{Code: r.Code, Name: r.Name, Currencies: r.Currencies, Schemes: r.Schemes, CardsAllowed: r.CardsAllowed,
			CardTypes: r.CardTypes, BINPrefix: r.BINPrefix, CardValidityMonths: r.CardValidityMonths, AMLRequired: r.AMLRequired,
			Overdraft: r.Overdraft, PINBySMS: r.PINBySMS, WalletProvisioning: r.WalletProvisioning, Groups: map[string][]string{}, Defaults: map[string]string{},
			UpdatedAt: r.UpdatedAt}
		if r.AllowedPartners != nil {
			p.AllowedPartners = r.AllowedPartners
		}
		var gs []struct {
			Kind    string `db:"kind"`
			Code    string `db:"code"`
			Default bool   `db:"is_default"`
		}
		if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &gs, `SELECT kind, code, is_default FROM program_groups WHERE program = $1 ORDER BY kind, code`, p.Code); err != nil {
			return nil, Translate(err)
		}
		for _, g := range gs {
			p.Groups[g.Kind] = append(p.Groups[g.Kind], g.Code)
			if g.Default {
				p.Defaults[g.Kind] = g.Code
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Program implements accounts.AccountStore.
func (s *AccountStore) Program(ctx context.Context, code string) (emi.Program, error) {
	ps, err := s.programs(ctx, `WHERE code = $1`, code)
	if err != nil {
		return emi.Program{}, err
	}
	if len(ps) == 0 {
		return emi.Program{}, emi.ErrProgramNotFound
	}
	return ps[0], nil
}

// Programs implements accounts.AccountStore.
func (s *AccountStore) Programs(ctx context.Context) ([]emi.Program, error) {
	return s.programs(ctx, "")
}

// UpsertProgram implements accounts.AccountStore: the program and its
// groups as given.
func (s *AccountStore) UpsertProgram(ctx context.Context, p emi.Program) error {
	return s.db.InTx(ctx, func(ctx context.Context) error {
		var allowed any
		if p.AllowedPartners != nil {
			allowed = pq.StringArray(p.AllowedPartners)
		}
		if p.CardTypes == nil {
			p.CardTypes = []string{}
		}
		_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO programs (code, name, currencies, schemes, cards_allowed, card_types,
			bin_prefix, card_validity_months, aml_required, overdraft, allowed_partners, pin_by_sms, wallet_provisioning)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::uuid[], $12, $13)
			ON CONFLICT (code) DO UPDATE SET name = EXCLUDED.name, currencies = EXCLUDED.currencies, schemes = EXCLUDED.schemes,
			cards_allowed = EXCLUDED.cards_allowed, card_types = EXCLUDED.card_types, bin_prefix = EXCLUDED.bin_prefix,
			card_validity_months = EXCLUDED.card_validity_months, aml_required = EXCLUDED.aml_required,
			overdraft = EXCLUDED.overdraft, allowed_partners = EXCLUDED.allowed_partners, pin_by_sms = EXCLUDED.pin_by_sms,
			wallet_provisioning = EXCLUDED.wallet_provisioning, updated_at = now()`,
			p.Code, p.Name, pq.StringArray(p.Currencies), pq.StringArray(p.Schemes), p.CardsAllowed, pq.StringArray(p.CardTypes),
			p.BINPrefix, max(p.CardValidityMonths, 1), p.AMLRequired, p.Overdraft, allowed, p.PINBySMS, p.WalletProvisioning)
		if err != nil {
			return Translate(err)
		}
		if _, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM program_groups WHERE program = $1`, p.Code); err != nil {
			return Translate(err)
		}
		for kind, codes := range p.Groups {
			for _, c := range codes {
				if _, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO program_groups (program, kind, code, is_default) VALUES ($1, $2, $3, $4)`,
					p.Code, kind, c, p.Defaults[kind] == c); err != nil {
					return Translate(err)
				}
			}
		}
		return nil
	})
}

// MerchantForAccounts implements accounts.AccountStore.
func (s *AccountStore) MerchantForAccounts(ctx context.Context, partnerID, merchant string) (bool, bool, error) {
	if !validUUID(merchant) {
		return false, false, nil
	}
	var row struct {
		Kind     string         `db:"kind"`
		Products pq.StringArray `db:"products"`
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row, `SELECT m.kind, coalesce(a.products, '{}') AS products FROM merchants m
		LEFT JOIN applications a ON a.token = m.application WHERE m.token = $1 AND m.partner_id = $2`, merchant, partnerID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, Translate(err)
	}
	if row.Kind == "master" {
		return true, true, nil
	}
	for _, p := range row.Products {
		if p == "account-opening" || p == "card-issuing" {
			return true, true, nil
		}
	}
	return true, false, nil
}

// ActiveUser implements accounts.AccountStore.
func (s *AccountStore) ActiveUser(ctx context.Context, partnerID, user string) (bool, error) {
	if !validUUID(user) {
		return false, nil
	}
	var ok bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &ok, `SELECT EXISTS (SELECT 1 FROM users WHERE token = $1 AND partner_id = $2 AND status = 'active')`, user, partnerID)
	return ok, Translate(err)
}

// InsertAccount implements accounts.AccountStore.
func (s *AccountStore) InsertAccount(ctx context.Context, a emi.Account) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO accounts (token, partner_id, program, merchant, user_token, main, virtual,
		alias, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
		a.Token, a.PartnerID, a.Program, nullUUID(a.Merchant), nullUUID(a.User), nullUUID(a.Main), a.Virtual, a.Alias, a.Status, a.CreatedAt)
	return Translate(err)
}

// InsertBalance implements accounts.AccountStore.
func (s *AccountStore) InsertBalance(ctx context.Context, b emi.Balance) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO balances (token, account, position, currency, iban, bic,
		account_number, sort_code, overdraft) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		b.Token, b.Account, b.Position, b.Currency, b.IBAN, b.BIC, b.AccountNumber, b.SortCode, b.Overdraft)
	if UniqueViolation(err, "balances_iban_key") || UniqueViolation(err, "balances_sort_code_account_number_key") {
		return emi.ErrNonUniqueValue
	}
	return Translate(err)
}

// RegisterIBAN implements accounts.AccountStore.
func (s *AccountStore) RegisterIBAN(ctx context.Context, iban, account, balance string, virtual bool) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO ibans (iban, account, balance, virtual) VALUES ($1, $2, $3, $4)`,
		iban, account, balance, virtual)
	if UniqueViolation(err, "ibans_pkey") {
		return emi.ErrNonUniqueValue
	}
	return Translate(err)
}

// ReserveSerial implements accounts.AccountStore.
func (s *AccountStore) ReserveSerial(ctx context.Context, kind string, serial int64, iban string) (bool, error) {
	if kind != "bg" && kind != "uk" {
		return false, emi.Internal(errUnknownSerial)
	}
	var got []int64
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &got, `INSERT INTO identifier_serials (kind, serial)
		SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM ibans WHERE iban = $3)
		ON CONFLICT DO NOTHING RETURNING serial`, kind, serial, iban)
	return len(got) == 1, Translate(err)
}

var errUnknownSerial = errors.New("unknown identifier serial")

type accountRow struct {
	Token        string     `db:"token"`
	PartnerID    string     `db:"partner_id"`
	Program      string     `db:"program"`
	Merchant     *string    `db:"merchant"`
	User         *string    `db:"user_token"`
	Main         *string    `db:"main"`
	Virtual      bool       `db:"virtual"`
	Alias        string     `db:"alias"`
	Status       string     `db:"status"`
	CreatedAt    time.Time  `db:"created_at"`
	UpdatedAt    time.Time  `db:"updated_at"`
	TerminatedAt *time.Time `db:"terminated_at"`
	OwnerName    string     `db:"owner_name"`
}

const accountColumns = `a.token, a.partner_id, a.program, a.merchant::text AS merchant, a.user_token::text AS user_token,
	a.main::text AS main, a.virtual, a.alias, a.status, a.created_at, a.updated_at, a.terminated_at,
	coalesce((SELECT u.first_name || ' ' || u.last_name FROM users u WHERE u.token = a.user_token),
	         (SELECT m.name FROM merchants m WHERE m.token = a.merchant), '') AS owner_name`

func (r accountRow) account() emi.Account {
	a := emi.Account{Token: r.Token, PartnerID: r.PartnerID, Program: r.Program, Virtual: r.Virtual, Alias: r.Alias,
		Status: r.Status, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, TerminatedAt: r.TerminatedAt, OwnerName: r.OwnerName}
	if r.Merchant != nil {
		a.Merchant = *r.Merchant
	}
	if r.User != nil {
		a.User = *r.User
	}
	if r.Main != nil {
		a.Main = *r.Main
	}
	return a
}

// Account implements accounts.AccountStore.
func (s *AccountStore) Account(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Account, error) {
	if !validUUID(token) {
		return emi.Account{}, emi.ErrAccountNotFound
	}
	// One statement: the account and its balances (a virtual account's:
	// its main account's) as a JSON array, so a read is one round trip.
	q := `SELECT ` + accountColumns + `, (SELECT json_agg(json_build_object('token', b.token, 'account', b.account,
		'position', b.position, 'currency', b.currency, 'available', b.available, 'posted', b.posted, 'held', b.held,
		'overdraft', b.overdraft, 'iban', b.iban, 'bic', b.bic, 'account_number', b.account_number, 'sort_code', b.sort_code)
		ORDER BY b.position) FROM balances b WHERE b.account = CASE WHEN a.virtual THEN a.main ELSE a.token END) AS balances_json
		FROM accounts a WHERE a.token = $1`
	args := []any{token}
	if partnerID != "" {
		q += ` AND a.partner_id = $2`
		args = append(args, partnerID)
	}
	if forUpdate {
		q += ` FOR UPDATE OF a`
	} else if !s.db.pooler.Prepares() {
		// Nothing is prepared behind a transaction-mode pooler: the same
		// statement in a PL/pgSQL function, whose plan the server keeps
		// (migration 00093_hot_read_functions says why and what it measured).
		q, args = `SELECT * FROM account_read($1, $2)`, []any{token, nullUUID(partnerID)}
	}
	var r struct {
		accountRow
		Balances []byte `db:"balances_json"`
	}
	if err := s.db.getPrepared(ctx, &r, q, args...); err != nil { // q is one of five fixed texts
		return emi.Account{}, NotFound(err, emi.ErrAccountNotFound)
	}
	a := r.account()
	if len(r.Balances) > 0 {
		var bs []balanceJSON
		if err := json.Unmarshal(r.Balances, &bs); err != nil {
			return a, emi.Internal(err)
		}
		a.Balances = make([]emi.Balance, len(bs))
		for i, b := range bs {
			a.Balances[i] = emi.Balance(b)
		}
	}
	if a.Virtual {
		return a, s.virtualIBANs(ctx, &a)
	}
	return a, nil
}

// AccountsWithBalances implements accounts.AccountStore: one statement for
// the accounts and their balances, one for the virtual ones' own IBANs.
func (s *AccountStore) AccountsWithBalances(ctx context.Context, tokens []string) (map[string]emi.Account, error) {
	out := make(map[string]emi.Account, len(tokens))
	tokens = slices.DeleteFunc(slices.Clone(tokens), func(t string) bool { return !validUUID(t) })
	if len(tokens) == 0 {
		return out, nil
	}
	var rows []struct {
		accountRow
		Balances []byte `db:"balances_json"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+accountColumns+`, (SELECT json_agg(json_build_object('token', b.token,
		'account', b.account, 'position', b.position, 'currency', b.currency, 'available', b.available, 'posted', b.posted,
		'held', b.held, 'overdraft', b.overdraft, 'iban', b.iban, 'bic', b.bic, 'account_number', b.account_number,
		'sort_code', b.sort_code) ORDER BY b.position) FROM balances b
		WHERE b.account = CASE WHEN a.virtual THEN a.main ELSE a.token END) AS balances_json
		FROM accounts a WHERE a.token = ANY($1::uuid[])`, pq.Array(tokens)); err != nil {
		return nil, Translate(err)
	}
	var virtual []string
	for _, r := range rows {
		a := r.account()
		if len(r.Balances) > 0 {
			var bs []balanceJSON
			if err := json.Unmarshal(r.Balances, &bs); err != nil {
				return nil, emi.Internal(err)
			}
			for _, b := range bs {
				a.Balances = append(a.Balances, emi.Balance(b))
			}
		}
		if a.Virtual {
			a.VirtualIBANs = map[string]string{}
			virtual = append(virtual, a.Token)
		}
		out[a.Token] = a
	}
	if len(virtual) > 0 {
		var ibans []struct {
			Account  string `db:"account"`
			IBAN     string `db:"iban"`
			Currency string `db:"currency"`
		}
		if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &ibans, `SELECT i.account::text AS account, i.iban, b.currency
			FROM ibans i JOIN balances b ON b.token = i.balance WHERE i.account = ANY($1::uuid[]) AND i.virtual`, pq.Array(virtual)); err != nil {
			return nil, Translate(err)
		}
		for _, r := range ibans {
			out[r.Account].VirtualIBANs[r.Currency] = r.IBAN
		}
	}
	return out, nil
}

// balanceJSON is emi.Balance as the account read's json_build_object
// writes it.
type balanceJSON struct {
	Token         string  `json:"token"`
	Account       string  `json:"account"`
	Position      int     `json:"position"`
	Currency      string  `json:"currency"`
	Available     int64   `json:"available"`
	Posted        int64   `json:"posted"`
	Held          int64   `json:"held"`
	Overdraft     bool    `json:"overdraft"`
	IBAN          *string `json:"iban"`
	BIC           string  `json:"bic"`
	AccountNumber *string `json:"account_number"`
	SortCode      *string `json:"sort_code"`
}

// virtualIBANs loads a virtual account's own IBANs.
func (s *AccountStore) virtualIBANs(ctx context.Context, a *emi.Account) error {
	var rows []struct {
		IBAN     string `db:"iban"`
		Currency string `db:"currency"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT i.iban, b.currency FROM ibans i JOIN balances b ON b.token = i.balance
		WHERE i.account = $1 AND i.virtual`, a.Token); err != nil {
		return Translate(err)
	}
	a.VirtualIBANs = map[string]string{}
	for _, r := range rows {
		a.VirtualIBANs[r.Currency] = r.IBAN
	}
	return nil
}

// SetAccountStatus implements accounts.AccountStore.
func (s *AccountStore) SetAccountStatus(ctx context.Context, token, status string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE accounts SET status = $2, updated_at = now(),
		terminated_at = CASE WHEN $2 = 'terminated' THEN now() ELSE NULL END WHERE token = $1`, token, status)
	return Translate(err)
}

// InsertStatusChange implements accounts.AccountStore.
func (s *AccountStore) InsertStatusChange(ctx context.Context, account string, c emi.AccountStatusChange) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO account_status_history (account, from_status, to_status, reason, actor, at)
		VALUES ($1, $2, $3, $4, $5, $6)`, account, c.From, c.To, c.Reason, c.Actor, c.At)
	return Translate(err)
}

// StatusHistory implements accounts.AccountStore.
func (s *AccountStore) StatusHistory(ctx context.Context, account string) ([]emi.AccountStatusChange, error) {
	var out []emi.AccountStatusChange
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT from_status, to_status, reason, actor,
		coalesce((SELECT name FROM staff_users WHERE id::text = h.actor),
		         CASE WHEN EXISTS (SELECT 1 FROM partner_keys k WHERE k.id::text = h.actor) THEN 'partner API' END, '') AS actor_name,
		at FROM account_status_history h WHERE account = $1 ORDER BY id`, account)
	return out, Translate(err)
}

// VirtualAccounts implements accounts.AccountStore.
func (s *AccountStore) VirtualAccounts(ctx context.Context, main string) ([]emi.Account, error) {
	var rows []accountRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+accountColumns+` FROM accounts a
		WHERE a.main = $1 AND a.status <> 'terminated' ORDER BY a.created_at FOR UPDATE OF a`, main); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.Account, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.account())
	}
	return out, nil
}

// Accounts implements accounts.AccountStore: a page, newest first, and the
// total. q (back office) matches a token, an IBAN, an account number with
// or without its sort code, or the owner's name or e-mail.
func (s *AccountStore) Accounts(ctx context.Context, f emi.AccountFilter) ([]emi.Account, int64, error) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + itoa(len(args)) }
	if f.PartnerID != "" {
		where = append(where, "a.partner_id = "+arg(f.PartnerID))
	}
	if f.Merchant != "" {
		if !validUUID(f.Merchant) {
			return []emi.Account{}, 0, nil
		}
		where = append(where, "a.merchant = "+arg(f.Merchant))
	}
	if f.User != "" {
		if !validUUID(f.User) {
			return []emi.Account{}, 0, nil
		}
		where = append(where, "a.user_token = "+arg(f.User))
	}
	if f.Program != "" {
		where = append(where, "a.program = "+arg(f.Program))
	}
	if q := strings.TrimSpace(f.Q); q != "" {
		compact := strings.ToUpper(strings.ReplaceAll(strings.ReplaceAll(q, " ", ""), "-", ""))
		like := "%" + escapeLike(strings.ToLower(q)) + "%"
		cond := "(a.token::text = " + arg(strings.ToLower(q)) +
			" OR a.token IN (SELECT account FROM ibans WHERE iban = " + arg(compact) + ")" +
			" OR a.token IN (SELECT account FROM balances WHERE account_number = " + arg(compact) + " OR sort_code || account_number = " + arg(compact) + ")" +
			" OR a.user_token IN (SELECT token FROM users WHERE lower(email) = " + arg(strings.ToLower(q)) + " OR lower(first_name || ' ' || last_name) LIKE " + arg(like) + ")" +
			" OR a.merchant IN (SELECT token FROM merchants WHERE lower(name) LIKE " + arg(like) + "))"
		where = append(where, cond)
	}
	w := ""
	if len(where) > 0 {
		w = " WHERE " + strings.Join(where, " AND ")
	}
	var total int64
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &total, `SELECT count(*) FROM accounts a`+w, args...); err != nil {
		return nil, 0, Translate(err)
	}
	if f.StartingAfter != "" {
		// The cursor: an account of the partner (checked by the
		// service); the page counts from the one after it, newest first.
		cursor := "(a.created_at, a.token) < (SELECT x.created_at, x.token FROM accounts x WHERE x.token = " + arg(f.StartingAfter) + ")"
		if w == "" {
			w = " WHERE " + cursor
		} else {
			w += " AND " + cursor
		}
	}
	limit := max(f.Limit, 1)
	page := max(f.Page, 1)
	order := " ORDER BY a.created_at DESC, a.token DESC"
	if f.Sort.Key != "" {
		order = accountSort.orderBy(f.Sort)
	}
	q := `SELECT ` + accountColumns + ` FROM accounts a` + w + order + ` LIMIT ` + arg(limit) + ` OFFSET ` + arg((page-1)*limit)
	var rows []accountRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, 0, Translate(err)
	}
	out := make([]emi.Account, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.account())
	}
	return out, total, nil
}

// VirtualsOf implements accounts.AccountStore.
func (s *AccountStore) VirtualsOf(ctx context.Context, main string) ([]emi.Account, error) {
	var rows []accountRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+accountColumns+` FROM accounts a
		WHERE a.main = $1 ORDER BY a.created_at`, main); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.Account, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.account())
	}
	return out, nil
}

// GenerateAccounts inserts n synthetic EUR accounts of a partner for
// benchmarks, set-based: one user per ten accounts, each account with its
// balance and a valid Bulgarian IBAN (check digits computed in SQL with
// ISO 7064 mod 97 over the same layout internal/ukbank builds:
// BG + check digits + EMIB + 9661 + 10 + an 8-digit serial). The serial
// sequence is moved past the generated ones.
func (s *AccountStore) GenerateAccounts(ctx context.Context, partnerID, merchant string, n int) error {
	err := s.db.InTx(ctx, func(ctx context.Context) error {
		x := s.db.Ext(ctx)
		var start int64
		if err := sqlx.GetContext(ctx, x, &start, `SELECT nextval('bg_account_serial')`); err != nil {
			return Translate(err)
		}
		steps := []struct {
			q    string
			args []any
		}{
			{`CREATE TEMP TABLE gen_users ON COMMIT DROP AS
			  SELECT gen_random_uuid() AS token, i FROM generate_series(1, ($1::int + 9) / 10) i`, []any{n}},
			{`INSERT INTO users (token, partner_id, master_merchant, merchant, email, first_name, last_name, profile)
			  SELECT token, $1, $2, $2, 'bench-' || i || '-' || token || '@example.com', 'Bench', 'User' || i,
			    jsonb_build_object('first_name', 'Bench', 'last_name', 'User' || i)
			  FROM gen_users`, []any{partnerID, merchant}},
			{`CREATE TEMP TABLE gen_accounts ON COMMIT DROP AS
			  SELECT gen_random_uuid() AS token, gen_random_uuid() AS balance, i, $2::bigint + i AS serial,
			    $3::timestamptz - (i * interval '1 second') AS created
			  FROM generate_series(1, $1) i`, []any{n, start, time.Now().UTC()}},
			{`INSERT INTO accounts (token, partner_id, program, user_token, alias, created_at, updated_at)
			  SELECT a.token, $1, 'account_eur', u.token, 'bench', a.created, a.created
			  FROM gen_accounts a JOIN gen_users u ON u.i = (a.i - 1) / 10 + 1`, []any{partnerID}},
			{`CREATE TEMP TABLE gen_ibans ON COMMIT DROP AS
			  SELECT token, balance, 'BG' || lpad((98 - (('14221811' || '9661' || '10' || lpad(serial::text, 8, '0') || '111600')::numeric % 97))::text, 2, '0')
			    || 'EMIB966110' || lpad(serial::text, 8, '0') AS iban
			  FROM gen_accounts`, nil},
			{`INSERT INTO balances (token, account, position, currency, iban, bic)
			  SELECT balance, token, 0, 'EUR', iban, 'EMIBBGSF' FROM gen_ibans`, nil},
			{`INSERT INTO ibans (iban, account, balance) SELECT iban, token, balance FROM gen_ibans`, nil},
			{`SELECT setval('bg_account_serial', $1::bigint + $2)`, []any{start, n}},
		}
		for _, st := range steps {
			if _, err := x.ExecContext(ctx, st.q, st.args...); err != nil {
				return Translate(err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range []string{"users", "accounts", "balances", "ibans"} {
		if _, err := s.db.ExecContext(ctx, "VACUUM ANALYZE "+t); err != nil {
			return Translate(err)
		}
	}
	return nil
}

// accountSort is the account list's orders; it pages by offset.
var accountSort = sortable{def: "created", table: "accounts a", tie: "a.token", cols: map[string]string{
	"program": "a.program",
	"status":  "a.status",
	"created": "a.created_at",
}}

// holderOnHold is the compliance hold of the account's holder: a user or
// onboarded merchant with an AML check waiting for compliance or confirmed
// (a virtual account is its main account's holder's). Transfers and card
// authorizations both ask it.
func holderOnHold(ctx context.Context, db *DB, account string) (bool, error) {
	if !validUUID(account) {
		return false, nil
	}
	var held bool
	err := sqlx.GetContext(ctx, db.Ext(ctx), &held, `SELECT EXISTS (
		SELECT 1 FROM accounts a
		JOIN accounts m ON m.token = coalesce(a.main, a.token)
		JOIN aml_checks c ON c.user_token = m.user_token OR c.merchant_token = m.merchant
		WHERE a.token = $1 AND c.status IN ('match', 'confirmed'))
		OR EXISTS (
		SELECT 1 FROM accounts a
		JOIN accounts m ON m.token = coalesce(a.main, a.token)
		JOIN compliance_holds h ON h.lifted_at IS NULL AND ((h.subject_kind = 'user' AND h.subject_token = m.user_token)
			OR (h.subject_kind = 'merchant' AND h.subject_token = m.merchant))
		WHERE a.token = $1)`, account)
	return held, Translate(err)
}
