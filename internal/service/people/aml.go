package people

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	staffsvc "emi/internal/service/staff"
	"emi/internal/validate"
	"emi/internal/worker"
)

// Screener screens people against the loaded sanctions lists.
// internal/screening implements it (adapted in internal/app, so that this
// layer knows nothing of how the lists are fetched).
type Screener interface {
	// Screen returns the hits at or above the threshold, best first, and the
	// version of the lists used. Returns emi.ErrInvalidProcessor when no
	// list is loaded.
	Screen(q emi.AMLQuery) (version string, hits []emi.AMLHit, err error)
	// Status describes the loaded lists.
	Status() emi.SanctionsStatus
	// Normalize normalises a name for comparison.
	Normalize(s string) string
	// Entry returns a list entry as the loaded lists hold it.
	Entry(list, id string) (emi.SanctionsEntry, bool)
}

// AMLStore keeps AML checks, their hits and the remembered false positives.
type AMLStore interface {
	InsertAMLCheck(ctx context.Context, c emi.AMLCheck) error
	// AMLCheck returns a check with its hits; partnerID "" for any partner.
	// Returns emi.ErrAMLCheckNotFound.
	AMLCheck(ctx context.Context, partnerID, token string) (emi.AMLCheck, error)
	// AMLCheckForUpdate locks the check row.
	AMLCheckForUpdate(ctx context.Context, token string) (emi.AMLCheck, error)
	DecideAMLHit(ctx context.Context, token string, h emi.AMLHit) error
	SetAMLCheckStatus(ctx context.Context, token string, st emi.AMLStatus, by string, at time.Time) error
	// FalsePositives returns the remembered false positives of a person as
	// "list\x00entry\x00fingerprint" keys.
	// FalsePositives returns the remembered false positives of a person
	// by FalsePositiveKey, with the number of people who decided each (1 or 2).
	FalsePositives(ctx context.Context, partnerID string, personKey []byte) (map[string]int, error)
	// InsertFalsePositive remembers a false positive decided by by and,
	// for a two-person decision, confirmed by confirmedBy ("" otherwise).
	InsertFalsePositive(ctx context.Context, partnerID string, personKey []byte, h emi.AMLHit, checkToken, reason, by, confirmedBy string, at time.Time) error
	AMLChecks(ctx context.Context, f emi.AMLFilter) ([]emi.AMLCheck, error)
	CountAMLChecks(ctx context.Context, st emi.AMLStatus) (int64, error)
	// RaisedForUser returns the "list\x00entry\x00fingerprint" keys already
	// raised (in any check) for a user.
	RaisedForUser(ctx context.Context, userToken string) (map[string]bool, error)
	// UserScreening returns the AML state of a user (checks linked to it).
	UserScreening(ctx context.Context, user string) (emi.UserScreening, error)
	// MerchantScreening returns the AML state of an onboarded merchant
	// (checks naming it; IdentitySince unused).
	MerchantScreening(ctx context.Context, merchant string) (emi.UserScreening, error)
	InsertSanctionsUpdate(ctx context.Context, u emi.SanctionsUpdate) error
	SanctionsUpdates(ctx context.Context, limit int) ([]emi.SanctionsUpdate, error)
}

// AML runs and reviews AML checks (seed aml_check, contract §6).
type AML struct {
	tx       kernel.TxRunner
	controls *staffsvc.Controls
	store    AMLStore
	users    UserStore
	screener Screener
	watch    *Watchlist
	events   *kernel.Events
	jobs     kernel.Enqueuer
	audit    *kernel.Auditor
	validate *validate.Validator
	now      kernel.Clock
}

// AMLDeps is what AML needs; NewAML checks that none is nil.
type AMLDeps struct {
	Tx       kernel.TxRunner
	Store    AMLStore
	Users    UserStore
	Screener Screener
	Watch    *Watchlist
	Controls *staffsvc.Controls
	Events   *kernel.Events
	Jobs     kernel.Enqueuer
	Audit    *kernel.Auditor
	Validate *validate.Validator
	Now      kernel.Clock
}

