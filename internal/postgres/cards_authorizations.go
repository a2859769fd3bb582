package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/cards"
)

// AuthorizationStore implements cards.AuthorizationStore.
type AuthorizationStore struct {
	db *DB
}

// NewAuthorizationStore returns the card authorization store.
func NewAuthorizationStore(db *DB) *AuthorizationStore { return &AuthorizationStore{db: db} }

var _ cards.AuthorizationStore = (*AuthorizationStore)(nil)

const authorizationColumns = `token, card, partner_id, coalesce(account::text, '') AS account, coalesce(balance::text, '') AS balance,
	channel, amount, currency, mcc, merchant_name, merchant_country, three_ds, pin_entered, decision, reason_code, status,
	hold_amount, cleared_amount, coalesce(clearing_txn, 0) AS clearing_txn, expires_at, created_at, settled_at`

// CardBalance implements cards.AuthorizationStore: the account's first
// balance, on its main account for a virtual account.
// HolderOnHold reports whether the account's holder is on compliance
// hold (see holderOnHold).
func (s *AuthorizationStore) HolderOnHold(ctx context.Context, account string) (bool, error) {
	return holderOnHold(ctx, s.db, account)
}

func (s *AuthorizationStore) CardBalance(ctx context.Context, account string) (accounts.Party, bool, error) {
	if !validUUID(account) {
		return accounts.Party{}, false, nil
	}
	var r partyRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, partySelect+` FROM accounts a JOIN balances b ON b.account = coalesce(a.main, a.token)
		WHERE a.token = $1 ORDER BY b.position LIMIT 1`, account)
	if errors.Is(err, sql.ErrNoRows) {
		return accounts.Party{}, false, nil
	}
	if err != nil {
		return accounts.Party{}, false, Translate(err)
	}
	return accounts.Party{Account: r.Account, Main: r.Main, Virtual: r.Virtual, Balance: r.Balance, Currency: r.Currency,
		PartnerID: r.PartnerID, IBAN: r.IBAN.String}, true, nil
}

// InsertAuthorization implements cards.AuthorizationStore.
func (s *AuthorizationStore) InsertAuthorization(ctx context.Context, a emi.Authorization) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO card_authorizations (token, card, partner_id, account, balance, channel,
		amount, currency, mcc, merchant_name, merchant_country, three_ds, pin_entered, decision, reason_code, status, hold_amount,
		expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
		a.Token, a.Card, a.PartnerID, nullUUID(a.Account), nullUUID(a.Balance), a.Channel, a.Amount, a.Currency, a.MCC,
		a.MerchantName, a.MerchantCountry, a.ThreeDS, a.PINEntered, a.Decision, a.ReasonCode, a.Status, a.HoldAmount,
		a.ExpiresAt, a.CreatedAt)
	return Translate(err)
}

// Authorization implements cards.AuthorizationStore.
func (s *AuthorizationStore) Authorization(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Authorization, error) {
	if !validUUID(token) {
		return emi.Authorization{}, emi.ErrAuthorizationNotFound
	}
	q := `SELECT ` + authorizationColumns + ` FROM card_authorizations WHERE token = $1`
	args := []any{token}
	if partnerID != "" {
		q += ` AND partner_id = $2`
		args = append(args, partnerID)
	}
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var a emi.Authorization
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &a, q, args...); err != nil {
		return a, NotFound(err, emi.ErrAuthorizationNotFound)
	}
	return a, nil
}

// SettleAuthorization implements cards.AuthorizationStore.
func (s *AuthorizationStore) SettleAuthorization(ctx context.Context, token, status string, cleared, txn int64, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE card_authorizations SET status = $2, cleared_amount = $3, clearing_txn = $4,
		settled_at = $5 WHERE token = $1`, token, status, cleared, nullInt(txn), at)
	return Translate(err)
}

// SpentSince implements cards.AuthorizationStore: the approved
// authorizations of the card since t (held amount) and the cleared ones
// (cleared amount); released and expired ones did not spend anything.
func (s *AuthorizationStore) SpentSince(ctx context.Context, card string, t time.Time) (all, atm int64, err error) {
	var r struct {
		All int64 `db:"all_channels"`
		ATM int64 `db:"atm"`
	}
	err = sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT
		coalesce(sum(CASE status WHEN 'cleared' THEN cleared_amount ELSE hold_amount END), 0)::bigint AS all_channels,
		coalesce(sum(CASE status WHEN 'cleared' THEN cleared_amount ELSE hold_amount END) FILTER (WHERE channel = 'atm'), 0)::bigint AS atm
		FROM card_authorizations WHERE card = $1 AND created_at > $2 AND status IN ('approved', 'cleared')`, card, t)
	return r.All, r.ATM, Translate(err)
}

// CardAuthorizations implements cards.AuthorizationStore: newest first,
// through card_authorizations_card_order (card, created_at, token). The
// cursor (an authorization of the card, checked by the service) applies
// to the page only: total counts every authorization of the card.
func (s *AuthorizationStore) CardAuthorizations(ctx context.Context, card string, f emi.AuthorizationFilter) ([]emi.Authorization, int64, error) {
	out := []emi.Authorization{}
	if !validUUID(card) {
		return out, 0, nil
	}
	limit, page := max(f.Limit, 1), max(f.Page, 1)
	args := []any{card, limit, (page - 1) * limit}
	cursor := ""
	if f.StartingAfter != "" {
		args = append(args, f.StartingAfter)
		cursor = ` AND (created_at, token) < (SELECT x.created_at, x.token FROM card_authorizations x WHERE x.token = $4)`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT `+authorizationColumns+` FROM card_authorizations
		WHERE card = $1`+cursor+` ORDER BY created_at DESC, token DESC LIMIT $2 OFFSET $3`, args...); err != nil {
		return nil, 0, Translate(err)
	}
	var total int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &total, `SELECT count(*) FROM card_authorizations WHERE card = $1`, card)
	return out, total, Translate(err)
}

// ExpiredHolds implements cards.AuthorizationStore: the oldest first.
func (s *AuthorizationStore) ExpiredHolds(ctx context.Context, partnerID string, now time.Time, limit int) ([]string, error) {
	var out []string
	var err error
	if partnerID == "" {
		err = sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT a.token::text FROM card_authorizations a
			WHERE a.status = 'approved' AND a.expires_at <= $1 AND NOT `+onClock("a.partner_id")+`
			ORDER BY a.expires_at, a.token LIMIT $2`, now, limit)
	} else {
		err = sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT token::text FROM card_authorizations
			WHERE partner_id = $3 AND status = 'approved' AND expires_at <= $1 ORDER BY expires_at, token LIMIT $2`, now, limit, partnerID)
	}
	return out, Translate(err)
}

// NextHoldExpiry returns the earliest deadline, at or before until, of
// partnerID's approved holds.
func (s *AuthorizationStore) NextHoldExpiry(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error) {
	return earliest(ctx, s.db.Ext(ctx), `SELECT min(expires_at) FROM card_authorizations
		WHERE partner_id = $1 AND status = 'approved' AND expires_at <= $2`, partnerID, until)
}
