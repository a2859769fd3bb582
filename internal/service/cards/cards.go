package cards

import (
	"context"
	"crypto/rand"
	"errors"
	"math/big"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/people"
)

// CardStore keeps cards, their sealed data, history, wallet tokens and the
// text messages sent to cardholders.
type CardStore interface {
	// InsertCard stores a new card with its sealed data. inserted is
	// false when the PAN lookup digest is taken (draw another PAN); the
	// one-card-per-account index answers emi.ErrActiveCardExists.
	InsertCard(ctx context.Context, c emi.Card, s SealedCard) (inserted bool, err error)
	// PANTaken reports whether a card has one of these lookup digests.
	PANTaken(ctx context.Context, lookups [][]byte) (bool, error)
	// Card returns a card of the partner ("" partnerID: any); forUpdate
	// locks it. Returns emi.ErrCardNotFound.
	Card(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Card, error)
	// Sealed returns a card's sealed data (CVV and PIN nil once purged).
	Sealed(ctx context.Context, token string) (SealedCard, error)
	// UpdateCard writes a card's state (everything but its sealed data and
	// identity); a terminated card loses its CVV and PIN.
	UpdateCard(ctx context.Context, c emi.Card) error
	// SetPINErrors writes the card's wrong-PIN counter alone (a payment's
	// PIN check, on the locked card).
	SetPINErrors(ctx context.Context, card string, n int, at time.Time) error
	// ReplaceCVV stores a new sealed CVV (conversion).
	ReplaceCVV(ctx context.Context, token string, cvv []byte) error
	// OpenCardOfAccount returns the non-terminated card of an account, if
	// any, locked.
	OpenCardOfAccount(ctx context.Context, account string) (emi.Card, bool, error)
	InsertCardChange(ctx context.Context, card string, c emi.CardChange) error
	// LastChange returns the card's latest history entry among changes
	// and whether a staff member made it.
	LastChange(ctx context.Context, card string, changes []string) (CardChangeSeen, error)
	// LastStaffChange returns when a staff member last made one of
	// changes to the card (zero when never).
	LastStaffChange(ctx context.Context, card string, changes []string) (time.Time, error)
	CardHistory(ctx context.Context, card string) ([]emi.CardChange, error)
	Cards(ctx context.Context, f emi.CardFilter) ([]emi.Card, int64, error)
	// SearchCards finds cards for customer service (see Cards.Search).
	SearchCards(ctx context.Context, q CardQuery) ([]emi.Card, error)
	InsertWalletToken(ctx context.Context, w emi.WalletToken) error
	InsertSMS(ctx context.Context, m emi.SMSMessage) error
	SMSMessages(ctx context.Context, card string, limit int) ([]emi.SMSMessage, error)
	// StaffNames returns the names of staff members by id.
	StaffNames(ctx context.Context, ids []string) (map[string]string, error)
	// UserPhone returns a user's phone number ("" when none).
	UserPhone(ctx context.Context, user string) (string, error)
}

// SealedCard is a card's sealed data. CVV and PIN are nil once purged.
type SealedCard struct {
	PAN       []byte
	PANLookup []byte
	CVV       []byte
	PIN       []byte
}

// CardQuery is a customer-service card search; one way is used.
type CardQuery struct {
	Token      string
	PANLookups [][]byte
	Last4      string
	// Owner is a name or e-mail of the owner (alone, or with Last4).
	Owner string
	// Phone is Owner as a phone number (+ and digits; used when it has
	// at least 6 digits).
	Phone string
	IBAN  string
	Limit int
}

// Vault seals card data and computes lookup digests (internal/seal).
type Vault interface {
	kernel.Sealer
	Lookup(context string, value []byte) []byte
	LookupAll(context string, value []byte) [][]byte
	NeedsRekey(sealed []byte) bool
	Rekey(sealed []byte, context string) ([]byte, error)
}

