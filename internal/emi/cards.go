package emi

import (
	"fmt"
	"strings"
	"time"
)

// Card types and statuses (contract §6, §7).
const (
	CardVirtual = "virtual"
	CardPlastic = "plastic"

	CardActive     = "active"
	CardInactive   = "inactive"
	CardTerminated = "terminated"
)

// Block reason codes: why staff blocked a card. Lost and stolen
// terminate the card (its number is compromised) and it may be replaced;
// the others make it inactive until it is set active again. Other needs a
// note.
const (
	BlockLost            = "lost"
	BlockStolen          = "stolen"
	BlockFraudSuspected  = "fraud_suspected"
	BlockCustomerRequest = "customer_request"
	BlockOther           = "other"
)

// BlockReasons lists the block reason codes in the order staff are offered
// them.
var BlockReasons = []string{BlockLost, BlockStolen, BlockFraudSuspected, BlockCustomerRequest, BlockOther}

// BlockTerminates reports whether a block with this reason code terminates
// the card (lost or stolen: the card can never be used again).
func BlockTerminates(code string) bool { return code == BlockLost || code == BlockStolen }

// BlockReasonLabel is a reason code as people read it ("fraud suspected").
func BlockReasonLabel(code string) string { return strings.ReplaceAll(code, "_", " ") }

// Delivery is where a plastic card is sent (contract §7).
type Delivery struct {
	FirstName string `json:"first_name" validate:"required,max=100"`
	LastName  string `json:"last_name" validate:"required,max=100"`
	Address1  string `json:"address1" validate:"required,max=200"`
	Address2  string `json:"address2" validate:"max=200"`
	City      string `json:"city" validate:"required,max=100"`
	County    string `json:"county" validate:"max=100"`
	Zip       string `json:"zip" validate:"required,max=20"`
	Country   string `json:"country" validate:"required,country"`
	Phone     string `json:"phone" validate:"omitempty,phone"`
	Method    string `json:"method" validate:"omitempty,oneof=standard registered courier"`
}

// ThreeDSEnrol is the 3DS enrolment (card_3ds_enrol, and three_ds at
// card_create).
type ThreeDSEnrol struct {
	OTPSMS    string `json:"otp_sms" validate:"omitempty,phone"`
	Biometric bool   `json:"biometric"`
}

// CardCreate is the request of card_create (seed "Card", contract §7).
type CardCreate struct {
	Program         string        `json:"program" validate:"max=40"`
	Account         string        `json:"account" validate:"max=36"`
	Merchant        string        `json:"merchant" validate:"max=36"`
	User            string        `json:"user" validate:"max=36"`
	AML             string        `json:"aml" validate:"max=36"`
	EmbossName      string        `json:"emboss_name" validate:"max=26,emboss"`
	EmbossNameLine4 string        `json:"emboss_name_line4" validate:"max=26,emboss"`
	Fulfil1         string        `json:"fulfil1" validate:"max=100"`
	Fulfil2         string        `json:"fulfil2" validate:"max=100"`
	ThermalLine1    string        `json:"thermal_line1" validate:"max=100"`
	ThermalLine2    string        `json:"thermal_line2" validate:"max=100"`
	Active          *bool         `json:"active"`
	PIN             string        `json:"pin" validate:"omitempty,pin"`
	Type            string        `json:"type" validate:"required,oneof=virtual plastic"`
	FirstName       string        `json:"first_name" validate:"max=100"`
	LastName        string        `json:"last_name" validate:"max=100"`
	Alias           string        `json:"alias" validate:"max=200"`
	URL             string        `json:"url" validate:"omitempty,max=2000,http_url"`
	Delivery        *Delivery     `json:"delivery_details"`
	ThreeDS         *ThreeDSEnrol `json:"three_ds"`
}

// CardGroups is the request of card_groups: nil keeps a group, "" removes
// it, a code sets it.
type CardGroups struct {
	Usage          *string `json:"usage" nullable:"true"`
	Fees           *string `json:"fees" nullable:"true"`
	ScheduleFees   *string `json:"schedule_fees" nullable:"true"`
	WebServiceFees *string `json:"web_service_fees" nullable:"true"`
	Limits         *string `json:"limits" nullable:"true"`
	Linkage        *string `json:"linkage" nullable:"true"`
	MCC            *string `json:"mcc" nullable:"true"`
	Whitelist      *string `json:"whitelist" nullable:"true"`
}

// ByKind returns the groups sent, keyed by kind (GroupKinds).
func (g CardGroups) ByKind() map[string]string {
	out := map[string]string{}
	for kind, v := range map[string]*string{"usage": g.Usage, "fees": g.Fees, "schedule_fees": g.ScheduleFees,
		"web_service_fees": g.WebServiceFees, "limits": g.Limits, "linkage": g.Linkage, "mcc": g.MCC, "whitelist": g.Whitelist} {
		if v != nil {
			out[kind] = *v
		}
	}
	return out
}

