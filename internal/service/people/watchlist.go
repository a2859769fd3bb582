package people

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// WatchlistStore keeps the adverse-media watch list.
type WatchlistStore interface {
	Watchlist(ctx context.Context) ([]emi.WatchlistEntry, error)
	InsertWatchlistEntry(ctx context.Context, e emi.WatchlistEntry) error
	// RemoveWatchlistEntry marks an entry removed. Returns
	// emi.ErrReviewValidation (field id) when there is no such entry.
	RemoveWatchlistEntry(ctx context.Context, id string) error
}

// Watchlist is the embedded adverse-media provider: names compliance has
// recorded from adverse media, matched with the screening engine's name
// similarity. It also lets compliance maintain the list.
type Watchlist struct {
	tx       kernel.TxRunner
	store    WatchlistStore
	audit    *kernel.Auditor
	jobs     kernel.Enqueuer
	similar  func(a, b string) float64
	validate interface {
		Struct(any, *emi.Error) error
	}
	now kernel.Clock
}

// WatchlistThreshold is the name similarity from which a watch-list name
// is reported.
const WatchlistThreshold = 0.88

// WatchlistDeps is what Watchlist needs; NewWatchlist checks that none is nil.
type WatchlistDeps struct {
	Tx       kernel.TxRunner
	Store    WatchlistStore
	Audit    *kernel.Auditor
	Jobs     kernel.Enqueuer
	Similar  func(a, b string) float64
	Validate interface {
		Struct(any, *emi.Error) error
	}
	Now kernel.Clock
}

// NewWatchlist returns the watch-list provider; similar compares two names
// (0..1).
//
// A change of the list re-screens: every pending application's checks run
// again, and an addition is screened against every active customer
// (AML.ScreenWatchlistEntry), both as background jobs enqueued in the
// change's transaction (so the change and the re-screening commit or fail
// together).
func NewWatchlist(d WatchlistDeps) *Watchlist {
	kernel.MustHave("Watchlist", d)
	return &Watchlist{tx: d.Tx, store: d.Store, audit: d.Audit, jobs: d.Jobs, similar: d.Similar, validate: d.Validate, now: d.Now}
}

// JobWatchlistScreenUsers screens active customers against a watch-list
// entry just added.
const JobWatchlistScreenUsers = "watchlist.screen_users"

// watchlistScreenPayload names the entry to screen customers against.
type watchlistScreenPayload struct {
	Entry string `json:"entry"`
}

// Search implements AdverseMedia.
func (w *Watchlist) Search(ctx context.Context, names []string) ([]MediaHit, error) {
	list, err := w.store.Watchlist(ctx)
	if err != nil {
		return nil, err
	}
	var out []MediaHit
	for _, n := range names {
		for _, e := range list {
			if s, ok := w.match(n, e); ok {
				out = append(out, MediaHit{Name: n, Matched: e.Name, Category: e.Category, Note: e.Note, Source: e.Source, Score: s})
			}
		}
	}
	return out, nil
}

// match scores name against the entry e: ok when it is at least
// WatchlistThreshold, with the score rounded to three decimals. The one
// rule for applications (Search) and for users (AML.ScreenWatchlistEntry).
func (w *Watchlist) match(name string, e emi.WatchlistEntry) (score float64, ok bool) {
	s := w.similar(name, e.Name)
	return float64(int(s*1000+0.5)) / 1000, s >= WatchlistThreshold
}

// entry returns the live entry id ("" when removed or unknown).
func (w *Watchlist) entry(ctx context.Context, id string) (emi.WatchlistEntry, bool, error) {
	list, err := w.store.Watchlist(ctx)
	if err != nil {
		return emi.WatchlistEntry{}, false, err
	}
	for _, e := range list {
		if e.ID == id {
			return e, true, nil
		}
	}
	return emi.WatchlistEntry{}, false, nil
}

// List returns the watch list (emi.PermViewPeople).
func (w *Watchlist) List(ctx context.Context) ([]emi.WatchlistEntry, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	return w.store.Watchlist(ctx)
}

