package cards

import (
	"context"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
)

// Customer-service views of cards. The changes themselves go through the
// same methods as the API (SetStatus, Terminate, ...), which take a staff
// principal and a reason.

// Search finds cards for customer service (emi.PermViewAccounts). q is
// read as, in this order:
//   - a card token; failing that, a person's or a merchant's token: the
//     cards of that owner, newest first, as their page lists them (at
//     most ownerCardsLimit, the page's own bound);
//   - a full PAN (13 to 19 digits, spaces and dashes allowed): refused
//     here (emi.ErrCardValidation on "q"): a search that answers whether
//     a card has a number is a reveal, so it is SearchPAN's, for staff who
//     may reveal, counted against their quota and audited;
//   - an IBAN of the card's account;
//   - "1234 name-or-email": the last four digits with the owner's name or
//     e-mail; "1234" alone lists every card ending so;
//   - an owner's e-mail or phone number, or a part of a person's or
//     merchant's name (3 characters or more; a name search lists the
//     person's cards, since customer service is asked by name).
//
// Something shaped like a token (36 characters, dashes at the token's
// places) that is not one is refused (emi.ErrCardValidation on "q"): a
// mistyped token is no name, and an empty list would not say why.
func (s *Cards) Search(ctx context.Context, q string) ([]emi.Card, error) {
	if err := accounts.View.Require(ctx); err != nil {
		return nil, err
	}
	q = strings.TrimSpace(q)
	if len(q) > 200 {
		return nil, emi.ErrCardValidation.Field("q", "must be at most 200 characters")
	}
	if q == "" {
		return []emi.Card{}, nil
	}
	digits := stripSeparators(q)
	_, isPAN := PANQuery(q)
	switch {
	case kernel.ValidToken(strings.ToLower(q)):
		return s.searchToken(ctx, strings.ToLower(q))
	case tokenShaped(q):
		return nil, emi.ErrCardValidation.Field("q", "is not a token: a token is 32 hexadecimal digits (0-9, a-f) in groups of 8, 4, 4, 4 and 12 joined by dashes")
	case isPAN:
		return nil, emi.ErrCardValidation.Field("q", "a full card number is looked up with the card-number search, by staff who may reveal card numbers")
	case len(digits) >= 15 && len(digits) <= 34 && looksLikeIBAN(digits):
		return s.store.SearchCards(ctx, CardQuery{IBAN: strings.ToUpper(digits)})
	case len(q) >= 4 && kernel.AllDigits(q[:4]) && (len(q) == 4 || q[4] == ' '):
		return s.store.SearchCards(ctx, CardQuery{Last4: q[:4], Owner: strings.TrimSpace(q[4:])})
	}
	return s.store.SearchCards(ctx, CardQuery{Owner: q, Phone: normalizePhone(q)})
}

// ownerCardsLimit is the most cards listed for one owner (ForOwner, and
// Search by an owner's token).
const ownerCardsLimit = 200

// searchToken finds the card with token tok or, when no card has it, the
// cards of the person or merchant with token tok (a token is never both:
// tokens are random UUIDs). No card, person or merchant: an empty list.
func (s *Cards) searchToken(ctx context.Context, tok string) ([]emi.Card, error) {
	list, err := s.store.SearchCards(ctx, CardQuery{Token: tok})
	if err != nil || len(list) > 0 {
		return list, err
	}
	for _, f := range []emi.CardFilter{{User: tok}, {Merchant: tok}} {
		f.Page, f.Limit = 1, ownerCardsLimit
		if list, _, err = s.store.Cards(ctx, f); err != nil || len(list) > 0 {
			return list, err
		}
	}
	return list, nil
}

// tokenShaped reports whether q has a token's length and dashes.
func tokenShaped(q string) bool {
	if len(q) != 36 {
		return false
	}
	for _, i := range []int{8, 13, 18, 23} {
		if q[i] != '-' {
			return false
		}
	}
	return true
}

