package cards

import (
	"context"
	"crypto/subtle"
	"errors"
	"strconv"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
)

// AuthorizationStore keeps card authorizations (sandbox card payments).
type AuthorizationStore interface {
	// CardBalance returns the balance a card's account pays from (its
	// first balance; a virtual account's main balance). found is false
	// for an unknown account.
	CardBalance(ctx context.Context, account string) (party accounts.Party, found bool, err error)
	InsertAuthorization(ctx context.Context, a emi.Authorization) error
	// Authorization returns an authorization of the partner ("" partnerID:
	// any); forUpdate locks it. Returns emi.ErrAuthorizationNotFound.
	Authorization(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Authorization, error)
	// SettleAuthorization moves an authorization to status (cleared,
	// released, expired); the caller holds its row lock and saw it
	// approved.
	SettleAuthorization(ctx context.Context, token, status string, cleared, txn int64, at time.Time) error
	// SpentSince sums what the card's authorizations since t spent: every
	// channel, and ATM withdrawals alone.
	SpentSince(ctx context.Context, card string, t time.Time) (all, atm int64, err error)
	// CardAuthorizations lists a card's authorizations, newest first (a
	// page of f, after its cursor), with the number of all of them.
	CardAuthorizations(ctx context.Context, card string, f emi.AuthorizationFilter) ([]emi.Authorization, int64, error)
	// ExpiredHolds returns up to limit approved authorizations whose hold
	// expired at now: partnerID's, or ("") those of every partner that
	// does not run on a test clock.
	ExpiredHolds(ctx context.Context, partnerID string, now time.Time, limit int) ([]string, error)
	// NextHoldExpiry returns the earliest deadline, at or before until, of
	// partnerID's approved holds (false when none).
	NextHoldExpiry(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error)
	// HolderOnHold reports whether the account's holder (user or
	// onboarded merchant) has an AML check waiting for compliance or
	// confirmed: the compliance hold (TransferStore.HolderOnHold).
	HolderOnHold(ctx context.Context, account string) (bool, error)
}

// MaxPINErrors is the number of wrong PINs in a row after which PIN use is
// blocked until card_reset_pin.
const MaxPINErrors = 3

// Authorizations decides card payments as a card processor would, holds
// the money of approvals and settles them (sandbox_card_authorize,
// sandbox_authorization_clear, sandbox_authorization_reverse and the back
// office's payment simulator; the hold expiry runs in the maintenance job).
//
// A decision is never an error: approved or declined, it is recorded with
// its reason code (emi.Reason*) and answered. Errors are for requests that
// cannot be decided at all: malformed input (12001) or a card that is not
// the caller's (12002).
type Authorizations struct {
	tx      kernel.TxRunner
	store   AuthorizationStore
	cards   *Cards
	ledger  *accounts.Ledger
	events  *kernel.Events
	audit   *kernel.Auditor
	monitor *monitoring.Monitor
	now     kernel.Clock
}

// AuthorizationsDeps is what Authorizations needs; NewAuthorizations checks that none is nil.
type AuthorizationsDeps struct {
	Tx     kernel.TxRunner
	Store  AuthorizationStore
	Cards  *Cards
	Ledger *accounts.Ledger
	Events *kernel.Events
	Audit  *kernel.Auditor
	// Monitor records every authorization on an account, approved or
	// declined, for transaction monitoring.
	Monitor *monitoring.Monitor
	Now     kernel.Clock
}

// NewAuthorizations returns the card authorization service.
func NewAuthorizations(d AuthorizationsDeps) *Authorizations {
	kernel.MustHave("Authorizations", d)
	return &Authorizations{tx: d.Tx, store: d.Store, cards: d.Cards, ledger: d.Ledger, events: d.Events, audit: d.Audit,
		monitor: d.Monitor, now: d.Now}
}