// webAddress reports whether s is an absolute http or https URL with a
// host: the back office shows a watch-list source as a link, so a
// javascript:, data: or file: address must never be stored.
func webAddress(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil &&
		!strings.ContainsAny(s, " \t\r\n<>\"")
}

// Add records a name (emi.PermReviewAML: compliance maintains the list).
// Returns emi.ErrReviewValidation for a missing name or category, or a
// source that is not an http(s) address.
func (w *Watchlist) Add(ctx context.Context, e emi.WatchlistEntry) (emi.WatchlistEntry, error) {
	if err := ReviewAML.Require(ctx); err != nil {
		return e, err
	}
	e.Name, e.Note, e.Source = strings.TrimSpace(e.Name), strings.TrimSpace(e.Note), strings.TrimSpace(e.Source)
	if err := w.validate.Struct(e, emi.ErrReviewValidation); err != nil {
		return e, err
	}
	if e.Source != "" && !webAddress(e.Source) {
		return e, emi.ErrReviewValidation.Field("source", "must be a web address starting with https:// or http:// (anything else goes in the note)")
	}
	p, _ := emi.PrincipalFrom(ctx)
	e.ID, e.CreatedAt = kernel.NewToken(), w.now.At(ctx).UTC()
	if p.Type == emi.ActorStaff {
		e.CreatedBy = p.ActorID // a staff id; commands and workers leave it empty
	}
	err := w.tx.InTx(ctx, func(ctx context.Context) error {
		if err := w.store.InsertWatchlistEntry(ctx, e); err != nil {
			return err
		}
		if err := kernel.EnqueueRescreenApplications(ctx, w.jobs, "watchlist.add:"+e.ID); err != nil {
			return err
		}
		if _, _, err := w.jobs.Enqueue(ctx, emi.JobSpec{Kind: JobWatchlistScreenUsers, UniqueKey: JobWatchlistScreenUsers + ":" + e.ID,
			Payload: watchlistScreenPayload{Entry: e.ID}}); err != nil {
			return err
		}
		if err := enqueueWatchlistScreenMerchants(ctx, w.jobs, e.ID); err != nil {
			return err
		}
		return w.audit.Record(ctx, emi.AuditEntry{Action: "watchlist.add", ResourceType: "watchlist_entry", ResourceToken: e.ID,
			Changes: map[string]any{"name": e.Name, "category": e.Category, "source": e.Source}})
	})
	return e, err
}

// Remove takes a name off the list (emi.PermReviewAML).
func (w *Watchlist) Remove(ctx context.Context, id string) error {
	if err := ReviewAML.Require(ctx); err != nil {
		return err
	}
	return w.tx.InTx(ctx, func(ctx context.Context) error {
		if err := w.store.RemoveWatchlistEntry(ctx, id); err != nil {
			return err
		}
		// A finding may be gone: the pending applications' checks run again.
		if err := kernel.EnqueueRescreenApplications(ctx, w.jobs, "watchlist.remove:"+id); err != nil {
			return err
		}
		return w.audit.Record(ctx, emi.AuditEntry{Action: "watchlist.remove", ResourceType: "watchlist_entry", ResourceToken: id})
	})
}

// watchlistFingerprint is the fingerprint of a hit on a watch-list entry,
// for users (AML.ScreenWatchlistEntry) and merchants alike: a changed
// name, category or note is a new entry for the false-positive memory.
func watchlistFingerprint(e emi.WatchlistEntry) string {
	fp := sha256.Sum256([]byte(e.Name + "\x00" + e.Category + "\x00" + e.Note))
	return hex.EncodeToString(fp[:8])
}

// MediaHit is one adverse-media finding about a name.
type MediaHit struct {
	Name     string  `json:"name"`
	Matched  string  `json:"matched"`
	Category string  `json:"category"`
	Note     string  `json:"note,omitempty"`
	Source   string  `json:"source,omitempty"`
	Score    float64 `json:"score"`
}