// NewAML returns the AML service.
// watch is the adverse-media watch list its additions are screened against.
func NewAML(d AMLDeps) *AML {
	kernel.MustHave("AML", d)
	return &AML{tx: d.Tx, store: d.Store, users: d.Users, screener: d.Screener, watch: d.Watch, controls: d.Controls, events: d.Events, jobs: d.Jobs, audit: d.Audit, validate: d.Validate, now: d.Now}
}

// FalsePositiveKey identifies a list entry's hit in the false-positive
// memory: list, entry and the entry's fingerprint.
func FalsePositiveKey(list, entry, fingerprint string) string {
	return list + "\x00" + entry + "\x00" + fingerprint
}

// PersonKey identifies a person for the false-positive memory: the
// normalised name (token order ignored) and the birthday.
func (a *AML) personKey(first, last, birthday string) []byte {
	return PersonKey(a.screener.Normalize, first, last, birthday)
}

// PersonKey is the person of the false-positive memory, shared by AML
// checks and the sanctions check of applications: SHA-256 of the
// normalised name (token order ignored) and the birthday.
func PersonKey(norm NameNormalizer, first, last, birthday string) []byte {
	sum := sha256.Sum256([]byte(NormalizedName(norm, first+" "+last) + "|" + birthday))
	return sum[:]
}

// Check screens a person for the calling partner (aml_check) and stores the
// check with the list version used. A hit that a reviewer already marked a
// false positive for this person and list entry (entry unchanged) is kept
// as suppressed and not raised again. The check's status is clear or match.
func (a *AML) Check(ctx context.Context, q emi.AMLQuery) (emi.AMLCheck, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || p.PartnerID == "" {
		return emi.AMLCheck{}, emi.ErrForbidden
	}
	if err := a.validate.Struct(q, emi.ErrValidation); err != nil {
		return emi.AMLCheck{}, err
	}
	c, err := a.record(ctx, q, emi.AMLCheck{PartnerID: p.PartnerID, Source: "api"}, "aml_check.create", "", nil)
	if err != nil {
		return emi.AMLCheck{}, err
	}
	return c, nil
}

// record screens q and stores the check c (its partner, source and user
// set by the caller) with the person, the hits and the list version, the
// hits remembered as false positives for this person kept suppressed; it
// audits action with the outcome and extra. The one path of Check (the
// partner's aml_check) and ScreenUser (a user's changed identity).
func (a *AML) record(ctx context.Context, q emi.AMLQuery, c emi.AMLCheck, action, auditPartner string, extra map[string]any) (emi.AMLCheck, error) {
	version, hits, err := a.screener.Screen(q)
	if err != nil {
		return emi.AMLCheck{}, err
	}
	c.Token, c.FirstName, c.LastName, c.Nationality, c.Birthday = kernel.NewToken(), q.FirstName, q.LastName, q.Nationality, q.Birthday
	c.PersonKey, c.ListVersion, c.CreatedAt = a.personKey(q.FirstName, q.LastName, q.Birthday), version, a.now.At(ctx).UTC()
	err = a.tx.InTx(ctx, func(ctx context.Context) error {
		fps, err := a.store.FalsePositives(ctx, c.PartnerID, c.PersonKey)
		if err != nil {
			return err
		}
		c.Hits, c.Status = markSuppressed(hits, fps)
		if err := a.store.InsertAMLCheck(ctx, c); err != nil {
			return err
		}
		changes := map[string]any{"status": c.Status, "hits": len(hits), "open_hits": c.OpenHits(), "list_version": version}
		maps.Copy(changes, extra)
		return a.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "aml_check", ResourceToken: c.Token,
			PartnerID: auditPartner, Changes: changes})
	})
	return c, err
}

// PeopleForFalsePositive is the number of people a false-positive decision
// on an API check's hit of that score takes. A remembered false positive
// answers a later hit only when at least that many people decided it, so
// remembering never lowers the number of people a decision needs.
func PeopleForFalsePositive(score float64) int {
	if score >= emi.TwoPersonHitScore {
		return 2
	}
	return 1
}

// markSuppressed numbers the hits, marks those remembered as false
// positives and returns the status the check starts in.
func markSuppressed(hits []emi.AMLHit, fps map[string]int) ([]emi.AMLHit, emi.AMLStatus) {
	st := emi.AMLClear
	for i := range hits {
		hits[i].N = i + 1
		if fps[FalsePositiveKey(hits[i].List, hits[i].EntryID, hits[i].Fingerprint)] >= PeopleForFalsePositive(hits[i].Score) {
			hits[i].Suppressed = true
			continue
		}
		st = emi.AMLMatch
	}
	return hits, st
}