// authorizationEvents maps an authorization's end status to its event.
var authorizationEvents = map[string]emi.EventType{emi.AuthCleared: emi.EventAuthorizationCleared,
	emi.AuthReleased: emi.EventAuthorizationReversed, emi.AuthExpired: emi.EventAuthorizationExpired}

// emit writes an authorization's event in the transaction of its change.
func (s *Authorizations) emit(ctx context.Context, typ emi.EventType, au emi.Authorization) error {
	data := map[string]any{"card": au.Card, "account": au.Account, "status": au.Status, "decision": au.Decision,
		"reason_code": au.ReasonCode, "amount": emi.FormatMinor(au.Amount), "currency": au.Currency, "channel": au.Channel,
		"mcc": au.MCC, "merchant_name": au.MerchantName, "merchant_country": au.MerchantCountry,
		"held": emi.FormatMinor(au.HoldAmount)}
	if au.Status == emi.AuthCleared {
		data["cleared"] = emi.FormatMinor(au.ClearedAmount)
	}
	_, err := s.events.Emit(ctx, au.PartnerID, typ, "authorization", au.Token, data)
	return err
}

// errCardMoved: the card was given an account between its first read and
// its lock; the attempt is rolled back (releasing the card's lock) and run
// again, so the balance is always locked before the card. After three
// attempts the caller gets 12005 (a conflict to retry), never a 5xx.
var errCardMoved = errors.New("card assigned to an account meanwhile")

// Authorize decides a card payment. The checks run in this order, and the
// first that fails declines the payment with its reason code:
//
//  1. 14: the card is terminated, or has no account to pay from;
//  2. 62: the card is inactive, or not activated;
//  3. 54: the card is past its expiry month;
//  4. 78: the card's account (or the main account behind it) is not active;
//  5. PIN (pos and atm): 75 when PIN use is blocked (MaxPINErrors wrong
//     PINs in a row; the PIN is not even compared), 55 for a wrong PIN,
//     which counts against the card, and 75 for the wrong PIN that reaches
//     the limit; a right PIN resets the counter. The counter's change is
//     kept with the decline;
//  6. 3DS (online): 65 when the card is not enrolled, 1A without a 3DS
//     result, 63 when the cardholder failed the challenge;
//  7. 57: the card's usage group does not allow the channel, or its mcc
//     group blocks the merchant category;
//  8. 13: the amount is in another currency than the card's balance (no
//     currency conversion). It comes before the limits because a limit is
//     a figure in the card's currency: an amount in another currency
//     cannot be compared with it;
//  9. 61: over the card's limits group (emi.LimitsOf): the per-transaction
//     figure (ATM: per withdrawal), then the rolling 24-hour figures (all
//     channels; ATM withdrawals also against the ATM daily figure);
//  10. 51: more than the available balance (without overdraft): Ledger.Hold
//     refuses it, and the refusal is this decline.
//
// An approval holds the amount on the balance (available falls, posted
// does not) for emi.AuthorizationHoldDays. Every decision is recorded;
// nothing else changes on a decline, except the PIN counter. The balance
// is locked before the card (the codebase's lock order).
func (s *Authorizations) Authorize(ctx context.Context, card string, in emi.AuthorizationRequest) (emi.Authorization, error) {
	a, err := s.cards.actor(ctx, ActionPermission(emi.CardPay))
	if err != nil {
		return emi.Authorization{}, err
	}
	if err := s.checkRequest(&in); err != nil {
		return emi.Authorization{}, err
	}
	var out emi.Authorization
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		c, err := s.cards.store.Card(ctx, a.partnerID, card, false)
		if err != nil {
			return err
		}
		for attempt := 0; ; attempt++ {
			err = s.tx.InTx(ctx, func(ctx context.Context) error {
				var err error
				out, err = s.authorize(ctx, a, c.Token, c.Account, in)
				return err
			})
			if !errors.Is(err, errCardMoved) {
				return err
			}
			if attempt == 2 {
				return emi.ErrCardInvalidTransition.WithDetail("the card's account changed while the payment was decided: retry")
			}
			if c, err = s.cards.store.Card(ctx, "", c.Token, false); err != nil {
				return err
			}
		}
	})
	return out, err
}

