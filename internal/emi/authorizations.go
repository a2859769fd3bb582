package emi

import (
	"slices"
	"time"
)

// Card payment channels (sandbox authorizations).
const (
	ChannelPOS    = "pos"    // a card present at a shop's terminal, with its PIN
	ChannelOnline = "online" // a card-not-present payment, with 3-D Secure
	ChannelATM    = "atm"    // a cash withdrawal, with the PIN
)

// AuthorizationChannels lists the channels.
var AuthorizationChannels = []string{ChannelPOS, ChannelOnline, ChannelATM}

// Authorization decisions and statuses. A declined authorization stays
// declined; an approved one holds money until it is cleared (settled in
// the ledger), released (reversed by the merchant) or expired (never
// cleared within AuthorizationHoldDays).
const (
	DecisionApproved = "approved"
	DecisionDeclined = "declined"

	AuthDeclined = "declined"
	AuthApproved = "approved"
	AuthCleared  = "cleared"
	AuthReleased = "released"
	AuthExpired  = "expired"
)

// AuthorizationHoldDays is how long an approved authorization holds money
// without a clearing before the hold is released.
const AuthorizationHoldDays = 7

// Reason codes of authorization decisions, ISO 8583 style (field 39 as
// Visa and Mastercard use it). The decision runs the checks in this order
// and answers with the first that fails.
const (
	ReasonApproved          = "00" // approved
	ReasonCardNotUsable     = "14" // card terminated, or without an account to pay from
	ReasonCardRestricted    = "62" // card inactive, or plastic card not activated yet
	ReasonCardExpired       = "54" // past the card's expiry month
	ReasonAccountBlocked    = "78" // the card's account (or its main account) is not active, or its holder is on compliance hold
	ReasonPINTriesExceeded  = "75" // three wrong PINs in a row: PIN use blocked until card_reset_pin
	ReasonIncorrectPIN      = "55" // wrong PIN (counts against the card)
	ReasonNotEnrolled3DS    = "65" // online payment with a card not enrolled in 3DS (SCA impossible)
	ReasonAuthRequired3DS   = "1A" // online payment without a 3DS result: authenticate the cardholder and retry
	ReasonFailed3DS         = "63" // the cardholder failed the 3DS challenge
	ReasonNotPermitted      = "57" // MCC blocked by the card's mcc group, or channel not allowed by its usage group
	ReasonCurrencyMismatch  = "13" // amount in another currency than the card's (no currency conversion)
	ReasonExceedsLimit      = "61" // over the card's per-transaction or daily limit (limits group)
	ReasonInsufficientFunds = "51" // more than the available balance
	ReasonDoNotHonour       = "05" // declined by emi's transaction monitoring (no reason is given, as issuers give none)
)

// authorizationReasons are the reason codes' texts, in decision order.
var authorizationReasons = []struct{ Code, Text string }{
	{ReasonApproved, "approved"},
	{ReasonCardNotUsable, "card not usable: terminated, or without an account"},
	{ReasonCardRestricted, "card inactive or not activated"},
	{ReasonCardExpired, "card expired"},
	{ReasonAccountBlocked, "account blocked"},
	{ReasonPINTriesExceeded, "PIN tries exceeded: PIN use blocked until the PIN counter is reset"},
	{ReasonIncorrectPIN, "incorrect PIN"},
	{ReasonNotEnrolled3DS, "card not enrolled in 3DS: online payments need it"},
	{ReasonAuthRequired3DS, "3DS authentication required"},
	{ReasonFailed3DS, "3DS authentication failed"},
	{ReasonNotPermitted, "transaction not permitted to the card (merchant category or channel)"},
	{ReasonCurrencyMismatch, "invalid amount: currency other than the card's"},
	{ReasonExceedsLimit, "exceeds the card's amount limit"},
	{ReasonInsufficientFunds, "insufficient funds"},
	{ReasonDoNotHonour, "do not honour: declined by the issuer"},
}

// AuthorizationReasonCodes lists the reason codes in decision order.
func AuthorizationReasonCodes() []string {
	out := make([]string, len(authorizationReasons))
	for i, r := range authorizationReasons {
		out[i] = r.Code
	}
	return out
}

// AuthorizationReason is the text of a reason code ("" for an unknown one).
func AuthorizationReason(code string) string {
	i := slices.IndexFunc(authorizationReasons, func(r struct{ Code, Text string }) bool { return r.Code == code })
	if i < 0 {
		return ""
	}
	return authorizationReasons[i].Text
}

