package accounts

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// ProgramStore keeps programs for the administrators who manage them. It
// is part of AccountStore.
type ProgramStore interface {
	// LockProgram returns a program with its groups and locks its row
	// until the transaction in ctx ends. Returns emi.ErrProgramNotFound.
	LockProgram(ctx context.Context, code string) (emi.Program, error)
	// InsertProgram adds a program with its groups. Returns
	// emi.ErrNonUniqueValue when a program has the code.
	InsertProgram(ctx context.Context, p emi.Program) error
	// UpdateProgram replaces a program's settings and groups and moves its
	// UpdatedAt strictly forward. Returns emi.ErrProgramNotFound.
	UpdateProgram(ctx context.Context, p emi.Program) error
	// ProgramsInUse returns the codes of the programs (among codes; all
	// when none are given) that at least one account uses.
	ProgramsInUse(ctx context.Context, codes ...string) ([]string, error)
	// MissingPartners returns the ids among ids that name no partner.
	MissingPartners(ctx context.Context, ids []string) ([]string, error)
	// InsertProgramChange records the settings a request proposes;
	// ProgramChange returns those of a request; ProgramChanges every
	// waiting one by program.
	InsertProgramChange(ctx context.Context, c emi.ProgramChange) error
	ProgramChange(ctx context.Context, request string) (emi.ProgramChange, error)
	ProgramChanges(ctx context.Context) (map[string]emi.ProgramChange, error)
}

// programRisk names what a change from before to after does to risk that
// takes two administrators (ControlProgramRisk): an overdraft turned on
// (balances may go below zero), or the AML check for cards turned off. ""
// when neither.
func programRisk(before, after emi.Program) string {
	var moves []string
	if after.Overdraft && !before.Overdraft {
		moves = append(moves, "overdraft turned on")
	}
	if before.AMLRequired && !after.AMLRequired {
		moves = append(moves, "AML check for cards turned off")
	}
	return strings.Join(moves, "; ")
}

var (
	programCodeRe = regexp.MustCompile(`^[a-z0-9_]{2,40}$`)
	groupCodeRe   = regexp.MustCompile(`^[a-z0-9_]{1,40}$`)
	binPrefixRe   = regexp.MustCompile(`^[0-9]{6,8}$`)
)

// maxGroupCodes bounds the codes of one group kind.
const maxGroupCodes = 50

// CreateProgram adds a program (emi.PermManagePrograms), audited as
// program.create with every setting. Returns emi.ErrProgramValidation with
// field errors when a setting breaks a rule (see UpdateProgram), or when
// the code (2 to 40 of a-z, 0-9, _) is malformed or already taken.
func (s *Accounts) CreateProgram(ctx context.Context, in emi.ProgramInput) (emi.Program, error) {
	if err := ManagePrograms.Require(ctx); err != nil {
		return emi.Program{}, err
	}
	in = normalizeProgram(in)
	var bad kernel.Problems
	if !programCodeRe.MatchString(in.Code) {
		bad.Add("code", "must be 2 to 40 characters: lower-case letters, digits and _")
	}
	if err := s.checkProgram(ctx, &bad, in); err != nil {
		return emi.Program{}, err
	}
	if in.Overdraft {
		// Turning an overdraft on takes two administrators (balances may go
		// below zero): create the program without it, then propose it.
		bad.Add("overdraft", "cannot be on in a new program: create it without, then turn the overdraft on (a second administrator approves)")
	}
	p := programOf(in.Code, in)
	p.Schemes = schemesOf(in.Currencies)
	out, err := kernel.InTxRead(ctx, s.tx, func(ctx context.Context) error {
		if bad.Has("code") {
			return nil
		}
		if _, err := s.store.Program(ctx, in.Code); err == nil {
			bad.Add("code", "is taken: a program with this code exists")
			return nil
		} else if !errors.Is(err, emi.ErrProgramNotFound) {
			return err
		}
		if len(bad) > 0 {
			return nil
		}
		if err := s.store.InsertProgram(ctx, p); errors.Is(err, emi.ErrNonUniqueValue) {
			bad.Add("code", "is taken: a program with this code exists") // created meanwhile
			return nil
		} else if err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "program.create", ResourceType: "program", ResourceToken: p.Code,
			Changes: programChanges(emi.Program{}, p, true)})
	}, func(ctx context.Context) (emi.Program, error) {
		if len(bad) > 0 {
			return emi.Program{}, nil // nothing was created
		}
		return s.store.Program(ctx, p.Code)
	})
	if err != nil {
		return emi.Program{}, err
	}
	if len(bad) > 0 {
		return emi.Program{}, emi.ErrProgramValidation.WithFields(kernel.Dedupe(bad)...)
	}
	return out, nil
}