// authorize decides with the balance of account (the card's account at
// its first read) locked first, then the card.
func (s *Authorizations) authorize(ctx context.Context, a cardActor, card, account string, in emi.AuthorizationRequest) (emi.Authorization, error) {
	var party accounts.Party
	var found bool
	if account != "" {
		var err error
		if party, found, err = s.store.CardBalance(ctx, account); err != nil {
			return emi.Authorization{}, err
		}
		if found {
			locked, err := s.ledger.Lock(ctx, party.Balance)
			if err != nil {
				return emi.Authorization{}, err
			}
			_, found = locked[party.Balance]
		}
	}
	c, err := s.cards.store.Card(ctx, "", card, true)
	if err != nil {
		return emi.Authorization{}, err
	}
	if c.Account != account {
		return emi.Authorization{}, errCardMoved
	}
	now := s.now.At(ctx).UTC()
	au := emi.Authorization{Token: kernel.NewToken(), Card: c.Token, PartnerID: c.PartnerID, Account: c.Account, Channel: in.Channel,
		Amount: int64(in.Amount), Currency: in.Currency, MCC: in.MCC, MerchantName: in.MerchantName,
		MerchantCountry: in.MerchantCountry, PINEntered: in.PIN != "", Status: emi.AuthDeclined, Decision: emi.DecisionDeclined,
		CreatedAt: now}
	if in.ThreeDS != nil {
		au.ThreeDS = map[bool]string{true: "passed", false: "failed"}[*in.ThreeDS]
	}
	if found {
		au.Balance = party.Balance
	}
	code, err := s.decide(ctx, a, c, party, found, in, now)
	if err != nil {
		return emi.Authorization{}, err
	}
	au.ReasonCode = code
	screened := false
	if code == emi.ReasonApproved {
		// Transaction monitoring's rules that stop money look at the
		// payment before any money is held; a hold or a decline is
		// answered as the issuer's generic refusal (05).
		mv := movementOf(au)
		mv.Declined = false // being decided: screened as a payment that would go through
		v, err := s.monitor.Screen(ctx, mv)
		if err != nil {
			return emi.Authorization{}, err
		}
		screened = true
		if v.Stops() {
			au.ReasonCode = emi.ReasonDoNotHonour
		} else if _, err := s.ledger.Hold(ctx, party.Balance, au.Amount); errors.Is(err, emi.ErrInsufficientFunds) {
			au.ReasonCode = emi.ReasonInsufficientFunds
		} else if err != nil {
			return emi.Authorization{}, err
		} else {
			exp := now.Add(emi.AuthorizationHoldDays * 24 * time.Hour)
			au.Decision, au.Status, au.HoldAmount, au.ExpiresAt = emi.DecisionApproved, emi.AuthApproved, au.Amount, &exp
		}
		if au.Decision != emi.DecisionApproved {
			if err := s.monitor.Declined(ctx, v); err != nil {
				return emi.Authorization{}, err
			}
		}
	}
	if err := s.store.InsertAuthorization(ctx, au); err != nil {
		return emi.Authorization{}, err
	}
	if !screened {
		if err := s.monitorAuthorization(ctx, au); err != nil {
			return emi.Authorization{}, err
		}
	}
	if err := s.audit.Record(ctx, emi.AuditEntry{Action: "card.authorization", ResourceType: "card_authorization",
		ResourceToken: au.Token, PartnerID: c.PartnerID, Changes: map[string]any{"card": c.Token, "decision": au.Decision,
			"reason_code": au.ReasonCode, "amount": emi.FormatMinor(au.Amount), "currency": au.Currency, "channel": au.Channel,
			"mcc": au.MCC}}); err != nil {
		return emi.Authorization{}, err
	}
	if err := s.emit(ctx, emi.EventAuthorizationDecided, au); err != nil {
		return emi.Authorization{}, err
	}
	return au, nil
}