// ScreenUser screens a user's identity as it is now and records the check,
// linked to the user, with source user_update (user_update changed the
// name, birthday or nationality, so the old screening no longer holds).
// Hits remembered as false positives for this person are kept suppressed,
// as in Check; any other hit makes the check a match in the AML review
// queue, and until it is decided the user's cards cannot be issued,
// activated or assigned. Runs in the caller's transaction. Returns
// emi.ErrInvalidProcessor when no list is loaded: the change is refused
// rather than left unscreened.
func (a *AML) ScreenUser(ctx context.Context, u emi.User) (emi.AMLCheck, error) {
	q := emi.AMLQuery{FirstName: u.FirstName, LastName: u.LastName, Nationality: u.Nationality, Birthday: u.Birthday}
	return a.record(ctx, q, emi.AMLCheck{PartnerID: u.PartnerID, Source: emi.AMLSourceUserUpdate, UserToken: u.Token},
		"aml_check.user_update", u.PartnerID, map[string]any{"user": u.Token})
}

// UserScreening returns the AML state of a user for card operations.
func (a *AML) UserScreening(ctx context.Context, user string) (emi.UserScreening, error) {
	return a.store.UserScreening(ctx, user)
}

// AMLCheck returns a check of the partner, for user creation.
func (a *AML) AMLCheck(ctx context.Context, partnerID, token string) (emi.AMLCheck, error) {
	return a.store.AMLCheck(ctx, partnerID, token)
}

// Get returns any check with its hits, for compliance (emi.PermViewPeople).
func (a *AML) Get(ctx context.Context, token string) (emi.AMLCheck, error) {
	if err := View.Require(ctx); err != nil {
		return emi.AMLCheck{}, err
	}
	c, err := a.store.AMLCheck(ctx, "", token)
	if err != nil {
		return c, err
	}
	for i, h := range c.Hits {
		if e, ok := a.screener.Entry(h.List, h.EntryID); ok {
			c.Hits[i].Entry = &e
		}
	}
	return c, nil
}

// List lists checks for the back office, a page at a time (f.After), in
// f.Sort's order; by default the review queue (status match) oldest first,
// the other tabs newest first (emi.PermViewPeople). An unknown order or a
// cursor that is not a token is a validation error.
func (a *AML) List(ctx context.Context, f emi.AMLFilter) ([]emi.AMLCheck, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 100
	}
	if err := checkListPage(emi.AMLSortKeys, f.Sort, f.After); err != nil {
		return nil, err
	}
	return a.store.AMLChecks(ctx, f)
}

// checkListPage checks the order and the cursor of a back-office queue
// list (AML checks, KYC sessions): the key one of keys (or none, the
// default order) and the cursor a token (or none, the first page). The
// store would ignore anything else; refusing it says so instead of
// showing a page that is not the one asked for.
func checkListPage(keys []string, o emi.SortOrder, after string) error {
	var bad kernel.Problems
	if o.Key != "" && !slices.Contains(keys, o.Key) {
		bad.Add("sort", "must be one of "+strings.Join(keys, ", "))
	}
	if after != "" && !kernel.ValidToken(after) {
		bad.Add("after", "must be the token of the last row seen")
	}
	if len(bad) > 0 {
		return emi.ErrReviewValidation.WithFields(bad...)
	}
	return nil
}

// QueueSize counts the checks waiting for review.
func (a *AML) QueueSize(ctx context.Context) (int64, error) {
	if err := View.Require(ctx); err != nil {
		return 0, err
	}
	return a.store.CountAMLChecks(ctx, emi.AMLMatch)
}

