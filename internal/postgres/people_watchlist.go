package postgres

import (
	"context"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
)

// The adverse-media watch list (people.Watchlist; the onboarding checks
// and the merchants' screening read it through that service).

// Watchlist implements people.WatchlistStore.
func (s *PeopleStore) Watchlist(ctx context.Context) ([]emi.WatchlistEntry, error) {
	var out []emi.WatchlistEntry
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT id, name, category, note, source,
		coalesce(created_by::text, '') AS created_by, created_at FROM adverse_media_watchlist WHERE removed_at IS NULL ORDER BY name`)
	return out, Translate(err)
}

// InsertWatchlistEntry implements people.WatchlistStore.
func (s *PeopleStore) InsertWatchlistEntry(ctx context.Context, e emi.WatchlistEntry) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO adverse_media_watchlist (id, name, category, note, source, created_by, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.ID, e.Name, e.Category, e.Note, e.Source, nullUUID(e.CreatedBy), e.CreatedAt)
	return Translate(err)
}

// RemoveWatchlistEntry implements people.WatchlistStore.
func (s *PeopleStore) RemoveWatchlistEntry(ctx context.Context, id string) error {
	if !validUUID(id) {
		return emi.ErrReviewValidation.Field("id", "is not an entry of the watch list")
	}
	res, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE adverse_media_watchlist SET removed_at = now() WHERE id = $1 AND removed_at IS NULL`, id)
	if err != nil {
		return Translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return emi.ErrReviewValidation.Field("id", "is not an entry of the watch list")
	}
	return nil
}