// decide runs the checks of Authorize on the locked balance and card and
// returns the reason code. A wrong or right PIN changes the card's
// counter here; the wrong PIN that blocks PIN use is a card history entry.
func (s *Authorizations) decide(ctx context.Context, a cardActor, c emi.Card, party accounts.Party, found bool,
	in emi.AuthorizationRequest, now time.Time) (string, error) {
	if !found {
		return emi.ReasonCardNotUsable, nil
	}
	if v := emi.CardRules(c, emi.CardPay, emi.ByNetwork, now); !v.Allowed {
		return v.Decline, nil
	}
	// Read after the balance lock: a block that committed before it is
	// seen; one that commits later waits for nothing and comes after.
	st, err := s.ledger.AccountStatuses(ctx, party.Account, party.Main)
	if err != nil {
		return "", err
	}
	if st[party.Account] != emi.AccountActive || st[party.Main] != emi.AccountActive {
		return emi.ReasonAccountBlocked, nil
	}
	// A compliance hold stops card payments as it stops transfers: the
	// holder matched a sanctions or watch-list entry and compliance has
	// not cleared them. Declined as a blocked account (78), which tells
	// the merchant nothing about why.
	if held, err := s.store.HolderOnHold(ctx, party.Account); err != nil {
		return "", err
	} else if held {
		return emi.ReasonAccountBlocked, nil
	}
	switch in.Channel {
	case emi.ChannelPOS, emi.ChannelATM:
		if c.PINErrors >= MaxPINErrors {
			return emi.ReasonPINTriesExceeded, nil
		}
		ok, err := s.pinMatches(ctx, c.Token, in.PIN)
		if err != nil {
			return "", err
		}
		if !ok {
			n := c.PINErrors + 1
			if err := s.cards.store.SetPINErrors(ctx, c.Token, n, now); err != nil {
				return "", err
			}
			if n >= MaxPINErrors {
				if err := s.cards.history(ctx, a, c, "pin_blocked", strconv.Itoa(c.PINErrors), strconv.Itoa(n),
					"wrong PIN "+strconv.Itoa(n)+" times in a row", "", nil); err != nil {
					return "", err
				}
				return emi.ReasonPINTriesExceeded, nil
			}
			return emi.ReasonIncorrectPIN, nil
		}
		if c.PINErrors > 0 {
			if err := s.cards.store.SetPINErrors(ctx, c.Token, 0, now); err != nil {
				return "", err
			}
		}
	case emi.ChannelOnline:
		switch {
		case !c.ThreeDS.Enrolled():
			return emi.ReasonNotEnrolled3DS, nil
		case in.ThreeDS == nil:
			return emi.ReasonAuthRequired3DS, nil
		case !*in.ThreeDS:
			return emi.ReasonFailed3DS, nil
		}
	}
	if !emi.UsageAllows(c.Groups["usage"], in.Channel) || emi.MCCBlocked(c.Groups["mcc"], in.MCC) {
		return emi.ReasonNotPermitted, nil
	}
	if in.Currency != party.Currency {
		return emi.ReasonCurrencyMismatch, nil
	}
	lim := emi.LimitsOf(c.Groups["limits"])
	amount := int64(in.Amount)
	atm := in.Channel == emi.ChannelATM
	if (atm && amount > lim.ATMPerWithdraw) || (!atm && amount > lim.PerTransaction) {
		return emi.ReasonExceedsLimit, nil
	}
	all, atmSpent, err := s.store.SpentSince(ctx, c.Token, now.Add(-24*time.Hour))
	if err != nil {
		return "", err
	}
	if all+amount > lim.Daily || (atm && atmSpent+amount > lim.ATMDaily) {
		return emi.ReasonExceedsLimit, nil
	}
	// 51, the last check, is the hold's own: Ledger.Hold refuses more
	// than the available balance (without overdraft) and authorize
	// declines with 51.
	return emi.ReasonApproved, nil
}