// UpdateProgram replaces the settings of a program (emi.PermManagePrograms)
// with in, audited as program.update with the changed settings, each from
// its old value to the new one; saving unchanged settings changes and
// records nothing.
//
// in.Version must be the program's UpdatedAt as the editor loaded it:
// otherwise someone saved it meanwhile and emi.ErrProgramStale is returned,
// so no update is lost silently. Returns emi.ErrProgramNotFound for an
// unknown code, and emi.ErrProgramValidation with field errors when:
//   - name is empty or longer than 200 characters;
//   - currencies are not one to three distinct of EUR, BGN, GBP, or differ
//     from the program's while an account uses it (its balances were opened
//     in them; the identifier schemes follow the currencies);
//   - card_types are not distinct of virtual, plastic, or cards are
//     allowed without a card type or a bin_prefix;
//   - bin_prefix is not empty or 6 to 8 digits; card_validity_months is
//     not 1 to 120;
//   - allowed_partners names a partner that does not exist (nil allows
//     every partner; an empty list none);
//   - groups name an unknown kind or a code outside ^[a-z0-9_]{1,40}$, or
//     repeat a code; a default is not one of its kind's codes.
//
// Removing a group code is allowed even though cards may use it: cards
// keep the group codes they have, and the cards feature checks a card's
// groups against its program when the card's groups change.
func (s *Accounts) UpdateProgram(ctx context.Context, code string, in emi.ProgramInput) (emi.Program, error) {
	if err := ManagePrograms.Require(ctx); err != nil {
		return emi.Program{}, err
	}
	in = normalizeProgram(in)
	var bad kernel.Problems
	if err := s.checkProgram(ctx, &bad, in); err != nil {
		return emi.Program{}, err
	}
	var out emi.Program
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		cur, err := s.store.LockProgram(ctx, code)
		if err != nil {
			return err
		}
		if !cur.UpdatedAt.Equal(in.Version) {
			return emi.ErrProgramStale.WithDetail("program %s: version %s, edited %s", code, cur.UpdatedAt, in.Version)
		}
		next, err := s.nextProgram(ctx, &bad, cur, in)
		if err != nil || len(bad) > 0 {
			return err
		}
		changes := programChanges(cur, next, false)
		if len(changes) == 0 {
			out = cur
			return nil
		}
		if risk := programRisk(cur, next); risk != "" {
			// Proposed, not applied: a second administrator approves
			// (ApproveProgramChange).
			in.Version = cur.UpdatedAt
			req, err := s.controls.ProposeRequest(ctx, ProgramChangeFlow, staff.Proposal{Subject: programSubject(cur.Code),
				ResourceType: "program", ResourceToken: cur.Code, Revision: staff.TimeRevision(cur.UpdatedAt),
				Changes: map[string]any{"risk": risk, "changes": changes}})
			if err != nil {
				return err
			}
			c := emi.ProgramChange{Request: req.ID, Program: cur.Code, Input: in, Risk: risk, ProposedBy: req.ProposedBy, ProposedAt: req.ProposedAt}
			if err := s.store.InsertProgramChange(ctx, c); err != nil {
				return err
			}
			out = cur
			out.Pending = &c
			return nil
		}
		if err := s.store.UpdateProgram(ctx, next); err != nil {
			return err
		}
		// A proposal bound to the version this replaces is void now, not
		// when someone next tries to decide it.
		if err := s.controls.VoidRequest(ctx, ProgramChangeFlow, programSubject(cur.Code)); err != nil {
			return err
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "program.update", ResourceType: "program", ResourceToken: cur.Code,
			Changes: changes}); err != nil {
			return err
		}
		out, err = s.store.Program(ctx, cur.Code)
		return err
	})
	if err != nil {
		return emi.Program{}, err
	}
	if len(bad) > 0 {
		return emi.Program{}, emi.ErrProgramValidation.WithFields(kernel.Dedupe(bad)...)
	}
	return out, nil
}

// ProgramsInUse returns the codes of the programs that accounts use, whose
// currencies are locked (emi.PermViewAccounts).
func (s *Accounts) ProgramsInUse(ctx context.Context) (map[string]bool, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	codes, err := s.store.ProgramsInUse(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(codes))
	for _, c := range codes {
		out[c] = true
	}
	return out, nil
}

