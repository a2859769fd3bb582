package people

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/worker"
)

// Ongoing screening of onboarded merchants (AMLD art. 13(1)(d): ongoing
// monitoring of a business relationship, its controllers included).
//
// Users are re-screened when the lists change (AML.Rescreen) and when a
// watch-list entry is added (AML.ScreenWatchlistEntry); pending
// applications are re-checked (EnqueueRescreenApplications). Once an
// application is approved its company is an onboarded merchant, and
// MerchantScreening does the same for it: the company's legal and trade
// names against entity entries, and each active member of the application
// (directors, UBOs, representatives) against individual entries (a member
// that is a legal entity against entity entries), with the same screener,
// threshold and fingerprints as the users' re-screening. Only hits on the
// entries the update added or changed (or on the watch-list entry just
// added) are raised, and not those already raised for that merchant and
// member, nor those remembered as false positives for that person or
// company (the memory the application checks and the AML checks share:
// the partner, the person key of PersonKey, the list entry and its
// fingerprint) by as many people as the hit takes.
//
// A hit is an AML check (source rescreen or watchlist) naming the merchant
// and the member; it waits in the compliance alert queue and is decided
// with AML.Decide, under the same two-person rule as every AML check
// (ControlAMLHitFalsePositive). While the merchant has a check open or
// confirmed, no money leaves its accounts (TransferStore.HolderOnHold) and
// no card is issued, activated or assigned on them (Cards.merchantHold).
//
// Applications still pending are not screened here (their checks run
// again through JobRescreenApplications), nor are rejected ones.

// JobAMLRescreenMerchants re-screens the onboarded merchants after a list
// update (payload RescreenPayload).
const JobAMLRescreenMerchants = "aml.rescreen_merchants"

// JobWatchlistScreenMerchants screens the onboarded merchants against a
// watch-list entry just added (payload watchlistScreenPayload).
const JobWatchlistScreenMerchants = "watchlist.screen_merchants"

// ScreenedMerchant is an onboarded merchant whose application is approved.
type ScreenedMerchant struct {
	Token       string `db:"token"`
	PartnerID   string `db:"partner_id"`
	Name        string `db:"name"`
	Application string `db:"application"`
}

// MerchantScreeningApps reads the merchants to screen and their
// applications (company and members).
type MerchantScreeningApps interface {
	// OnboardedMerchantsAfter pages through the onboarded merchants whose
	// application is approved, by token ("" from the start).
	OnboardedMerchantsAfter(ctx context.Context, after string, limit int) ([]ScreenedMerchant, error)
	Application(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Application, error)
}

// MerchantAMLStore keeps the merchants' checks.
type MerchantAMLStore interface {
	InsertAMLCheck(ctx context.Context, c emi.AMLCheck) error
	FalsePositives(ctx context.Context, partnerID string, personKey []byte) (map[string]int, error)
	// RaisedForMerchant returns the hits already raised (in any check) for
	// a merchant as "member\x00list\x00entry\x00fingerprint" keys (member
	// "" for the company).
	RaisedForMerchant(ctx context.Context, merchant string) (map[string]bool, error)
}

// MerchantScreening re-screens onboarded merchants' companies and people.
type MerchantScreening struct {
	tx       kernel.TxRunner
	store    MerchantAMLStore
	apps     MerchantScreeningApps
	screener Screener
	watch    *Watchlist
	audit    *kernel.Auditor
	now      kernel.Clock
}

// MerchantScreeningDeps is what MerchantScreening needs; NewMerchantScreening checks that none is nil.
type MerchantScreeningDeps struct {
	Tx       kernel.TxRunner
	Store    MerchantAMLStore
	Apps     MerchantScreeningApps
	Screener Screener
	Watch    *Watchlist
	Audit    *kernel.Auditor
	Now      kernel.Clock
}

// NewMerchantScreening returns the merchants' ongoing screening; watch is
// the adverse-media watch list its additions are screened against.
func NewMerchantScreening(d MerchantScreeningDeps) *MerchantScreening {
	kernel.MustHave("MerchantScreening", d)
	return &MerchantScreening{tx: d.Tx, store: d.Store, apps: d.Apps, screener: d.Screener, watch: d.Watch, audit: d.Audit, now: d.Now}
}

