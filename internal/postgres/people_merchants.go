package postgres

import (
	"context"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
)

// RaisedForMerchant implements people.MerchantAMLStore: the hits already
// raised in any check of the merchant, by member ("" for the company) and
// "list\x00entry\x00fingerprint".
func (s *PeopleStore) RaisedForMerchant(ctx context.Context, merchant string) (map[string]bool, error) {
	out := map[string]bool{}
	if !validUUID(merchant) {
		return out, nil
	}
	var rows []struct {
		Member      string `db:"member"`
		List        string `db:"list"`
		EntryID     string `db:"entry_id"`
		Fingerprint string `db:"fingerprint"`
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT coalesce(c.member_token::text, '') AS member,
		h.list, h.entry_id, h.fingerprint FROM aml_hits h
		JOIN aml_checks c ON c.token = h.check_token
		WHERE c.merchant_token = $1`, merchant)
	for _, r := range rows {
		out[r.Member+"\x00"+r.List+"\x00"+r.EntryID+"\x00"+r.Fingerprint] = true
	}
	return out, Translate(err)
}

// MerchantScreening implements people.AMLStore: the merchant's checks
// waiting for a decision and confirmed true matches.
func (s *PeopleStore) MerchantScreening(ctx context.Context, merchant string) (emi.UserScreening, error) {
	var out emi.UserScreening
	if !validUUID(merchant) {
		return out, nil
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &out, `SELECT
		count(*) FILTER (WHERE status = 'match') AS open,
		count(*) FILTER (WHERE status = 'confirmed') AS confirmed
		FROM aml_checks WHERE merchant_token = $1`, merchant)
	return out, Translate(err)
}