// pinMatches compares a typed PIN with the card's sealed PIN in constant
// time. Neither leaves this function.
func (s *Authorizations) pinMatches(ctx context.Context, card, pin string) (bool, error) {
	want, err := s.cards.openPIN(ctx, card)
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(pin)) == 1, nil
}

// checkRequest refuses a request that cannot be decided (12001), with
// every problem at once. A currency emi does not hold is not refused
// here: it is declined (13) like any currency other than the card's.
func (s *Authorizations) checkRequest(in *emi.AuthorizationRequest) error {
	in.Currency, in.MCC, in.Channel = strings.TrimSpace(in.Currency), strings.TrimSpace(in.MCC), strings.TrimSpace(in.Channel)
	in.MerchantName, in.MerchantCountry = strings.TrimSpace(in.MerchantName), strings.ToUpper(strings.TrimSpace(in.MerchantCountry))
	var bad kernel.Problems
	if err := bad.AddErr("", s.cards.validate.Struct(*in, emi.ErrCardValidation)); err != nil {
		return err
	}
	accounts.CheckAmount(&bad, int64(in.Amount))
	if len(in.MCC) != 4 || !kernel.AllDigits(in.MCC) {
		bad.Add("mcc", "must be a merchant category code of four digits")
	}
	switch in.Channel {
	case emi.ChannelPOS, emi.ChannelATM:
		if in.PIN == "" {
			bad.Add("pin", "is required for "+in.Channel+" payments")
		}
		if in.ThreeDS != nil {
			bad.Add("three_ds", "is for online payments only")
		}
	case emi.ChannelOnline:
		if in.PIN != "" {
			bad.Add("pin", "is for pos and atm payments only")
		}
	default:
		bad.Add("channel", "must be one of: "+strings.Join(emi.AuthorizationChannels, ", "))
	}
	bad.CheckPrintable("merchant_name", in.MerchantName)
	if len(bad) > 0 {
		return emi.ErrCardValidation.WithFields(bad...)
	}
	return nil
}

// Clear settles an approved authorization (sandbox_authorization_clear):
// amount (nil: the whole hold; at most the hold) moves from the customer's
// balance to card clearing in one card_clearing ledger transaction that
// releases as much of the hold; the rest of the hold is released. An
// authorization that is not approved any more (declined, cleared, released,
// expired) answers 14007; of two concurrent clearings exactly one
// settles. The clearing is not refused because the account was blocked
// since the approval: the merchant was promised the money.
func (s *Authorizations) Clear(ctx context.Context, token string, amount *int64) (emi.Authorization, error) {
	a, err := s.cards.actor(ctx, ActionPermission(emi.CardPay))
	if err != nil {
		return emi.Authorization{}, err
	}
	if amount != nil {
		var bad kernel.Problems
		accounts.CheckAmount(&bad, *amount)
		if len(bad) > 0 {
			return emi.Authorization{}, emi.ErrTransferValidation.WithFields(bad...)
		}
	}
	return s.settle(ctx, a, token, emi.AuthCleared, func(ctx context.Context, au emi.Authorization) (int64, int64, error) {
		amt := au.HoldAmount
		if amount != nil {
			if *amount > au.HoldAmount {
				return 0, 0, emi.ErrTransferValidation.Field("amount", "must be at most the amount held, "+emi.FormatMinor(au.HoldAmount))
			}
			amt = *amount
		}
		posted, err := s.ledger.Post(ctx, emi.LedgerTxn{Kind: emi.TxnCardClearing, PartnerID: au.PartnerID, Reference: clearingReference(au),
			Entries: []emi.Entry{
				{Balance: au.Balance, Account: au.Account, Currency: au.Currency, Amount: -amt, Release: amt},
				{Internal: emi.LedgerCardClearing, Currency: au.Currency, Amount: amt},
			}})
		if err != nil {
			return 0, 0, err
		}
		if rest := au.HoldAmount - amt; rest > 0 {
			if _, err := s.ledger.Release(ctx, au.Balance, rest); err != nil {
				return 0, 0, err
			}
		}
		return amt, posted.ID, nil
	})
}