// SMSProvider sends a text message. Secrets lists the parts of text that
// must never be stored or shown (the PIN); the returned reference is the
// provider's message id.
type SMSProvider interface {
	Name() string
	Send(ctx context.Context, to, text string) (ref string, err error)
}

// CardAccounts is what cards need from accounts and owners.
type CardAccounts interface {
	Program(ctx context.Context, code string) (emi.Program, error)
	Account(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Account, error)
	MerchantForAccounts(ctx context.Context, partnerID, merchant string) (found, allowed bool, err error)
	ActiveUser(ctx context.Context, partnerID, user string) (bool, error)
}

// CardUsers reads users for AML matching (the AML check of a user's card
// must be about that user).
type CardUsers interface {
	User(ctx context.Context, partnerID, token string) (emi.User, error)
	// UserForUpdate is User with the row locked (active users only): a
	// card operation and a change of the holder's identity are serialised.
	UserForUpdate(ctx context.Context, partnerID, token string) (emi.User, error)
}

// CardAML is the AML service as cards need it (*AML implements it).
type CardAML interface {
	people.AMLCheckReader
	UserScreening(ctx context.Context, user string) (emi.UserScreening, error)
	MerchantScreening(ctx context.Context, merchant string) (emi.UserScreening, error)
}

// CardChangeSeen is a card's latest history entry of some kinds.
type CardChangeSeen struct {
	Found   bool
	At      time.Time
	ByStaff bool
}

// CardsConfig holds the card service's limits.
type CardsConfig struct {
	// PINSMSPerDay caps card_send_pin per card in 24 hours (0: 5).
	PINSMSPerDay int
	// RevealQuota caps each staff member's card-number reveals and
	// full-PAN searches per RevealWindow (0: 10 an hour; EMI_REVEAL_QUOTA).
	RevealQuota  int
	RevealWindow time.Duration
	// Limits decides the reveal quota atomically; without it every reveal
	// and full-PAN search is refused (fail closed).
	Limits kernel.RateLimiter
}

// Cards issues and controls cards (seed "Card", contract §6, §7).
type Cards struct {
	tx       kernel.TxRunner
	store    CardStore
	accounts CardAccounts
	aml      CardAML
	users    CardUsers
	vault    Vault
	sms      SMSProvider
	events   *kernel.Events
	audit    *kernel.Auditor
	validate interface {
		Struct(any, *emi.Error) error
	}
	names people.NameNormalizer
	cfg   CardsConfig
	now   kernel.Clock
}

// CardsDeps is what the card service needs.
type CardsDeps struct {
	Tx    kernel.TxRunner
	Store CardStore
	// Accounts reads the card's account (the account store: the accounts
	// service depends on this one for its card cascade, not the reverse).
	Accounts CardAccounts
	AML      CardAML
	Users    CardUsers
	// Vault seals PANs, CVVs and PINs.
	Vault Vault
	// SMS sends PINs.
	SMS      SMSProvider
	Events   *kernel.Events
	Audit    *kernel.Auditor
	Validate kernel.StructValidator
	// Names normalizes a cardholder's name for screening.
	Names  people.NameNormalizer
	Config CardsConfig
	Now    kernel.Clock
}

// NewCards returns the card service.
func NewCards(d CardsDeps) *Cards {
	kernel.MustHave("Cards", d)
	cfg := d.Config
	if cfg.PINSMSPerDay == 0 {
		cfg.PINSMSPerDay = 5
	}
	if cfg.RevealQuota == 0 {
		cfg.RevealQuota = DefaultRevealQuota
	}
	if cfg.RevealWindow == 0 {
		cfg.RevealWindow = time.Hour
	}
	return &Cards{tx: d.Tx, store: d.Store, accounts: d.Accounts, aml: d.AML, users: d.Users, vault: d.Vault, sms: d.SMS,
		events: d.Events, audit: d.Audit, validate: d.Validate, names: d.Names, cfg: cfg, now: d.Now}
}