// enqueueRescreenMerchants asks, in the caller's transaction, for the
// re-screening of the onboarded merchants after a list update (once per
// version).
func enqueueRescreenMerchants(ctx context.Context, jobs kernel.Enqueuer, version string, changed []string) error {
	_, _, err := jobs.Enqueue(ctx, emi.JobSpec{Kind: JobAMLRescreenMerchants, UniqueKey: JobAMLRescreenMerchants + ":" + version,
		Payload: RescreenPayload{Version: version, Entries: changed}})
	return err
}

// enqueueWatchlistScreenMerchants asks, in the caller's transaction, for
// the screening of the onboarded merchants against a watch-list entry.
func enqueueWatchlistScreenMerchants(ctx context.Context, jobs kernel.Enqueuer, entry string) error {
	_, _, err := jobs.Enqueue(ctx, emi.JobSpec{Kind: JobWatchlistScreenMerchants, UniqueKey: JobWatchlistScreenMerchants + ":" + entry,
		Payload: watchlistScreenPayload{Entry: entry}})
	return err
}

// merchantSubject is one name of a merchant that is screened: the company
// (member "") or a member of its application.
type merchantSubject struct {
	member string
	query  emi.AMLQuery
	// person: screened against individual entries; otherwise (the company,
	// a member that is a legal entity) against the other entries.
	person bool
}

func (s merchantSubject) name() string {
	return strings.TrimSpace(s.query.FirstName + " " + s.query.LastName)
}

// fits reports whether a list entry of type typ is of the subject's kind.
func (s merchantSubject) fits(typ string) bool {
	return (typ == "individual") == s.person
}

// merchantSubjects returns what is screened of an approved application:
// the company's legal and trade names and every active member, as the
// application's sanctions check screens them.
func merchantSubjects(a emi.Application) []merchantSubject {
	var out []merchantSubject
	if a.Company != nil {
		for _, n := range kernel.UniqueNonEmpty(a.Company.LegalName, a.Company.TradeName) {
			out = append(out, merchantSubject{query: emi.CompanyAMLQuery(n, a.Company.Country)})
		}
	}
	for _, m := range a.ActiveMembers() {
		sub := merchantSubject{member: m.Token, person: true,
			query: emi.AMLQuery{FirstName: m.FirstName, LastName: m.LastName, Birthday: m.Birthday, Nationality: m.Nationality}}
		if m.IsLegalEntity() || (m.FirstName == "" && m.LastName == "") {
			sub.query, sub.person = emi.CompanyAMLQuery(m.LegalName, m.Country, m.CountryOfResidence), false
		}
		if sub.query.LastName != "" {
			out = append(out, sub)
		}
	}
	return out
}

// eachMerchant calls fn for every approved onboarded merchant with what
// is screened of it.
func (s *MerchantScreening) eachMerchant(ctx context.Context, fn func(m ScreenedMerchant, subs []merchantSubject) error) error {
	after := ""
	for {
		ms, err := s.apps.OnboardedMerchantsAfter(ctx, after, rescreenBatch)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return nil
		}
		for _, m := range ms {
			a, err := s.apps.Application(ctx, "", m.Application, false)
			if err != nil {
				return err
			}
			if err := fn(m, merchantSubjects(a)); err != nil {
				return err
			}
		}
		after = ms[len(ms)-1].Token
	}
}