// clearingReference is the statement text of a card payment.
func clearingReference(au emi.Authorization) string {
	ref := "Card payment"
	if au.Channel == emi.ChannelATM {
		ref = "Cash withdrawal"
	}
	if au.MerchantName != "" {
		ref += " " + au.MerchantName
	}
	return truncate(ref+" (MCC "+au.MCC+")", 140)
}

// Reverse releases an approved authorization's hold without moving money
// (sandbox_authorization_reverse: the merchant cancelled). 14007 when it is
// not approved any more.
func (s *Authorizations) Reverse(ctx context.Context, token string) (emi.Authorization, error) {
	a, err := s.cards.actor(ctx, ActionPermission(emi.CardPay))
	if err != nil {
		return emi.Authorization{}, err
	}
	return s.settle(ctx, a, token, emi.AuthReleased, s.release)
}

func (s *Authorizations) release(ctx context.Context, au emi.Authorization) (int64, int64, error) {
	_, err := s.ledger.Release(ctx, au.Balance, au.HoldAmount)
	return 0, 0, err
}

// settle runs fn on an approved authorization, its balance locked first,
// then the authorization row (read unlocked first only to find the
// balance), and records the new status. Whether it is still approved is
// checked once, under the row lock.
func (s *Authorizations) settle(ctx context.Context, a cardActor, token, status string,
	fn func(ctx context.Context, au emi.Authorization) (cleared, txn int64, err error)) (emi.Authorization, error) {
	var out emi.Authorization
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		au, err := s.store.Authorization(ctx, a.partnerID, token, false)
		if err != nil {
			return err
		}
		if _, err := s.ledger.Lock(ctx, au.Balance); err != nil {
			return err
		}
		if au, err = s.store.Authorization(ctx, a.partnerID, token, true); err != nil {
			return err
		}
		if !au.Open() {
			return notOpen(au)
		}
		cleared, txn, err := fn(ctx, au)
		if err != nil {
			return err
		}
		now := s.now.At(ctx).UTC()
		if err := s.store.SettleAuthorization(ctx, au.Token, status, cleared, txn, now); err != nil {
			return err
		}
		changes := map[string]any{"card": au.Card, "status": status, "held": emi.FormatMinor(au.HoldAmount),
			"currency": au.Currency}
		if status == emi.AuthCleared {
			changes["cleared"] = emi.FormatMinor(cleared)
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "card.authorization_" + status, ResourceType: "card_authorization",
			ResourceToken: au.Token, PartnerID: au.PartnerID, Changes: changes}); err != nil {
			return err
		}
		au.Status, au.ClearedAmount, au.ClearingTxn, au.SettledAt = status, cleared, txn, &now
		out = au
		return s.emit(ctx, authorizationEvents[status], au)
	})
	return out, err
}

func notOpen(au emi.Authorization) error {
	return emi.ErrTransferInvalidTransition.WithDetail("authorization %s is %s: only an approved one can be settled", au.Token, au.Status)
}

// ExpireHolds releases the holds of approved authorizations not cleared
// by their deadline (status expired), oldest first, one transaction each.
// It is idempotent: an authorization cleared or reversed meanwhile is
// left alone, and running it twice releases nothing twice. It returns how
// many holds it released. The maintenance job runs it for every partner
// but those on a test clock, whose holds expire as their clock advances
// (ExpirePartnerHolds).
func (s *Authorizations) ExpireHolds(ctx context.Context) (int, error) {
	return s.expireHolds(ctx, "")
}

// ExpirePartnerHolds is ExpireHolds for partnerID's holds alone, at the
// time of ctx (a test clock's advance).
func (s *Authorizations) ExpirePartnerHolds(ctx context.Context, partnerID string) (int, error) {
	return s.expireHolds(ctx, partnerID)
}