// normalizeProgram trims the texts of in and drops empty group entries.
func normalizeProgram(in emi.ProgramInput) emi.ProgramInput {
	in.Code, in.Name, in.BINPrefix = strings.TrimSpace(in.Code), strings.TrimSpace(in.Name), strings.TrimSpace(in.BINPrefix)
	in.AllowedPartners = slices.Clone(in.AllowedPartners) // the caller's stays as it is
	for i, id := range in.AllowedPartners {
		in.AllowedPartners[i] = strings.ToLower(strings.TrimSpace(id))
	}
	groups := map[string][]string{}
	for kind, codes := range in.Groups {
		var cs []string
		for _, c := range codes {
			if c = strings.TrimSpace(c); c != "" {
				cs = append(cs, c)
			}
		}
		if len(cs) > 0 {
			groups[kind] = cs
		}
	}
	defaults := map[string]string{}
	for kind, c := range in.Defaults {
		if c = strings.TrimSpace(c); c != "" {
			defaults[kind] = c
		}
	}
	in.Groups, in.Defaults = groups, defaults
	return in
}

// checkProgram adds the problems of in's settings to bad (see
// UpdateProgram); it returns an error only when a check cannot run.
func (s *Accounts) checkProgram(ctx context.Context, bad *kernel.Problems, in emi.ProgramInput) error {
	if err := bad.AddErr("", s.validate.Struct(in, emi.ErrProgramValidation)); err != nil {
		return err
	}
	if len(in.Currencies) == 0 || len(in.Currencies) > len(emi.ProgramCurrencies) {
		bad.Add("currencies", "choose one to three currencies: EUR, BGN, GBP")
	} else if repeated(in.Currencies) != "" {
		bad.Add("currencies", "lists "+repeated(in.Currencies)+" twice: a balance per currency")
	}
	if d := repeated(in.CardTypes); d != "" {
		bad.Add("card_types", "lists "+d+" twice")
	}
	if in.BINPrefix != "" && !binPrefixRe.MatchString(in.BINPrefix) {
		bad.Add("bin_prefix", "must be 6 to 8 digits")
	}
	if in.CardsAllowed {
		if len(in.CardTypes) == 0 {
			bad.Add("card_types", "choose at least one card type when cards are allowed")
		}
		if in.BINPrefix == "" {
			bad.Add("bin_prefix", "is required when cards are allowed (6 to 8 digits)")
		}
	}
	if d := repeated(in.AllowedPartners); d != "" {
		bad.Add("allowed_partners", "lists a partner twice")
	}
	for kind, codes := range in.Groups {
		if !slices.Contains(emi.GroupKinds, kind) {
			bad.Add("groups", "names an unknown kind "+strconv.Quote(kind)+" (one of "+strings.Join(emi.GroupKinds, ", ")+")")
			continue
		}
		field := "groups." + kind
		if len(codes) > maxGroupCodes {
			bad.Add(field, "must have at most "+strconv.Itoa(maxGroupCodes)+" codes")
		}
		for _, c := range codes {
			if !groupCodeRe.MatchString(c) {
				bad.Add(field, strconv.Quote(c)+" is not a group code: 1 to 40 of lower-case letters, digits and _")
			}
		}
		if d := repeated(codes); d != "" {
			bad.Add(field, "lists "+d+" twice")
		}
	}
	for kind, c := range in.Defaults {
		if !slices.Contains(emi.GroupKinds, kind) {
			bad.Add("defaults", "names an unknown kind "+strconv.Quote(kind))
			continue
		}
		if !slices.Contains(in.Groups[kind], c) {
			msg := "must be one of the " + strings.ReplaceAll(kind, "_", " ") + " codes"
			if len(in.Groups[kind]) == 0 {
				msg = "needs the code among the " + strings.ReplaceAll(kind, "_", " ") + " codes (there are none)"
			} else {
				msg += " (" + strings.Join(in.Groups[kind], ", ") + ")"
			}
			bad.Add("defaults."+kind, msg)
		}
	}
	if len(in.AllowedPartners) > 0 && !bad.Has("allowed_partners") {
		missing, err := s.store.MissingPartners(ctx, in.AllowedPartners)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			bad.Add("allowed_partners", "names no partner: "+strings.Join(missing, ", "))
		}
	}
	return nil
}

// repeated returns the first value of list that appears twice, or "".
func repeated(list []string) string {
	for i, v := range list {
		if slices.Contains(list[:i], v) {
			return v
		}
	}
	return ""
}