// SearchPAN finds the card with a full card number (13 to 19 digits, spaces
// and dashes allowed) through the keyed lookup digest, never by decrypting.
// Telling whether a card has a number is a reveal: with the BIN and the
// last four digits about a thousand Luhn-valid candidates remain, so an
// unlimited search recovers a PAN in seconds. So it needs
// emi.PermRevealCardData (denied attempts audited), counts against the
// staff member's reveal quota (emi.ErrRevealQuota once it is reached) and
// writes a "card.reveal" audit row for every answered search, naming the
// card found (or none), never the number. The back office calls it only
// from a POST, so the number stays out of URLs.
func (s *Cards) SearchPAN(ctx context.Context, q string) ([]emi.Card, error) {
	fields := []string{"pan_search"}
	if err := ActionOp(emi.CardReveal).Require(ctx); err != nil {
		s.denyReveal(ctx, "", fields, "role may not search by card number")
		return nil, err
	}
	pan, ok := PANQuery(q)
	if !ok {
		return nil, emi.ErrCardValidation.Field("q", "must be a full card number: 13 to 19 digits")
	}
	p, _ := emi.PrincipalFrom(ctx)
	if err := s.takeReveal(ctx, p.ActorID, "", fields); err != nil {
		return nil, err
	}
	list, err := s.store.SearchCards(ctx, CardQuery{PANLookups: s.vault.LookupAll(PANLookupContext, []byte(pan))})
	if err != nil {
		return nil, err
	}
	found := make([]string, len(list))
	for i, c := range list {
		found[i] = c.Token
	}
	e := emi.AuditEntry{Action: "card.reveal", ResourceType: "card", Changes: map[string]any{"fields": fields, "found": found}}
	if len(list) == 1 {
		e.ResourceToken, e.PartnerID = list[0].Token, list[0].PartnerID
	}
	if err := s.audit.Record(ctx, e); err != nil {
		return nil, err
	}
	return list, nil
}

// stripSeparators drops the spaces and dashes people type inside card
// numbers and IBANs.
func stripSeparators(q string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return r
	}, q)
}

// PANQuery reports whether q reads as a full card number (13 to 19 digits
// once spaces and dashes are dropped) and returns its digits. The card
// search looks such a query up by its keyed digest; the back office never
// shows it back unmasked.
func PANQuery(q string) (string, bool) {
	d := stripSeparators(strings.TrimSpace(q))
	return d, len(d) >= 13 && len(d) <= 19 && kernel.AllDigits(d)
}

func isLetter(b byte) bool { return (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') }

// looksLikeIBAN reports whether s has an IBAN's shape: two letters, two
// check digits, then letters and digits only (so an e-mail address that
// starts with two letters is not taken for one).
func looksLikeIBAN(s string) bool {
	if len(s) < 4 || !isLetter(s[0]) || !isLetter(s[1]) || !kernel.AllDigits(s[2:4]) {
		return false
	}
	for i := 4; i < len(s); i++ {
		if !isLetter(s[i]) && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

// ForOwner lists the cards of a user, a merchant or an account
// (emi.PermViewAccounts).
func (s *Cards) ForOwner(ctx context.Context, user, merchant, account string) ([]emi.Card, error) {
	if err := accounts.View.Require(ctx); err != nil {
		return nil, err
	}
	items, _, err := s.store.Cards(ctx, emi.CardFilter{User: user, Merchant: merchant, Account: account, Page: 1, Limit: ownerCardsLimit})
	return items, err
}

// CardView is a card as customer service sees it.
type CardView struct {
	emi.Card
	Program emi.Program
	History []emi.CardChange
	SMS     []emi.SMSMessage
	// Reveals are the audit rows of every reveal of the card's data
	// (values never included), newest first.
	Reveals []emi.AuditEntry
	// Audit is the card's whole audit trail, newest first.
	Audit []emi.AuditEntry
	// StaffNames names the staff members of the reveals and the audit
	// trail (customer service may not list staff).
	StaffNames map[string]string
}

// Get returns a card with its program, history, texts and audit trail
// (emi.PermViewAccounts; the audit needs no extra permission here because
// customer service must see who revealed the card).
func (s *Cards) Get(ctx context.Context, token string) (CardView, error) {
	if err := accounts.View.Require(ctx); err != nil {
		return CardView{}, err
	}
	c, err := s.store.Card(ctx, "", token, false)
	if err != nil {
		return CardView{}, err
	}
	v := CardView{Card: c}
	if v.Program, err = s.accounts.Program(ctx, c.Program); err != nil {
		return v, err
	}
	if v.History, err = s.store.CardHistory(ctx, c.Token); err != nil {
		return v, err
	}
	if v.SMS, err = s.store.SMSMessages(ctx, c.Token, 50); err != nil {
		return v, err
	}
	if v.Audit, err = s.audit.Trail(ctx, emi.AuditFilter{ResourceType: "card", ResourceToken: c.Token, Limit: 200}); err != nil {
		return v, err
	}
	var staff []string
	for _, e := range v.Audit {
		if e.Action == "card.reveal" {
			v.Reveals = append(v.Reveals, e)
		}
		if e.ActorType == emi.ActorStaff {
			staff = append(staff, e.ActorID)
		}
	}
	v.StaffNames, err = s.store.StaffNames(ctx, staff)
	return v, err
}

// Outbox lists the latest texts sent to cardholders, PINs masked
// (emi.PermViewAccounts): the sandbox SMS outbox.
func (s *Cards) Outbox(ctx context.Context) ([]emi.SMSMessage, error) {
	if err := accounts.View.Require(ctx); err != nil {
		return nil, err
	}
	return s.store.SMSMessages(ctx, "", 200)
}