// AuthorizationRequest is a card payment as the acquirer sends it
// (sandbox_card_authorize and the back office's payment simulator).
type AuthorizationRequest struct {
	Amount   Amount `json:"amount"`
	Currency string `json:"currency" validate:"required,currency"`
	// MCC is the merchant category code (ISO 18245), four digits.
	MCC     string `json:"mcc"`
	Channel string `json:"channel"`
	// PIN as the cardholder typed it at a POS terminal or an ATM. It is
	// compared with the card's sealed PIN and never stored or logged.
	PIN string `json:"pin" validate:"omitempty,pin"`
	// ThreeDS is the outcome of the 3DS challenge of an online payment:
	// true passed, false failed, absent when no challenge was made.
	ThreeDS         *bool  `json:"three_ds"`
	MerchantName    string `json:"merchant_name" validate:"max=100"`
	MerchantCountry string `json:"merchant_country" validate:"omitempty,country"`
}

// Authorization is one decision on a card payment, approved or declined,
// with the hold it placed. The PIN is never part of it.
type Authorization struct {
	Token     string `db:"token"`
	Card      string `db:"card"`
	PartnerID string `db:"partner_id"`
	// Account is the card's account ("" when the card has none); Balance
	// the balance an approval holds money on (a virtual account's main
	// balance), "" when declined before it was known.
	Account         string `db:"account"`
	Balance         string `db:"balance"`
	Channel         string `db:"channel"`
	Amount          int64  `db:"amount"`
	Currency        string `db:"currency"`
	MCC             string `db:"mcc"`
	MerchantName    string `db:"merchant_name"`
	MerchantCountry string `db:"merchant_country"`
	// ThreeDS: "" (no challenge), "passed" or "failed".
	ThreeDS    string `db:"three_ds"`
	PINEntered bool   `db:"pin_entered"`
	Decision   string `db:"decision"`
	ReasonCode string `db:"reason_code"`
	Status     string `db:"status"`
	// HoldAmount is what an approval held; ClearedAmount what a clearing
	// settled (the rest was released); ClearingTxn the ledger transaction
	// of the clearing.
	HoldAmount    int64      `db:"hold_amount"`
	ClearedAmount int64      `db:"cleared_amount"`
	ClearingTxn   int64      `db:"clearing_txn"`
	ExpiresAt     *time.Time `db:"expires_at"`
	CreatedAt     time.Time  `db:"created_at"`
	SettledAt     *time.Time `db:"settled_at"`
}

// AuthorizationFilter selects a page of a card's authorizations, newest
// first: Page from 1 and Limit per page, counted from the authorization
// after StartingAfter when it is set (a cursor: one of the card's).
type AuthorizationFilter struct {
	Page, Limit   int
	StartingAfter string
}

// Reason is the text of the authorization's reason code.
func (a Authorization) Reason() string { return AuthorizationReason(a.ReasonCode) }

// Open reports whether the authorization still holds money.
func (a Authorization) Open() bool { return a.Status == AuthApproved }

// CardLimits are the amount limits of a limits group, in minor units of
// the card's currency. Daily figures count the approved and cleared
// authorizations of the last 24 hours (rolling), the one being decided
// included.
type CardLimits struct {
	PerTransaction int64
	Daily          int64
	ATMPerWithdraw int64
	ATMDaily       int64
}

// Limits groups with their figures. A card without a limits group, or
// with a code that has no figures here, gets LimitsStandard: removing
// the group never lifts the limits.
var (
	LimitsStandard = CardLimits{PerTransaction: 2_000_00, Daily: 5_000_00, ATMPerWithdraw: 500_00, ATMDaily: 1_000_00}
	LimitsHigh     = CardLimits{PerTransaction: 10_000_00, Daily: 25_000_00, ATMPerWithdraw: 1_000_00, ATMDaily: 3_000_00}
)

// LimitsOf returns the figures of a limits group code.
func LimitsOf(code string) CardLimits {
	if code == "limits_high" {
		return LimitsHigh
	}
	return LimitsStandard
}

// UsageChannels are the channels a usage group allows. A card without a
// usage group, or with a code that has no entry here, may use every
// channel.
var UsageChannels = map[string][]string{
	"usage_std":    {ChannelPOS, ChannelOnline, ChannelATM},
	"usage_no_atm": {ChannelPOS, ChannelOnline},
}

// UsageAllows reports whether a usage group code allows a channel.
func UsageAllows(code, channel string) bool {
	chs, ok := UsageChannels[code]
	return !ok || slices.Contains(chs, channel)
}

// BlockedMCCs are the merchant categories an mcc group blocks. mcc_std
// blocks gambling: betting and casino gaming (7995), government lotteries
// (7800), internet gambling (7801), horse and dog racing (7802) and
// gambling by horse racing (9754). A card without an mcc group, or with a
// code that has no entry here, blocks none.
var BlockedMCCs = map[string][]string{
	"mcc_std": {"7800", "7801", "7802", "7995", "9754"},
}

// MCCBlocked reports whether an mcc group code blocks a merchant category.
func MCCBlocked(code, mcc string) bool { return slices.Contains(BlockedMCCs[code], mcc) }