// programOf is the program code with the settings of in (schemes apart).
func programOf(code string, in emi.ProgramInput) emi.Program {
	p := emi.Program{Code: code, Name: in.Name, Currencies: slices.Clone(in.Currencies), CardsAllowed: in.CardsAllowed,
		CardTypes: slices.Clone(in.CardTypes), BINPrefix: in.BINPrefix, CardValidityMonths: in.CardValidityMonths,
		AMLRequired: in.AMLRequired, Overdraft: in.Overdraft, PINBySMS: in.PINBySMS, WalletProvisioning: in.WalletProvisioning,
		Groups: map[string][]string{}, Defaults: map[string]string{}}
	if in.AllowedPartners != nil {
		p.AllowedPartners = slices.Clone(in.AllowedPartners)
	}
	for kind, codes := range in.Groups {
		p.Groups[kind] = slices.Clone(codes)
	}
	for kind, c := range in.Defaults {
		p.Defaults[kind] = c
	}
	return p
}

// schemesOf returns the identifier scheme of each currency.
func schemesOf(currencies []string) []string {
	out := make([]string, len(currencies))
	for i, c := range currencies {
		out[i] = emi.SchemeFor(c)
	}
	return out
}

// programFields are a program's settings by the names the audit log and
// the field errors use. Lists compare as sets where order means nothing
// (card types, partners, group codes); currencies keep their order, which
// is the order of the balances.
func programFields(p emi.Program) map[string]any {
	sorted := func(s []string) []string {
		out := append([]string{}, s...)
		slices.Sort(out)
		return out
	}
	m := map[string]any{"name": p.Name, "currencies": append([]string{}, p.Currencies...), "schemes": append([]string{}, p.Schemes...),
		"cards_allowed": p.CardsAllowed, "card_types": sorted(p.CardTypes), "bin_prefix": p.BINPrefix,
		"card_validity_months": p.CardValidityMonths, "aml_required": p.AMLRequired, "overdraft": p.Overdraft,
		"pin_by_sms": p.PINBySMS, "wallet_provisioning": p.WalletProvisioning}
	if p.AllowedPartners == nil {
		m["allowed_partners"] = "all"
	} else {
		m["allowed_partners"] = sorted(p.AllowedPartners)
	}
	for _, kind := range emi.GroupKinds {
		m["groups."+kind] = sorted(p.Groups[kind])
		m["defaults."+kind] = p.Defaults[kind]
	}
	return m
}

// programChanges lists the settings that differ between before and
// after, each as {"from": old, "to": new}; created lists the settings
// after has (every one that is not empty or false), from null.
func programChanges(before, after emi.Program, created bool) map[string]any {
	out := map[string]any{}
	b, a := programFields(before), programFields(after)
	for k, av := range a {
		if created {
			if v := reflect.ValueOf(av); v.IsZero() || v.Kind() == reflect.Slice && v.Len() == 0 {
				continue
			}
			out[k] = map[string]any{"from": nil, "to": av}
			continue
		}
		if bv := b[k]; !reflect.DeepEqual(bv, av) {
			out[k] = map[string]any{"from": bv, "to": av}
		}
	}
	return out
}

// ProgramChangeFlow is a program change that moves risk (an overdraft
// turned on, the AML check for cards turned off): one administrator
// proposes it by saving the program, a second, distinct one approves
// (staff.ControlProgramRisk). It binds to the program's version when
// proposed: any other change to the program voids it.
var ProgramChangeFlow = staff.DeclareFlow(staff.Flow{
	Control:        staff.ControlProgramRisk,
	Asked:          "this program change",
	Changed:        "the program",
	Proposed:       "program.change_proposed",
	Approved:       "program.update",
	Rejected:       "program.change_rejected",
	Withdrawn:      "program.change_withdrawn",
	Voided:         "program.change_voided",
	ReasonOptional: true,
	// The code the back office knew before the lifecycle.
	Codes: staff.RequestCodes{Pending: emi.ErrProgramStale, Closed: emi.ErrProgramStale, Void: emi.ErrProgramStale},
	Href:  func(r staff.Request) string { return "/backoffice/programs#program-" + r.ResourceToken },
})

func programSubject(code string) string { return staff.SubjectOf("program", code) }

// PendingProgramChange is a proposal waiting for a second administrator
// and what the reader may do with it.
type PendingProgramChange struct {
	emi.ProgramChange
	Can staff.RequestCapability
}

