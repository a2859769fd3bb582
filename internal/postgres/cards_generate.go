package postgres

import (
	"context"
	"errors"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
	cardssvc "emi/internal/service/cards"
)

// AccountsWithoutCard implements cards.CardGenerator: up to limit
// active, single-balance, non-virtual accounts of the partner without an
// open card, after the given token (keyset).
func (s *CardStore) AccountsWithoutCard(ctx context.Context, partnerID, after string, limit int) ([]emi.Account, error) {
	if after == "" {
		after = "00000000-0000-0000-0000-000000000000"
	}
	var rows []accountRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+accountColumns+` FROM accounts a
		WHERE a.partner_id = $1 AND a.token > $2 AND a.status = 'active' AND NOT a.virtual
		  AND (SELECT count(*) FROM balances b WHERE b.account = a.token) = 1
		  AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.account = a.token AND c.status <> 'terminated')
		ORDER BY a.token LIMIT $3`, partnerID, after, limit)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.Account, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.account())
	}
	return out, nil
}

// CopyCards implements cards.CardGenerator: a batch of generated cards
// through COPY, in one transaction.
func (s *CardStore) CopyCards(ctx context.Context, cards []emi.Card, sealed []cardssvc.SealedCard) error {
	return s.db.InTx(ctx, func(ctx context.Context) error {
		tx, ok := s.db.Ext(ctx).(*sqlx.Tx)
		if !ok {
			return emi.Internal(errNoTx)
		}
		stmt, err := tx.PrepareContext(ctx, `COPY cards (token, partner_id, program, account, user_token, type, status, activated,
			pan_sealed, pan_lookup, pan_first6, pan_last4, expiry_month, expiry_year, cvv_sealed, pin_sealed, groups, created_at,
			updated_at, activated_at) FROM STDIN`)
		if err != nil {
			return Translate(err)
		}
		for i, c := range cards {
			groups, err := jsonParam(c.Groups)
			if err != nil {
				return err
			}
			if _, err := stmt.ExecContext(ctx, c.Token, c.PartnerID, c.Program, c.Account, nullUUID(c.User), c.Type, c.Status,
				c.Activated, sealed[i].PAN, sealed[i].PANLookup, c.First6, c.Last4, c.ExpiryMonth, c.ExpiryYear, sealed[i].CVV,
				sealed[i].PIN, groups, c.CreatedAt, c.CreatedAt, c.ActivatedAt); err != nil {
				return Translate(err)
			}
		}
		if _, err := stmt.ExecContext(ctx); err != nil {
			return Translate(err)
		}
		return Translate(stmt.Close())
	})
}

var errNoTx = errors.New("COPY needs a transaction")