// Decide records a compliance officer's decision on one hit
// (emi.PermReviewAML): false positive or true match, with a mandatory
// reason. A false positive is remembered for the person and the entry as it
// is now. When no hit is left open the check becomes cleared (all false
// positives) or confirmed (any true match) and aml_check.reviewed is sent.
func (a *AML) Decide(ctx context.Context, token string, d emi.HitDecision) (emi.AMLCheck, error) {
	if err := ReviewAML.Require(ctx); err != nil {
		return emi.AMLCheck{}, err
	}
	d.Reason = strings.TrimSpace(d.Reason)
	if err := a.validate.Struct(d, emi.ErrReviewValidation); err != nil {
		return emi.AMLCheck{}, err
	}
	staff, _ := emi.PrincipalFrom(ctx)
	var out emi.AMLCheck
	err := a.tx.InTx(ctx, func(ctx context.Context) error {
		c, err := a.store.AMLCheckForUpdate(ctx, token)
		if err != nil {
			return err
		}
		if c.Status != emi.AMLMatch {
			return emi.ErrReviewClosed.WithDetail("check is %s", c.Status)
		}
		idx := -1
		for i, h := range c.Hits {
			if h.N == d.N {
				idx = i
			}
		}
		if idx < 0 || c.Hits[idx].Suppressed {
			return emi.ErrReviewValidation.Field("n", "is not an open hit of this check")
		}
		h := &c.Hits[idx]
		if !h.Open() {
			return emi.ErrReviewClosed.WithDetail("hit %d already decided", d.N)
		}
		now := a.now.At(ctx).UTC()
		action := "aml_check.hit_decided"
		changes := map[string]any{"hit": d.N, "list": h.List, "entry_id": h.EntryID, "decision": d.Decision, "reason": d.Reason}
		switch {
		case h.Pending() && d.Decision == emi.HitFalsePositive:
			// The second person of a false positive on a hit scoring 0.9 or
			// more.
			if err := a.controls.Approve(ctx, staffsvc.ControlAMLHitFalsePositive, h.DecidedBy); err != nil {
				return err
			}
			h.ConfirmedBy, h.ConfirmedAt = staff.ActorID, &now
			// The sandbox's played reviewers answer this check only
			// (kernel.SandboxPlayed).
			if !kernel.SandboxPlayed(h.DecidedBy, staff.ActorID) {
				if err := a.store.InsertFalsePositive(ctx, c.PartnerID, c.PersonKey, *h, c.Token, h.Reason, h.DecidedBy, staff.ActorID, now); err != nil {
					return err
				}
			}
			action, changes["proposed_by"] = "aml_check.hit_false_positive_confirmed", h.DecidedBy
		case h.Pending():
			// A true match contradicts the proposal.
			changes["proposed_false_positive_by"] = h.DecidedBy
			h.Decision, h.Reason, h.DecidedBy, h.DecidedAt = d.Decision, d.Reason, staff.ActorID, &now
		default:
			h.Decision, h.Reason, h.DecidedBy, h.DecidedAt = d.Decision, d.Reason, staff.ActorID, &now
			switch {
			case d.Decision == emi.HitFalsePositive && h.NeedsSecondPerson():
				action = "aml_check.hit_false_positive_proposed"
			case d.Decision == emi.HitFalsePositive && !kernel.SandboxPlayed(staff.ActorID):
				// One person decides a hit under 0.9; the memory says so,
				// and answers only later hits that take one person (not
				// the sandbox's played reviewers: kernel.SandboxPlayed).
				if err := a.store.InsertFalsePositive(ctx, c.PartnerID, c.PersonKey, *h, c.Token, d.Reason, staff.ActorID, "", now); err != nil {
					return err
				}
			}
		}
		if err := a.store.DecideAMLHit(ctx, c.Token, *h); err != nil {
			return err
		}
		if err := a.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "aml_check", ResourceToken: c.Token,
			PartnerID: c.PartnerID, Changes: changes}); err != nil {
			return err
		}
		if c.OpenHits() == 0 {
			c.Status = emi.AMLCleared
			var summary []map[string]any
			for _, h := range c.Hits {
				if h.Suppressed {
					continue
				}
				if h.Decision == emi.HitTrueMatch {
					c.Status = emi.AMLConfirmed
				}
				summary = append(summary, map[string]any{"list": h.List, "entry_id": h.EntryID, "decision": h.Decision})
			}
			c.ReviewedAt, c.ReviewedBy = &now, staff.ActorID
			if err := a.store.SetAMLCheckStatus(ctx, c.Token, c.Status, staff.ActorID, now); err != nil {
				return err
			}
			fields := map[string]any{"status": c.Status, "hits": summary}
			if c.UserToken != "" {
				fields["user"] = c.UserToken
			}
			if c.MerchantToken != "" {
				fields["merchant"] = c.MerchantToken
			}
			if _, err := a.events.Emit(ctx, c.PartnerID, emi.EventAMLCheckReviewed, "aml_check", c.Token, fields); err != nil {
				return err
			}
			if err := a.audit.Record(ctx, emi.AuditEntry{Action: "aml_check.reviewed", ResourceType: "aml_check", ResourceToken: c.Token,
				PartnerID: c.PartnerID, Changes: map[string]any{"status": c.Status}}); err != nil {
				return err
			}
		}
		out = c
		return nil
	})
	return out, err
}