// ProgramChanges returns the proposals waiting for a second administrator,
// by program (emi.PermViewAccounts).
func (s *Accounts) ProgramChanges(ctx context.Context) (map[string]PendingProgramChange, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	changes, err := s.store.ProgramChanges(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]PendingProgramChange, len(changes))
	for code, c := range changes {
		r, found, err := s.controls.PendingRequest(ctx, programSubject(code))
		if err != nil {
			return nil, err
		}
		if found && r.ID == c.Request {
			out[code] = PendingProgramChange{ProgramChange: c, Can: s.controls.RequestCapabilities(ctx, r)}
		}
	}
	return out, nil
}

// ApproveProgramChange applies a program change that moves risk, proposed
// by another administrator (ProgramChangeFlow: a distinct person, the
// engine's links included). When the program changed since the proposal,
// the proposal is void (recorded, audited) and emi.ErrProgramStale is
// returned. The settings are checked again as an update would be, audited
// as program.update with both people. seen, when given, is the proposal the
// approver saw: another one waiting now (the first withdrawn and a new one
// proposed on the same version) is refused, never applied unseen.
func (s *Accounts) ApproveProgramChange(ctx context.Context, code string, seen ...string) (emi.Program, error) {
	var cur, out emi.Program
	_, err := s.controls.ApproveRequest(ctx, ProgramChangeFlow, programSubject(code), staff.Approval{ID: first(seen),
		Lock: func(ctx context.Context, _ staff.Request) (string, error) {
			var err error
			if cur, err = s.store.LockProgram(ctx, code); err != nil {
				return "", err
			}
			return staff.TimeRevision(cur.UpdatedAt), nil
		},
		Apply: func(ctx context.Context, r staff.Request) (map[string]any, error) {
			c, err := s.store.ProgramChange(ctx, r.ID)
			if err != nil {
				return nil, err
			}
			var bad kernel.Problems
			if err := s.checkProgram(ctx, &bad, c.Input); err != nil {
				return nil, err
			}
			next, err := s.nextProgram(ctx, &bad, cur, c.Input)
			if err != nil {
				return nil, err
			}
			if len(bad) > 0 {
				return nil, emi.ErrProgramValidation.WithFields(kernel.Dedupe(bad)...)
			}
			changes := programChanges(cur, next, false)
			if err := s.store.UpdateProgram(ctx, next); err != nil {
				return nil, err
			}
			changes["risk"] = c.Risk
			out, err = s.store.Program(ctx, cur.Code)
			return changes, err
		},
	})
	if err != nil {
		return emi.Program{}, err
	}
	return out, nil
}

// RejectProgramChange ends a proposal without applying it: withdrawn by
// its proposer, rejected by another administrator. seen, when given, is
// the proposal the person saw (as for ApproveProgramChange).
func (s *Accounts) RejectProgramChange(ctx context.Context, code string, seen ...string) error {
	_, err := s.controls.DeclineRequest(ctx, ProgramChangeFlow, programSubject(code), staff.Decline{ID: first(seen), Lock: func(ctx context.Context, _ staff.Request) error {
		_, err := s.store.LockProgram(ctx, code)
		return err
	}})
	return err
}

// nextProgram is cur with the settings of in, as UpdateProgram and
// ApproveProgramChange apply them: the currencies (and their schemes)
// change only while no account uses the program (else a field error in
// bad). The caller holds the program's lock.
func (s *Accounts) nextProgram(ctx context.Context, bad *kernel.Problems, cur emi.Program, in emi.ProgramInput) (emi.Program, error) {
	next := ProgramAfter(cur, in)
	if !slices.Equal(cur.Currencies, next.Currencies) {
		used, err := s.store.ProgramsInUse(ctx, cur.Code)
		if err != nil {
			return next, err
		}
		if len(used) > 0 {
			bad.Add("currencies", "cannot change: accounts use this program, and their balances were opened in "+
				strings.Join(cur.Currencies, ", ")+" (create a new program for other currencies)")
		}
		next.Schemes = schemesOf(next.Currencies)
	}
	return next, nil
}

// ProgramAfter is cur with the settings of in (its schemes kept): what a
// proposed change would make of the program, for the page that shows it.
func ProgramAfter(cur emi.Program, in emi.ProgramInput) emi.Program {
	next := programOf(cur.Code, in)
	next.Schemes = cur.Schemes
	next.UpdatedAt = cur.UpdatedAt
	return next
}