// DefaultRevealQuota is how many card numbers one staff member may reveal
// (or look up by full PAN) per hour unless EMI_REVEAL_QUOTA says otherwise.
const DefaultRevealQuota = 10

// Seal contexts: the card token and the column are the associated data,
// so a value copied into another row or column does not open.
func PANContext(card string) string { return "cards.pan:" + card }

// CVVContext and PINContext bind a card's sealed CVV2 and PIN to its row.
func CVVContext(card string) string { return "cards.cvv:" + card }
func PINContext(card string) string { return "cards.pin:" + card }

// PANLookupContext is the same for every card: the lookup finds a PAN
// whatever row holds it.
const PANLookupContext = "cards.pan"

// Create issues a card (card_create): for a customer account, or
// non-personalized from a program, optionally owned by a merchant or user
// at once.
func (s *Cards) Create(ctx context.Context, in emi.CardCreate) (emi.Card, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return emi.Card{}, err
	}
	in.Program, in.Alias = strings.TrimSpace(in.Program), strings.TrimSpace(in.Alias)
	var bad kernel.Problems
	if err := bad.AddErr("", s.validate.Struct(in, emi.ErrCardValidation)); err != nil {
		return emi.Card{}, err
	}
	switch {
	case in.Account == "" && in.Program == "":
		bad.Add("account", "give account for a customer card, or program for a non-personalized card")
	case in.Account != "" && in.Merchant != "":
		bad.Add("merchant", "only for a non-personalized card (without account)")
	case in.Account != "" && in.User != "":
		bad.Add("user", "only for a non-personalized card (without account)")
	case in.Merchant != "" && in.User != "":
		bad.Add("user", "give one owner only: merchant or user, not both")
	}
	if len(bad) > 0 {
		return emi.Card{}, emi.ErrCardValidation.WithFields(bad...)
	}
	if in.Type == emi.CardPlastic && in.Delivery == nil {
		return emi.Card{}, emi.ErrDeliveryRequired.WithDetail("a plastic card needs delivery_details")
	}
	now := s.now.At(ctx).UTC()
	c := emi.Card{Token: kernel.NewToken(), PartnerID: p.PartnerID, Type: in.Type, Status: emi.CardActive,
		Activated:  in.Type == emi.CardVirtual || (in.Active != nil && *in.Active),
		EmbossName: in.EmbossName, EmbossNameLine4: in.EmbossNameLine4, Fulfil1: in.Fulfil1, Fulfil2: in.Fulfil2,
		ThermalLine1: in.ThermalLine1, ThermalLine2: in.ThermalLine2, FirstName: in.FirstName, LastName: in.LastName,
		Alias: in.Alias, URL: in.URL, Delivery: normalizeDelivery(in.Delivery), CreatedAt: now, UpdatedAt: now}
	if c.Activated {
		c.ActivatedAt = &now
	}
	if in.ThreeDS != nil {
		c.ThreeDS = emi.ThreeDS{OTPSMS: normalizePhone(in.ThreeDS.OTPSMS), Biometric: in.ThreeDS.Biometric}
	}
	pin := in.PIN
	if pin == "" {
		pin = secretDigits(4)
	}
	var created emi.Card
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		var prog emi.Program
		if in.Account != "" {
			acc, err := s.usableAccount(ctx, p.PartnerID, in.Account)
			if err != nil {
				return err
			}
			if in.Program != "" && in.Program != acc.Program {
				return emi.ErrCardProgramMismatch.WithDetail("the account is of program %s, not %s", acc.Program, in.Program)
			}
			if prog, err = s.accounts.Program(ctx, acc.Program); err != nil {
				return err
			}
			if open, ok, err := s.store.OpenCardOfAccount(ctx, acc.Token); err != nil {
				return err
			} else if ok {
				return emi.ErrActiveCardExists.WithDetail("card %s is not terminated", open.Token)
			}
			c.Account, c.Merchant, c.User, c.AccountStatus = acc.Token, acc.Merchant, acc.User, acc.Status
		} else {
			prog, err = s.accounts.Program(ctx, in.Program)
			if errors.Is(err, emi.ErrProgramNotFound) || (err == nil && !prog.UsableBy(p.PartnerID)) {
				return emi.ErrCardProgramMismatch.WithDetail("program %s unknown", in.Program)
			}
			if err != nil {
				return err
			}
			if err := s.checkOwner(ctx, p.PartnerID, in.Merchant, in.User); err != nil {
				return err
			}
			c.Merchant, c.User = in.Merchant, in.User
		}
		if err := programAllows(prog, c.Type); err != nil {
			return err
		}
		c.Program = prog.Code
		// A program that requires AML needs a clear check at issue, except
		// for a non-personalized plastic card issued without an owner and
		// not activated: its holder is known only when it is activated,
		// and card_activate asks for the check then (seed: "aml is
		// conditional for some non-personalized cards").
		deferred := in.Account == "" && c.User == "" && c.Merchant == "" && c.Type == emi.CardPlastic && !c.Activated
		holder, err := s.holder(ctx, p.PartnerID, c.User)
		if err != nil {
			return err
		}
		if err := s.merchantHold(ctx, c.Merchant); err != nil {
			return err
		}
		if (prog.AMLRequired && !deferred) || in.AML != "" {
			if err := s.checkAML(ctx, p.PartnerID, in.AML, holder); err != nil {
				return err
			}
			c.AML = in.AML
		}
		c.Groups = map[string]string{}
		for kind, code := range prog.Defaults {
			c.Groups[kind] = code
		}
		c.ExpiryMonth, c.ExpiryYear = expiryFrom(now, prog.CardValidityMonths)
		if err := s.issue(ctx, &c, prog.BINPrefix, pin); err != nil {
			return err
		}
		if err := s.store.InsertCardChange(ctx, c.Token, emi.CardChange{Change: "issued", To: c.Status, Actor: p.ActorID, At: now}); err != nil {
			return err
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "card.create", ResourceType: "card", ResourceToken: c.Token,
			Changes: map[string]any{"program": c.Program, "account": c.Account, "merchant": c.Merchant, "user": c.User,
				"type": c.Type, "activated": c.Activated, "masked": c.MaskedPAN(), "three_ds": c.ThreeDS.Enrolled(),
				"chosen_code": in.PIN != ""}}); err != nil {
			return err
		}
		created, err = s.store.Card(ctx, p.PartnerID, c.Token, false)
		return err
	})
	return created, err
}