// Status describes the loaded lists and the latest update attempts.
func (a *AML) Status(ctx context.Context) (emi.SanctionsStatus, error) {
	if err := View.Require(ctx); err != nil {
		return emi.SanctionsStatus{}, err
	}
	st := a.screener.Status()
	ups, err := a.store.SanctionsUpdates(ctx, 10)
	if err != nil {
		return st, err
	}
	st.Updates = ups
	return st, nil
}

// JobAMLRescreen is the job kind that re-screens users after a list update.
const JobAMLRescreen = "aml.rescreen"

// RescreenPayload names the list version a re-screening is for and the
// entries that are new or changed in it ("list|entry" keys).
type RescreenPayload struct {
	Version string   `json:"version"`
	Entries []string `json:"entries"`
}

// ListsUpdated records a list update attempt of this instance and, when it
// succeeded with new or changed entries, enqueues the re-screening of every
// user (once per version, whichever instance gets there first).
func (a *AML) ListsUpdated(ctx context.Context, u emi.SanctionsUpdate, changed []string) error {
	return a.tx.InTx(ctx, func(ctx context.Context) error {
		if err := a.store.InsertSanctionsUpdate(ctx, u); err != nil {
			return err
		}
		if !u.OK || len(changed) == 0 {
			return nil
		}
		// Pending applications are screened again too (they were checked
		// against the old lists).
		if err := kernel.EnqueueRescreenApplications(ctx, a.jobs, "lists:"+u.Version); err != nil {
			return err
		}
		// And the onboarded merchants' companies and people.
		if err := enqueueRescreenMerchants(ctx, a.jobs, u.Version, changed); err != nil {
			return err
		}
		_, _, err := a.jobs.Enqueue(ctx, emi.JobSpec{Kind: JobAMLRescreen, UniqueKey: "aml.rescreen:" + u.Version,
			Payload: RescreenPayload{Version: u.Version, Entries: changed}})
		return err
	})
}

// rescreenBatch is how many users one transaction re-screens.
const rescreenBatch = 200

// Rescreen re-screens every active user against the current lists and
// raises, as a new check in the review queue, each hit on an entry that the
// update added or changed, unless it was already raised for that user or
// is a remembered false positive. It runs as a background job; a job for a
// version this instance has not loaded yet fails and is retried.
func (a *AML) Rescreen(ctx context.Context, job emi.Job) error {
	var pl RescreenPayload
	if err := json.Unmarshal(job.Payload, &pl); err != nil {
		return worker.Permanent(fmt.Errorf("aml.rescreen job %d: bad payload: %w", job.ID, err))
	}
	if v := a.screener.Status().Version; v != pl.Version {
		return worker.RetryAfter(time.Minute, fmt.Errorf("rescreen for lists %s, this instance has %q", pl.Version, v))
	}
	changed := make(map[string]bool, len(pl.Entries))
	for _, e := range pl.Entries {
		changed[e] = true
	}
	after := ""
	for {
		users, err := a.users.ActiveUsersAfter(ctx, after, rescreenBatch)
		if err != nil {
			return err
		}
		if len(users) == 0 {
			return nil
		}
		for _, u := range users {
			if err := a.rescreenUser(ctx, u, pl.Version, changed); err != nil {
				return err
			}
		}
		after = users[len(users)-1].Token
	}
}

