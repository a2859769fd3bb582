package emi

import (
	"maps"
	"slices"
	"time"
)

// ProgramCurrencies are the currencies a program's balances may hold, in
// the order the back office offers them (the balances table's check).
var ProgramCurrencies = []string{"EUR", "BGN", "GBP"}

// ProgramCardTypes are the card types a program may allow.
var ProgramCardTypes = []string{"virtual", "plastic"}

// SchemeFor returns the identifier scheme of a balance in currency: a
// Bulgarian IBAN for EUR and BGN, a UK account number (with its GB IBAN)
// for GBP; "" for a currency emi does not hold.
func SchemeFor(currency string) string {
	switch currency {
	case "EUR", "BGN":
		return SchemeIBANBG
	case "GBP":
		return SchemeUK
	}
	return ""
}

// ProgramInput is what an administrator sets on a program (back office):
// the whole configuration, not a patch. Currencies take their identifier
// schemes from SchemeFor.
type ProgramInput struct {
	// Code names a new program; an edit takes the code of the program it
	// edits and ignores this one.
	Code               string   `json:"code"`
	Name               string   `json:"name" validate:"required,max=200"`
	Currencies         []string `json:"currencies" validate:"dive,oneof=EUR BGN GBP"`
	CardsAllowed       bool     `json:"cards_allowed"`
	CardTypes          []string `json:"card_types" validate:"dive,oneof=virtual plastic"`
	BINPrefix          string   `json:"bin_prefix"`
	CardValidityMonths int      `json:"card_validity_months" validate:"min=1,max=120"`
	AMLRequired        bool     `json:"aml_required"`
	Overdraft          bool     `json:"overdraft"`
	PINBySMS           bool     `json:"pin_by_sms"`
	WalletProvisioning bool     `json:"wallet_provisioning"`
	// AllowedPartners nil: every partner; otherwise the partners (ids)
	// that may use the program, possibly none.
	AllowedPartners []string `json:"allowed_partners" validate:"omitempty,max=200,dive,uuid"`
	// Groups are the card group codes associated with the program, by
	// kind (GroupKinds); Defaults the code a new card gets, by kind.
	Groups   map[string][]string `json:"groups"`
	Defaults map[string]string   `json:"defaults"`
	// Version is the program's UpdatedAt as the editor saw it (edits only).
	Version time.Time `json:"version"`
}

// Input returns the program's settings as an edit starts from them: a
// copy, so changing it leaves p as it is.
func (p Program) Input() ProgramInput {
	in := ProgramInput{Code: p.Code, Name: p.Name, Currencies: slices.Clone(p.Currencies), CardsAllowed: p.CardsAllowed,
		CardTypes: slices.Clone(p.CardTypes), BINPrefix: p.BINPrefix, CardValidityMonths: p.CardValidityMonths,
		AMLRequired: p.AMLRequired, Overdraft: p.Overdraft, PINBySMS: p.PINBySMS, WalletProvisioning: p.WalletProvisioning,
		AllowedPartners: slices.Clone(p.AllowedPartners),
		Groups:          make(map[string][]string, len(p.Groups)), Defaults: maps.Clone(p.Defaults), Version: p.UpdatedAt}
	for kind, codes := range p.Groups {
		in.Groups[kind] = slices.Clone(codes)
	}
	if in.Defaults == nil {
		in.Defaults = map[string]string{}
	}
	return in
}

// Program management errors (back office). Like the other back-office
// errors they never reach the partner API.
var (
	// ErrProgramValidation: the program's settings break a rule; Fields
	// says which (JSON names: "bin_prefix", "groups.limits",
	// "defaults.limits", "currencies").
	ErrProgramValidation = def(20050, "portal.programs.validation", KindInvalid)
	// ErrProgramStale: the program changed since the editor loaded it.
	ErrProgramStale = def(20051, "portal.programs.stale", KindConflict)
)