// issue draws a PAN from the program's BIN range that no card has, and
// stores the card with its sealed PAN, CVV2 and PIN.
func (s *Cards) issue(ctx context.Context, c *emi.Card, bin, pin string) error {
	if bin == "" {
		return emi.ErrCardProgramMismatch.WithDetail("program %s has no BIN range", c.Program)
	}
	for attempt := 0; attempt < 16; attempt++ {
		pan := NewPAN(bin)
		taken, err := s.store.PANTaken(ctx, s.vault.LookupAll(PANLookupContext, []byte(pan)))
		if err != nil {
			return err
		}
		if taken {
			continue
		}
		sealed, err := s.seal(c.Token, pan, secretDigits(3), pin)
		if err != nil {
			return err
		}
		c.First6, c.Last4 = pan[:6], pan[len(pan)-4:]
		ok, err := s.store.InsertCard(ctx, *c, sealed)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return emi.Internal(errors.New("no free PAN in 16 draws: the BIN range is nearly full"))
}

func (s *Cards) seal(card, pan, cvv, pin string) (SealedCard, error) {
	var out SealedCard
	var err error
	if out.PAN, err = s.vault.Seal([]byte(pan), PANContext(card)); err != nil {
		return out, emi.Internal(err)
	}
	if out.CVV, err = s.vault.Seal([]byte(cvv), CVVContext(card)); err != nil {
		return out, emi.Internal(err)
	}
	if out.PIN, err = s.vault.Seal([]byte(pin), PINContext(card)); err != nil {
		return out, emi.Internal(err)
	}
	out.PANLookup = s.vault.Lookup(PANLookupContext, []byte(pan))
	return out, nil
}

// usableAccount returns an account of the partner that may hold a card:
// active, not virtual, with exactly one balance (else 12003), locked.
func (s *Cards) usableAccount(ctx context.Context, partnerID, token string) (emi.Account, error) {
	acc, err := s.accounts.Account(ctx, partnerID, token, true)
	if errors.Is(err, emi.ErrAccountNotFound) {
		return acc, emi.ErrCardAccountUnusable.WithDetail("account unknown")
	}
	if err != nil {
		return acc, err
	}
	switch {
	case acc.Status != emi.AccountActive:
		return acc, emi.ErrCardAccountUnusable.WithDetail("account is %s", acc.Status)
	case acc.Virtual:
		return acc, emi.ErrCardAccountUnusable.WithDetail("account is virtual")
	case len(acc.Balances) != 1:
		return acc, emi.ErrCardAccountUnusable.WithDetail("account has %d balances; a card needs exactly one", len(acc.Balances))
	}
	return acc, nil
}

func (s *Cards) checkOwner(ctx context.Context, partnerID, merchant, user string) error {
	if merchant != "" {
		found, allowed, err := s.accounts.MerchantForAccounts(ctx, partnerID, merchant)
		if err != nil {
			return err
		}
		if !found || !allowed {
			return emi.ErrCardValidation.Field("merchant", "is not a merchant of yours onboarded for card-issuing or account-opening")
		}
	}
	if user != "" {
		ok, err := s.accounts.ActiveUser(ctx, partnerID, user)
		if err != nil {
			return err
		}
		if !ok {
			return emi.ErrCardValidation.Field("user", "is not an active user of yours")
		}
	}
	return nil
}

// cardHolder is a card's holder when it is a user, as the AML control
// sees them.
type cardHolder struct {
	user      emi.User
	screening emi.UserScreening
}

// holder returns the user who holds (or is about to hold) a card, locked so
// that a concurrent change of their identity waits for the card operation
// or is seen by it, with their AML state; nil for a card of a merchant or
// without an owner. A user with an AML check waiting for a compliance
// decision (a hit raised by a re-screening or by a change of identity) or
// confirmed a true match gets no card: 12009 (a card would let them spend
// before compliance decides).
func (s *Cards) holder(ctx context.Context, partnerID, user string) (*cardHolder, error) {
	if user == "" {
		return nil, nil
	}
	if s.users == nil || s.aml == nil {
		// A control never fails open (as Controls.Approve).
		return nil, emi.Internal(errors.New("cards: no user store or AML service for the holder's check"))
	}
	u, err := s.users.UserForUpdate(ctx, partnerID, user)
	if err != nil {
		return nil, err
	}
	st, err := s.aml.UserScreening(ctx, u.Token)
	if err != nil {
		return nil, err
	}
	switch {
	case st.Confirmed > 0:
		return nil, emi.ErrCardAMLRequired.WithDetail("the card's user is a confirmed sanctions match")
	case st.Open > 0:
		return nil, emi.ErrCardAMLRequired.WithDetail("the card's user has a sanctions screening hit waiting for a compliance decision")
	}
	return &cardHolder{user: u, screening: st}, nil
}

// checkAML: the caller's own AML check, clear or cleared (every hit
// decided a false positive), and, when the card has a user as holder,
// about that user (same normalised names; same birthday when both have
// one) and made since the user's last change of name, birthday or
// nationality (else 12009).
func (s *Cards) checkAML(ctx context.Context, partnerID, token string, holder *cardHolder) error {
	if token == "" {
		return emi.ErrCardAMLRequired.WithDetail("the program requires a clear AML check (aml)")
	}
	c, err := s.aml.AMLCheck(ctx, partnerID, token)
	if errors.Is(err, emi.ErrAMLCheckNotFound) {
		return emi.ErrCardAMLRequired.WithDetail("aml is not an AML check of yours")
	}
	if err != nil {
		return err
	}
	if !c.Status.Usable() {
		return emi.ErrCardAMLRequired.WithDetail("aml must be a clear or cleared AML check; this one is %s", c.Status)
	}
	if holder == nil {
		return nil
	}
	u := holder.user
	if people.NormalizedName(s.names, u.FirstName+" "+u.LastName) != people.NormalizedName(s.names, c.FirstName+" "+c.LastName) ||
		(u.Birthday != "" && c.Birthday != "" && u.Birthday != c.Birthday) {
		return emi.ErrCardAMLRequired.WithDetail("aml is an AML check of another person than the card's user")
	}
	if since := holder.screening.IdentitySince; since != nil && c.CreatedAt.Before(*since) {
		return emi.ErrCardAMLRequired.WithDetail("aml predates the last change of the user's name, birthday or nationality; send a check made since")
	}
	return nil
}

func programAllows(p emi.Program, typ string) error {
	if !p.CardsAllowed {
		return emi.ErrCardProgramMismatch.WithDetail("program %s issues no cards", p.Code)
	}
	if !slices.Contains(p.CardTypes, typ) {
		return emi.ErrCardProgramMismatch.WithDetail("program %s issues no %s cards", p.Code, typ)
	}
	return nil
}

// expiryFrom is the card's expiry: the end of the month validity months
// after now.
func expiryFrom(now time.Time, months int) (int, int) {
	t := time.Date(now.Year(), now.Month()+time.Month(months), 1, 0, 0, 0, 0, time.UTC)
	return int(t.Month()), t.Year()
}

// NewPAN returns a random 16-digit, Luhn-valid PAN starting with bin.
// Random, not sequential: sequential numbers let a fraudster who holds one
// card guess its neighbours.
func NewPAN(bin string) string {
	b := []byte(bin + secretDigits(15-len(bin)))
	return string(b) + string(rune('0'+LuhnCheckDigit(string(b))))
}

// LuhnCheckDigit returns the digit that makes payload+digit Luhn-valid.
func LuhnCheckDigit(payload string) int {
	sum := 0
	double := true
	for i := len(payload) - 1; i >= 0; i-- {
		d := int(payload[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return (10 - sum%10) % 10
}

// LuhnValid reports whether a digit string passes the Luhn check.
func LuhnValid(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return LuhnCheckDigit(s[:len(s)-1]) == int(s[len(s)-1]-'0')
}

// MaskPAN keeps the first six and last four digits of a PAN and masks the
// rest, keeping its length (PCI DSS 3.4.1).
func MaskPAN(pan string) string {
	if len(pan) < 11 {
		return strings.Repeat("*", len(pan))
	}
	return pan[:6] + strings.Repeat("*", len(pan)-10) + pan[len(pan)-4:]
}

// secretDigits returns n uniformly random decimal digits (crypto/rand).
func secretDigits(n int) string {
	b := make([]byte, n)
	ten := big.NewInt(10)
	for i := range b {
		d, err := rand.Int(rand.Reader, ten)
		if err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		b[i] = byte('0' + d.Int64())
	}
	return string(b)
}

// normalizePhone drops the spaces, dashes, dots and brackets the phone
// rule accepts, leaving + and digits.
func normalizePhone(p string) string {
	return strings.Map(func(r rune) rune {
		if r == '+' || (r >= '0' && r <= '9') {
			return r
		}
		return -1
	}, p)
}

func normalizeDelivery(d *emi.Delivery) *emi.Delivery {
	if d == nil {
		return nil
	}
	out := *d
	out.Phone = normalizePhone(d.Phone)
	if out.Method == "" {
		out.Method = "standard"
	}
	return &out
}
