package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"emi/internal/emi"
	"emi/internal/screening"
)

// sanctions adapts the screening engine to the service layer's Screener:
// the service knows hits and list descriptions, not how lists are parsed,
// indexed or downloaded.
type sanctions struct {
	s   *screening.Screener
	cfg sanctionsConfig
}

type sanctionsConfig struct {
	refresh time.Duration
	sources []string
}

// Screen implements service.Screener.
func (a sanctions) Screen(q emi.AMLQuery) (string, []emi.AMLHit, error) {
	ix := a.s.Current()
	if ix == nil {
		return "", nil, emi.ErrInvalidProcessor.WithDetail("no sanctions list loaded")
	}
	var hits []screening.Hit
	if q.Entity {
		hits = ix.ScreenCompany(screening.CompanyQuery{Name: q.LastName, Countries: q.Countries})
	} else {
		hits = ix.Screen(screening.Query{FirstName: q.FirstName, LastName: q.LastName, Birthday: q.Birthday, Nationality: q.Nationality})
	}
	out := make([]emi.AMLHit, 0, len(hits))
	for _, h := range hits {
		b := h.Breakdown
		toks := make([]emi.AMLTokenMatch, 0, len(b.Tokens))
		for _, t := range b.Tokens {
			toks = append(toks, emi.AMLTokenMatch{Query: t.Query, Entry: t.Entry, Similarity: t.Similarity,
				Weight: t.Weight, Kind: t.Kind, Note: t.Note})
		}
		out = append(out, emi.AMLHit{List: h.List, EntryID: h.EntryID, EntryType: h.EntryType, Name: h.Name,
			MatchedName: h.MatchedName, Alias: h.Alias, Score: h.Score, Fields: h.Fields, Fingerprint: h.Fingerprint,
			Breakdown: emi.AMLBreakdown{NameScore: b.NameScore, Tokens: toks, Birthday: b.Birthday,
				BirthdayAdjust: b.BirthdayAdjust, Nationality: b.Nationality, NationalityAdjust: b.NationalityAdjust,
				TypeAdjust: b.TypeAdjust, Notes: b.Notes}})
	}
	return ix.Version(), out, nil
}

// Status implements service.Screener.
func (a sanctions) Status() emi.SanctionsStatus {
	st := emi.SanctionsStatus{AutoUpdate: a.cfg.refresh > 0, Sources: a.cfg.sources}
	ix := a.s.Current()
	if ix == nil {
		return st
	}
	st.Loaded, st.Version, st.Threshold = true, ix.Version(), ix.Threshold()
	for _, l := range ix.Lists() {
		st.Lists = append(st.Lists, emi.SanctionsList{Name: l.Name, Source: l.Source, Published: l.Published,
			Entries: l.Entries, Aliases: l.Aliases, SHA256: l.SHA256, LoadedAt: l.LoadedAt})
	}
	return st
}

// Entry implements service.Screener.
func (a sanctions) Entry(list, id string) (emi.SanctionsEntry, bool) {
	ix := a.s.Current()
	if ix == nil {
		return emi.SanctionsEntry{}, false
	}
	e, ok := ix.Entry(list, id)
	if !ok {
		return emi.SanctionsEntry{}, false
	}
	return emi.SanctionsEntry{List: e.List, ID: e.ID, Type: e.Type, Name: e.Name, Aliases: e.Aliases,
		Birthdates: e.Birthdates, Nationalities: e.Nationalities, Programs: e.Programs, Fingerprint: e.Fingerprint}, true
}

// Normalize implements service.Screener.
func (a sanctions) Normalize(s string) string { return screening.Normalize(s) }

// instanceName names this process in the list-update log.
func instanceName() string {
	h, _ := os.Hostname()
	return h + ":" + strconv.Itoa(os.Getpid())
}

// LoadSanctions loads the lists of EMI_SANCTIONS_DIR into the screener.
// Until it succeeds aml_check answers 18000.
func (a *App) LoadSanctions(ctx context.Context) error {
	start := time.Now()
	ix, err := screening.LoadDir(a.Config.SanctionsDir)
	if err != nil {
		a.Logger.Error("sanctions lists not loaded: aml_check answers 18000", "dir", a.Config.SanctionsDir, "error", err)
		return fmt.Errorf("load sanctions lists from %s: %w", a.Config.SanctionsDir, err)
	}
	a.Screener.Swap(ix)
	a.Logger.Info("sanctions lists loaded", "dir", a.Config.SanctionsDir, "version", ix.Version(),
		"entries", ix.Len(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// UseSanctions installs an index built elsewhere (tests share one).
func (a *App) UseSanctions(ix *screening.Index) { a.Screener.Swap(ix) }

// UpdateSanctions downloads the official lists once, validates them, swaps
// the index when they are good and records the attempt; new or changed
// entries start the re-screening of every user.
func (a *App) UpdateSanctions(ctx context.Context) error {
	var changed []string
	u := &screening.Updater{
		Sources: screening.Sources{SDN: a.Config.SanctionsURLs[0], ALT: a.Config.SanctionsURLs[1], UN: a.Config.SanctionsURLs[2],
			EU: a.Config.SanctionsURLs[3], UK: a.Config.SanctionsURLs[4]},
		Client:   &http.Client{Timeout: 2 * time.Minute},
		Screener: a.Screener,
		OnSwap: func(old, new *screening.Index) {
			for _, r := range screening.Changed(old, new) {
				changed = append(changed, r.List+"|"+r.ID)
			}
		},
	}
	res, err := u.Update(ctx)
	rec := emi.SanctionsUpdate{At: a.Now().UTC(), Instance: instanceName(), OK: err == nil, Version: res.Version, Changed: len(changed)}
	if err != nil {
		rec.Error = err.Error()
		a.Logger.Warn("sanctions list update failed; the loaded lists stay in use", "error", err)
	} else {
		a.Logger.Info("sanctions lists updated", "version", res.Version, "changed", len(changed))
	}
	sys := emi.WithPrincipal(context.WithoutCancel(ctx), emi.SystemPrincipal("sanctions.update"))
	if rerr := a.AML.ListsUpdated(sys, rec, changed); rerr != nil {
		a.Logger.Error("record sanctions update", "error", rerr)
	}
	return err
}

// ScheduleSanctionsUpdates updates the lists every EMI_SANCTIONS_REFRESH
// until ctx ends (never when it is 0).
func (a *App) ScheduleSanctionsUpdates(ctx context.Context) {
	if a.Config.SanctionsRefresh <= 0 {
		return
	}
	t := time.NewTicker(a.Config.SanctionsRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = a.UpdateSanctions(ctx)
		}
	}
}
