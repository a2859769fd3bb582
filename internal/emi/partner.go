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

// PartnerKey is an API key of a partner, without its secret.
type PartnerKey struct {
	ID                 string     `db:"id"`
	PartnerID          string     `db:"partner_id"`
	APIKey             string     `db:"api_key"`
	CreatedAt          time.Time  `db:"created_at"`
	RotatedAt          *time.Time `db:"rotated_at"`
	RevokedAt          *time.Time `db:"revoked_at"`
	PreviousValidUntil *time.Time `db:"previous_valid_until"`
}

// PartnerCreate is the input of creating a partner (CLI and back office).
type PartnerCreate struct {
	Name       string     `json:"name" validate:"required,max=200"`
	Processing Processing `json:"processing" validate:"omitempty,oneof=automatic semi-automatic"`
	WebhookURL string     `json:"webhook_url" validate:"omitempty,max=2000"`
	// NoValidatorConfig creates the partner without the default validator
	// configuration (its application_create then answers 11008).
	NoValidatorConfig bool `json:"no_validator_config"`
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

// SignedRequest is what the partner API authenticates: the three headers of
// contract §2, the operation name of the route, and the body that was signed
// (nil for methods whose body is not signed).
type SignedRequest struct {
	APIKey    string
	Timestamp string
	Hash      string
	Operation string
	Body      []byte
}