// Rescreen is the JobAMLRescreenMerchants handler: every approved
// onboarded merchant's company and people against the current lists,
// raising the hits on entries the update added or changed. A job for a
// version this instance has not loaded yet is retried.
func (s *MerchantScreening) Rescreen(ctx context.Context, job emi.Job) error {
	var pl RescreenPayload
	if err := json.Unmarshal(job.Payload, &pl); err != nil {
		return worker.Permanent(fmt.Errorf("%s job %d: bad payload: %w", JobAMLRescreenMerchants, job.ID, err))
	}
	if v := s.screener.Status().Version; v != pl.Version {
		return worker.RetryAfter(time.Minute, fmt.Errorf("merchant rescreen for lists %s, this instance has %q", pl.Version, v))
	}
	changed := make(map[string]bool, len(pl.Entries))
	for _, e := range pl.Entries {
		changed[e] = true
	}
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal(JobAMLRescreenMerchants))
	return s.eachMerchant(ctx, func(m ScreenedMerchant, subs []merchantSubject) error {
		for _, sub := range subs {
			v, hits, err := s.screener.Screen(sub.query)
			if err != nil {
				return err
			}
			if v != pl.Version {
				return errors.New("lists changed during the re-screening")
			}
			var fresh []emi.AMLHit
			for _, h := range hits {
				if changed[h.List+"|"+h.EntryID] && sub.fits(h.EntryType) {
					fresh = append(fresh, h)
				}
			}
			if len(fresh) > 0 {
				if err := s.raise(ctx, m, sub, emi.AMLSourceRescreen, pl.Version, fresh); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// ScreenWatchlistEntry is the JobWatchlistScreenMerchants handler: every
// approved onboarded merchant's company and people against a watch-list
// entry just added, with the threshold users are screened with. An entry
// removed before the job ran screens nobody.
func (s *MerchantScreening) ScreenWatchlistEntry(ctx context.Context, job emi.Job) error {
	var pl watchlistScreenPayload
	if err := json.Unmarshal(job.Payload, &pl); err != nil || pl.Entry == "" {
		return worker.Permanent(fmt.Errorf("%s job %d: bad payload %s", JobWatchlistScreenMerchants, job.ID, job.Payload))
	}
	if s.watch == nil {
		return worker.Permanent(errors.New("merchant screening: no watch list configured"))
	}
	e, ok, err := s.watch.entry(ctx, pl.Entry)
	if err != nil || !ok {
		return err
	}
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal(JobWatchlistScreenMerchants))
	fingerprint := watchlistFingerprint(e)
	return s.eachMerchant(ctx, func(m ScreenedMerchant, subs []merchantSubject) error {
		for _, sub := range subs {
			score := s.watch.similar(sub.name(), e.Name)
			if score < WatchlistThreshold {
				continue
			}
			typ := "entity"
			if sub.person {
				typ = "individual"
			}
			h := emi.AMLHit{List: emi.WatchlistListName, EntryID: e.ID, EntryType: typ, Name: e.Name, MatchedName: sub.name(),
				Score: float64(int(score*1000+0.5)) / 1000, Fingerprint: fingerprint, Fields: []string{"name"}}
			if err := s.raise(ctx, m, sub, emi.AMLSourceWatchlist, "watch list "+e.Category, []emi.AMLHit{h}); err != nil {
				return err
			}
		}
		return nil
	})
}

// raise records a check of source for the merchant's subject with the hits
// not already raised for that merchant and member and not remembered as
// false positives by as many people as they take; nothing when none is
// left.
func (s *MerchantScreening) raise(ctx context.Context, m ScreenedMerchant, sub merchantSubject, source, version string, hits []emi.AMLHit) error {
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		q := sub.query
		key := PersonKey(s.screener.Normalize, q.FirstName, q.LastName, q.Birthday)
		fps, err := s.store.FalsePositives(ctx, m.PartnerID, key)
		if err != nil {
			return err
		}
		raised, err := s.store.RaisedForMerchant(ctx, m.Token)
		if err != nil {
			return err
		}
		var open []emi.AMLHit
		for _, h := range hits {
			k := FalsePositiveKey(h.List, h.EntryID, h.Fingerprint)
			if fps[k] < PeopleForFalsePositive(h.Score) && !raised[sub.member+"\x00"+k] {
				open = append(open, h)
			}
		}
		if len(open) == 0 {
			return nil
		}
		c := emi.AMLCheck{Token: kernel.NewToken(), PartnerID: m.PartnerID, Source: source, MerchantToken: m.Token, MemberToken: sub.member,
			FirstName: q.FirstName, LastName: q.LastName, Nationality: q.Nationality, Birthday: q.Birthday,
			PersonKey: key, ListVersion: version, CreatedAt: s.now.At(ctx).UTC()}
		c.Hits, c.Status = markSuppressed(open, nil)
		if err := s.store.InsertAMLCheck(ctx, c); err != nil {
			return err
		}
		changes := map[string]any{"merchant": m.Token, "hits": len(open), "list_version": version}
		if sub.member != "" {
			changes["member"] = sub.member
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "aml_check." + source, ResourceType: "aml_check", ResourceToken: c.Token,
			PartnerID: m.PartnerID, Changes: changes})
	})
}

// MerchantScreening returns the AML state of an onboarded merchant for
// card operations: its checks waiting for a decision or confirmed.
func (a *AML) MerchantScreening(ctx context.Context, merchant string) (emi.UserScreening, error) {
	return a.store.MerchantScreening(ctx, merchant)
}
