package emi

import "time"

// Processing is how a partner's applications are decided (contract §8).
type Processing string

// Processing modes.
const (
	ProcessingAutomatic     Processing = "automatic"
	ProcessingSemiAutomatic Processing = "semi-automatic"
)

// Partner is a fintech calling the API. It owns one master merchant; every
// resource it creates hangs below that merchant.
type Partner struct {
	ID             string     `db:"id" json:"id"`
	Name           string     `db:"name" json:"name"`
	MasterMerchant string     `db:"master_merchant" json:"master_merchant"`
	Processing     Processing `db:"processing" json:"processing"`
	CreatedAt      time.Time  `db:"created_at" json:"created_at"`
}

// MsgPartnerNameTaken is the field message on "name" when another partner
// has the same name, ignoring case (names are unique so that people can
// tell partners apart in lists and filters).
const MsgPartnerNameTaken = "is already the name of another partner (names are unique, ignoring case)"

// PartnerKey is an API key of a partner, without its secret.
type PartnerKey struct {
	ID                 string     `db:"id"`
	PartnerID          string     `db:"partner_id"`
	APIKey             string     `db:"api_key"`
	CreatedAt          time.Time  `db:"created_at"`
	RotatedAt          *time.Time `db:"rotated_at"`
	RevokedAt          *time.Time `db:"revoked_at"`
	PreviousValidUntil *time.Time `db:"previous_valid_until"`
	// MinSignatureVersion is the lowest signature version the key accepts
	// (contract §2): 1 accepts both versions, 2 refuses version 1.
	MinSignatureVersion int `db:"min_signature_version"`
}

// Signature versions of contract §2.
const (
	// SignatureV1 is the seed's (Paynetics') signature: api_key + timestamp
	// + operation + the whitespace-stripped body of a POST or PUT.
	SignatureV1 = 1
	// SignatureV2 also signs the method, the request target and the
	// optional x-nonce, and the body exactly as sent, for every method.
	SignatureV2 = 2
)

// PartnerCreate is the input of creating a partner (CLI and back office).
type PartnerCreate struct {
	Name       string     `json:"name" validate:"required,max=200"`
	Processing Processing `json:"processing" validate:"omitempty,oneof=automatic semi-automatic"`
	WebhookURL string     `json:"webhook_url" validate:"omitempty,max=2000"`
	// NoValidatorConfig creates the partner without the default validator
	// configuration (its application_create then answers 11008).
	NoValidatorConfig bool `json:"no_validator_config"`
	// SignatureVersion is the first key's minimum signature version: 0 or
	// 1 accept both versions, 2 requires version 2 (contract §2).
	SignatureVersion int `json:"signature_version" validate:"omitempty,oneof=1 2"`
}

// PartnerCredentials is what creating a partner (or a key) returns. The
// secrets are shown this once and can never be read again.
type PartnerCredentials struct {
	Partner       Partner `json:"-"`
	KeyID         string  `json:"-"`
	APIKey        string  `json:"api_key"`
	APISecret     string  `json:"api_secret"`
	Merchant      string  `json:"merchant"`
	WebhookSecret string  `json:"webhook_secret"`
}

// SignedRequest is what the partner API authenticates (contract §2): the
// authentication headers, the operation name of the route, the method and
// request target, and the body.
type SignedRequest struct {
	APIKey    string
	Timestamp string
	Hash      string
	Operation string
	// Version is the x-signature-version header as sent ("" means 1).
	Version string
	// Nonce is the x-nonce header as sent (signed and part of the replay
	// tuple in version 2 only).
	Nonce string
	// Method is the HTTP method in upper case.
	Method string
	// Target is the request target as received: the path, plus "?" and
	// the raw query when there is one.
	Target string
	// Body is the raw request body as received (nil when there is none).
	// Version 1 signs it, whitespace removed, for POST and PUT only;
	// version 2 signs it as it is, for every method.
	Body []byte
	// Operations are the names of every operation of the API. A request
	// whose signature fails is checked against them too, so the answer can
	// say "signed as X, this route expects Y" (the card_number halves).
	Operations []string
}