func (a *AML) rescreenUser(ctx context.Context, u emi.User, version string, changed map[string]bool) error {
	q := emi.AMLQuery{FirstName: u.FirstName, LastName: u.LastName, Nationality: u.Nationality, Birthday: u.Birthday}
	v, hits, err := a.screener.Screen(q)
	if err != nil {
		return err
	}
	if v != version {
		return errors.New("lists changed during the re-screening")
	}
	var fresh []emi.AMLHit
	for _, h := range hits {
		if changed[h.List+"|"+h.EntryID] {
			fresh = append(fresh, h)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("aml.rescreen"))
	return a.raiseForUser(ctx, u, emi.AMLSourceRescreen, version, fresh)
}

// ScreenWatchlistEntry is the JobWatchlistScreenUsers handler: it screens
// every active customer's name against a watch-list entry just added (a
// watch-list change reaches active customers, not only new ones). A user
// whose name is as close as WatchlistThreshold gets a check with source
// watchlist and one hit (list "watchlist", the entry's id), unless that hit
// was raised for them already or is remembered as a false positive for that
// person; the check waits in the alert queue, and until it is decided the
// user gets no new card and no money leaves their accounts. An entry
// removed before the job ran screens nobody.
func (a *AML) ScreenWatchlistEntry(ctx context.Context, job emi.Job) error {
	var pl watchlistScreenPayload
	if err := json.Unmarshal(job.Payload, &pl); err != nil || pl.Entry == "" {
		return worker.Permanent(fmt.Errorf("%s job %d: bad payload %s", JobWatchlistScreenUsers, job.ID, job.Payload))
	}
	if a.watch == nil {
		return worker.Permanent(errors.New("aml: no watch list configured"))
	}
	e, ok, err := a.watch.entry(ctx, pl.Entry)
	if err != nil || !ok {
		return err
	}
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("watchlist.screen"))
	fingerprint := watchlistFingerprint(e)
	after := ""
	for {
		users, err := a.users.ActiveUsersAfter(ctx, after, rescreenBatch)
		if err != nil {
			return err
		}
		if len(users) == 0 {
			return nil
		}
		for _, u := range users {
			score, ok := a.watch.match(u.FirstName+" "+u.LastName, e)
			if !ok {
				continue
			}
			h := emi.AMLHit{List: emi.WatchlistListName, EntryID: e.ID, EntryType: "individual", Name: e.Name,
				MatchedName: u.FirstName + " " + u.LastName, Score: score, Fingerprint: fingerprint,
				Fields: []string{"name"}}
			if err := a.raiseForUser(ctx, u, emi.AMLSourceWatchlist, "watch list "+e.Category, []emi.AMLHit{h}); err != nil {
				return err
			}
		}
		after = users[len(users)-1].Token
	}
}

// raiseForUser records a check of source for u with the hits not already
// raised for them and not remembered as false positives by as many people
// as they take; nothing when none is left.
func (a *AML) raiseForUser(ctx context.Context, u emi.User, source, version string, hits []emi.AMLHit) error {
	return a.tx.InTx(ctx, func(ctx context.Context) error {
		key := a.personKey(u.FirstName, u.LastName, u.Birthday)
		fps, err := a.store.FalsePositives(ctx, u.PartnerID, key)
		if err != nil {
			return err
		}
		raised, err := a.store.RaisedForUser(ctx, u.Token)
		if err != nil {
			return err
		}
		var open []emi.AMLHit
		for _, h := range hits {
			k := FalsePositiveKey(h.List, h.EntryID, h.Fingerprint)
			if fps[k] < PeopleForFalsePositive(h.Score) && !raised[k] {
				open = append(open, h)
			}
		}
		if len(open) == 0 {
			return nil
		}
		c := emi.AMLCheck{Token: kernel.NewToken(), PartnerID: u.PartnerID, Source: source, UserToken: u.Token,
			FirstName: u.FirstName, LastName: u.LastName, Nationality: u.Nationality, Birthday: u.Birthday,
			PersonKey: key, ListVersion: version, CreatedAt: a.now.At(ctx).UTC()}
		c.Hits, c.Status = markSuppressed(open, nil)
		if err := a.store.InsertAMLCheck(ctx, c); err != nil {
			return err
		}
		return a.audit.Record(ctx, emi.AuditEntry{Action: "aml_check." + source, ResourceType: "aml_check", ResourceToken: c.Token,
			PartnerID: u.PartnerID, Changes: map[string]any{"user": u.Token, "hits": len(open), "list_version": version}})
	})
}