// Card is a card as stored, without card data: the PAN, CVV2 and PIN stay
// sealed in the store and only the reveal operations open them.
type Card struct {
	Token           string
	PartnerID       string
	Program         string
	Account         string
	Merchant        string
	User            string
	Type            string
	Status          string
	Activated       bool
	First6          string
	Last4           string
	ExpiryMonth     int
	ExpiryYear      int
	PINErrors       int
	CVVErrors       int
	AML             string
	EmbossName      string
	EmbossNameLine4 string
	Fulfil1         string
	Fulfil2         string
	ThermalLine1    string
	ThermalLine2    string
	FirstName       string
	LastName        string
	Alias           string
	URL             string
	Delivery        *Delivery
	Groups          map[string]string
	ThreeDS         ThreeDS
	CreatedAt       time.Time
	UpdatedAt       time.Time
	ActivatedAt     *time.Time
	TerminatedAt    *time.Time
	// StatusReason is the block reason code of the card's current status
	// ("" while active, or when the partner API set the status).
	StatusReason string
	// Replaces is the terminated card this one replaced ("" when none);
	// ReplacedBy the card that replaced this one.
	Replaces, ReplacedBy string
	// AccountStatus is the status of the card's account ("" without one).
	AccountStatus string
	// OwnerName is filled for the back office.
	OwnerName string
	Wallets   []WalletToken
}

// ThreeDS is a card's 3DS enrolment.
type ThreeDS struct {
	OTPSMS    string
	Biometric bool
}

// Enrolled reports whether any 3DS method is enrolled.
func (t ThreeDS) Enrolled() bool { return t.OTPSMS != "" || t.Biometric }

// MaskedPAN is the PAN with all but the first six and last four digits
// masked, for a 16-digit PAN.
func (c Card) MaskedPAN() string { return c.First6 + "******" + c.Last4 }

// Expiry is MM/YY.
func (c Card) Expiry() string { return fmt.Sprintf("%02d/%02d", c.ExpiryMonth, c.ExpiryYear%100) }

// Expired reports whether the card is past its expiry month at now (a card
// is valid through the last day of its expiry month, UTC).
func (c Card) Expired(now time.Time) bool {
	return !now.Before(time.Date(c.ExpiryYear, time.Month(c.ExpiryMonth)+1, 1, 0, 0, 0, 0, time.UTC))
}

// CanPay reports whether the card may be used to pay at now (contract §7):
// status active, activated, not expired, and its account active
// (CardCanPay, from the card state table).
func (c Card) CanPay(now time.Time) bool { return CardCanPay(c, now) }

// Wallet token states (computed from the card, see WalletToken.Status).
const (
	WalletActive    = "active"
	WalletSuspended = "suspended"
	WalletDeleted   = "deleted"
)

// WalletToken is a mobile wallet token of a card.
type WalletToken struct {
	Token      string    `db:"token"`
	Card       string    `db:"card"`
	Wallet     string    `db:"wallet"`
	DeviceName string    `db:"device_name"`
	CreatedAt  time.Time `db:"created_at"`
}

// WalletStatus is the state of a card's wallet tokens: it follows the
// card (deleted once terminated, suspended while the card or its account
// is not active; CardWalletStatus, from the card state table).
func (c Card) WalletStatus() string { return CardWalletStatus(c) }

// CardFilter selects cards (cards_list, back office).
type CardFilter struct {
	PartnerID string
	Merchant  string
	User      string
	Account   string
	Program   string
	Page      int
	Limit     int
	// StartingAfter is a card of the partner: the page counts from the
	// card after it, newest first (a cursor).
	StartingAfter string
}

// CardChange is one entry of a card's history.
type CardChange struct {
	Change string `db:"change"`
	From   string `db:"from_value"`
	To     string `db:"to_value"`
	Reason string `db:"reason"`
	// ReasonCode is a staff block's reason code (BlockReasons), "" else.
	ReasonCode string `db:"reason_code"`
	Actor      string `db:"actor"`
	// ActorName names a staff actor, or says "partner API".
	ActorName string    `db:"actor_name"`
	At        time.Time `db:"at"`
}

// SMSMessage is a text sent to a cardholder, with secrets masked.
type SMSMessage struct {
	ID          int64     `db:"id"`
	PartnerID   string    `db:"partner_id"`
	Card        *string   `db:"card"`
	To          string    `db:"to_phone"`
	TextMasked  string    `db:"text_masked"`
	Provider    string    `db:"provider"`
	Status      string    `db:"status"`
	ProviderRef string    `db:"provider_ref"`
	Error       string    `db:"error"`
	CreatedAt   time.Time `db:"created_at"`
}

// MaskPhone keeps the country code and last three digits of a phone
// number ("+46*****567").
func MaskPhone(p string) string {
	if len(p) <= 6 {
		return strings.Repeat("*", len(p))
	}
	return p[:3] + strings.Repeat("*", len(p)-6) + p[len(p)-3:]
}