// NextHoldExpiry returns the earliest deadline, at or before until, of
// partnerID's approved holds.
func (s *Authorizations) NextHoldExpiry(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error) {
	return s.store.NextHoldExpiry(ctx, partnerID, until)
}

func (s *Authorizations) expireHolds(ctx context.Context, partnerID string) (int, error) {
	if _, ok := emi.PrincipalFrom(ctx); !ok {
		ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("card-hold-expiry"))
	}
	sys := cardActor{actorID: "card-hold-expiry"}
	n := 0
	for {
		now := s.now.At(ctx).UTC()
		tokens, err := s.store.ExpiredHolds(ctx, partnerID, now, 100)
		if err != nil || len(tokens) == 0 {
			return n, err
		}
		progress := false
		for _, t := range tokens {
			_, err := s.settle(ctx, sys, t, emi.AuthExpired, s.release)
			if errors.Is(err, emi.ErrTransferInvalidTransition) {
				continue // settled meanwhile
			}
			if err != nil {
				return n, err
			}
			n++
			progress = true
		}
		if !progress {
			return n, nil
		}
	}
}

// ForCard lists a card's authorizations (card_authorizations, and the
// card's page in the back office, emi.PermViewAccounts): page from 1,
// limit 1..100, newest first; a cursor (f.StartingAfter, one of the card's
// authorizations) starts the pages after it. Another partner's card is
// 12002; a cursor that is not one of the card's authorizations is 12001
// naming starting_after.
func (s *Authorizations) ForCard(ctx context.Context, card string, f emi.AuthorizationFilter) ([]emi.Authorization, int64, error) {
	a, err := s.cards.actor(ctx, emi.PermViewAccounts)
	if err != nil {
		return nil, 0, err
	}
	const notTheCards = "is not one of this card's payments"
	var bad kernel.Problems
	bad.CheckPage(f.Page, f.Limit, 100)
	var after emi.Authorization
	if f.StartingAfter != "" {
		after, err = s.store.Authorization(ctx, a.partnerID, f.StartingAfter, false)
		if errors.Is(err, emi.ErrAuthorizationNotFound) {
			bad.Add("starting_after", notTheCards)
		} else if err != nil {
			return nil, 0, err
		}
	}
	if len(bad) > 0 {
		return nil, 0, emi.ErrCardValidation.WithFields(bad...)
	}
	c, err := s.cards.store.Card(ctx, a.partnerID, card, false)
	if err != nil {
		return nil, 0, err
	}
	if f.StartingAfter != "" && after.Card != c.Token {
		return nil, 0, emi.ErrCardValidation.Field("starting_after", notTheCards)
	}
	return s.store.CardAuthorizations(ctx, c.Token, f)
}

// monitorAuthorization records an authorization on an account for
// transaction monitoring: a cash withdrawal at an ATM, a card payment
// otherwise; a declined one counts for card testing only. An
// authorization declined before its account was known records nothing.
func (s *Authorizations) monitorAuthorization(ctx context.Context, au emi.Authorization) error {
	if au.Account == "" {
		return nil
	}
	return s.monitor.Record(ctx, movementOf(au))
}

// movementOf is an authorization as transaction monitoring records it.
func movementOf(au emi.Authorization) monitoring.Movement {
	kind := monitoring.KindCardPayment
	if au.Channel == emi.ChannelATM {
		kind = monitoring.KindCardWithdrawal
	}
	return monitoring.Movement{PartnerID: au.PartnerID, Account: au.Account, Kind: kind,
		Direction: monitoring.Out, Amount: au.Amount, Currency: au.Currency, MCC: au.MCC,
		CounterpartyKey: monitoring.CounterpartyKey(au.MerchantName), CounterpartyCountry: au.MerchantCountry,
		Declined: au.Decision != emi.DecisionApproved, At: au.CreatedAt, Source: au.Token}
}
