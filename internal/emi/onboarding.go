package emi

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"time"
)

// Allowed values of the seed's Application and Company member sections.
var (
	Products      = []string{"pos", "e-commerce", "qr", "account-opening", "card-issuing"}
	DueDiligences = []string{"SDD", "CDD"}
	MemberTypes   = []string{"ubo", "ceo", "representative", "proxy", "legal-entity", "officer"}
	LegalForms    = []string{"sole-trader", "limited-company", "limited-partnership", "limited-liability-partnership", "other", "self-employed"}
)

// AcquiringProduct reports whether a product needs a MID and a TID.
func AcquiringProduct(p string) bool { return p == "pos" || p == "e-commerce" || p == "qr" }

// ApplicationStatus is where an application stands (contract §6).
type ApplicationStatus string

// Application statuses.
const (
	AppChecking      ApplicationStatus = "checking"
	AppInReview      ApplicationStatus = "in_review"
	AppInfoRequested ApplicationStatus = "information_requested"
	AppApproved      ApplicationStatus = "approved"
	AppRejected      ApplicationStatus = "rejected"
)

// Decided reports whether the application is closed to changes (11003).
func (s ApplicationStatus) Decided() bool { return s == AppApproved || s == AppRejected }

// Check statuses (contract §8).
const (
	CheckPassed  = "passed"
	CheckFailed  = "failed"
	CheckReview  = "review"
	CheckError   = "error"
	CheckPending = "pending"
)

// Check names, in display order.
const (
	CheckRisk          = "risk"
	CheckTradeRegister = "trade_register"
	CheckSanctions     = "sanctions"
	CheckAdverseMedia  = "adverse_media"
)

// CheckNames lists the automatic checks.
func CheckNames() []string {
	return []string{CheckRisk, CheckTradeRegister, CheckSanctions, CheckAdverseMedia}
}

// Decimal is an amount kept exactly as sent: a JSON number or a decimal
// string, canonicalised (no exponent, no leading +, no superfluous zeros).
type Decimal string

var decimalRe = regexp.MustCompile(`^-?[0-9]{1,18}(\.[0-9]{1,8})?$`)

// decimalError is shown to clients by the strict decoder.
type decimalError struct{}

func (decimalError) Error() string { return "not a decimal" }
func (decimalError) FieldMessage() string {
	return "must be a decimal number (a JSON number or a string such as \"100.50\"), at most 18 digits before the point and 8 after"
}

// UnmarshalJSON accepts a number or a string holding one.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*d = ""
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return decimalError{}
		}
		s = str
	}
	if !decimalRe.MatchString(s) {
		return decimalError{}
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	frac = strings.TrimRight(frac, "0")
	out := intPart
	if frac != "" {
		out += "." + frac
	}
	if neg && out != "0" {
		out = "-" + out
	}
	*d = Decimal(out)
	return nil
}

// MarshalJSON writes the decimal as a string, so no client parses it into
// a float by accident.
func (d Decimal) MarshalJSON() ([]byte, error) { return json.Marshal(string(d)) }

// Negative reports whether d is below zero.
func (d Decimal) Negative() bool { return strings.HasPrefix(string(d), "-") }

// Decimals returns the number of digits after the point.
func (d Decimal) Decimals() int {
	if _, f, ok := strings.Cut(string(d), "."); ok {
		return len(f)
	}
	return 0
}

// PayoutDetail is one payout_details element.
type PayoutDetail struct {
	Amount        *Decimal `json:"amount" nullable:"true"`
	Currency      string   `json:"currency" validate:"required,currency"`
	IBAN          string   `json:"iban" validate:"max=34"`
	SortCode      string   `json:"sort_code" validate:"omitempty,len=6,numeric"`
	AccountNumber string   `json:"account_number" validate:"omitempty,len=8,numeric"`
	Period        string   `json:"period" validate:"max=100"`
	Delay         string   `json:"delay" validate:"max=100"`
}

// CompanyFields are the Company fields (seed "Company", plus uic and
// incorporation_date of contract §8).
type CompanyFields struct {
	TradeName             string `json:"trade_name" validate:"max=1000"`
	LegalName             string `json:"legal_name" validate:"max=1000"`
	Website               string `json:"website" validate:"omitempty,max=1000,http_url"`
	Phone                 string `json:"phone" validate:"omitempty,phone"`
	MobilePhone           string `json:"mobile_phone" validate:"omitempty,phone"`
	Country               string `json:"country" validate:"omitempty,len=2,country"`
	County                string `json:"county" validate:"max=1000"`
	City                  string `json:"city" validate:"max=1000"`
	Zip                   string `json:"zip" validate:"max=1000"`
	Address1              string `json:"address1" validate:"max=1000"`
	Address2              string `json:"address2" validate:"max=1000"`
	ContactEmail          string `json:"contact_email" validate:"omitempty,max=254,email"`
	CorrespondenceAddress string `json:"correspondence_address" validate:"max=1000"`
	DescriptionOfActivity string `json:"description_of_activity" validate:"max=1000"`
	AddressOfShop         string `json:"address_of_shop" validate:"max=1000"`
	BusinessActivity      string `json:"business_activity" validate:"max=1000"`
	IsSIE                 *bool  `json:"is_sie" nullable:"true"`
	UIC                   string `json:"uic" validate:"max=100"`
	IncorporationDate     string `json:"incorporation_date" validate:"omitempty,pastdate"`
}

// MemberFields are the Company member fields both add and update accept.
type MemberFields struct {
	FirstName             string `json:"first_name" validate:"omitempty,max=1000,name"`
	LastName              string `json:"last_name" validate:"omitempty,max=1000,name"`
	MobilePhone           string `json:"mobile_phone" validate:"omitempty,phone"`
	Phone                 string `json:"phone" validate:"omitempty,phone"`
	LegalName             string `json:"legal_name" validate:"max=1000"`
	Country               string `json:"country" validate:"omitempty,country"`
	CountryOfResidence    string `json:"country_of_residence" validate:"omitempty,country"`
	Zip                   string `json:"zip" validate:"max=1000"`
	City                  string `json:"city" validate:"max=1000"`
	Address1              string `json:"address1" validate:"max=1000"`
	Address2              string `json:"address2" validate:"max=1000"`
	County                string `json:"county" validate:"max=1000"`
	Ownership             *bool  `json:"ownership" nullable:"true"`
	OwnershipPercentage   *int   `json:"ownership_percentage" validate:"omitempty,min=0,max=100" nullable:"true"`
	LegalForm             string `json:"legal_form" validate:"omitempty,enum_legal_form"`
	PEPDeclaration        *bool  `json:"pep_declaration" nullable:"true"`
	PEPRelatedDeclaration *bool  `json:"pep_related_declaration" nullable:"true"`
	IsSIP                 *bool  `json:"is_sip" nullable:"true"`
	ContactEmail          string `json:"contact_email" validate:"omitempty,max=254,email"`
}

// MemberAdd is the request of company_add_member (and a members element
// of application_create): the shared fields plus the add-only ones.
type MemberAdd struct {
	MemberFields
	UIC              string     `json:"uic" validate:"max=100"`
	Type             []string   `json:"type" validate:"min=1,max=2,unique,dive,enum_member_type"`
	UniqueIdentifier string     `json:"unique_identifier" validate:"max=100"`
	User             string     `json:"user" validate:"omitempty,max=36"`
	PlaceOfBirth     string     `json:"place_of_birth" validate:"omitempty,country"`
	Birthday         string     `json:"birthday" validate:"omitempty,pastdate"`
	Nationality      string     `json:"nationality" validate:"omitempty,country"`
	Documents        []Document `json:"documents" validate:"max=10,dive"`
}

// MemberAddOnlyFields are refused by company_member_update.
var MemberAddOnlyFields = []string{"uic", "type", "unique_identifier", "user", "place_of_birth", "birthday", "nationality", "documents"}

// MemberPatch is the request of company_member_update: Present names the
// fields sent; Status is update-only.
type MemberPatch struct {
	Fields  MemberFields
	Status  string
	Present map[string]bool
	Refused []FieldError
}

// ApplicationCreate is the request of application_create; company and
// members may come with it (contract §8).
type ApplicationCreate struct {
	Merchant      string         `json:"merchant" validate:"omitempty,min=32,max=36"`
	Products      []string       `json:"products" validate:"min=1,max=5,unique,dive,enum_product"`
	DueDiligence  string         `json:"due_diligence" validate:"omitempty,enum_due_diligence"`
	PayoutDetails []PayoutDetail `json:"payout_details" validate:"max=10,dive"`
	IPAddress     string         `json:"ip_address" validate:"omitempty,ip"`
	Fingerprint   string         `json:"fingerprint" validate:"max=1000"`
	Company       *CompanyFields `json:"company"`
	Members       []MemberAdd    `json:"members" validate:"max=50,dive"`
}

// Member is a company member as stored.
type Member struct {
	MemberFields
	Token            string
	Application      string
	PartnerID        string
	Status           string
	Type             []string
	UIC              string
	UniqueIdentifier string
	User             string
	PlaceOfBirth     string
	Birthday         string
	Nationality      string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// IsUBO reports whether the member is a beneficial owner.
func (m Member) IsUBO() bool {
	for _, t := range m.Type {
		if t == "ubo" {
			return true
		}
	}
	return false
}

// IsLegalEntity reports whether the member is a legal entity.
func (m Member) IsLegalEntity() bool {
	for _, t := range m.Type {
		if t == "legal-entity" {
			return true
		}
	}
	return false
}

// DisplayName is the member's name for screens and screening.
func (m Member) DisplayName() string {
	if m.IsLegalEntity() && m.LegalName != "" {
		return m.LegalName
	}
	return strings.TrimSpace(m.FirstName + " " + m.LastName)
}

// CheckResult is the latest result of one automatic check.
type CheckResult struct {
	Name      string         `json:"name"`
	Status    string         `json:"status"`
	Details   map[string]any `json:"details"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// RiskFactor is one factor of an application's risk score.
type RiskFactor struct {
	Factor string `json:"factor"`
	Detail string `json:"detail"`
	Points int    `json:"points"`
}

// Application is an onboarding application with its company, members and
// check results.
type Application struct {
	Token         string
	PartnerID     string
	PartnerName   string
	Merchant      string
	Products      []string
	DueDiligence  string
	PayoutDetails []PayoutDetail
	IPAddress     string
	Fingerprint   string
	Processing    Processing
	Status        ApplicationStatus
	RiskScore     string
	RiskPoints    int
	RiskFactors   []RiskFactor
	// Revision counts the changes; CheckedRevision is the revision the
	// current check results are for.
	Revision        int
	CheckedRevision int
	Company         *CompanyFields
	Members         []Member
	Checks          []CheckResult
	// Set by the decision: the onboarded merchant and, for acquiring, the
	// MID and TID.
	OnboardedMerchant string
	MID, TID          string
	DecisionReason    string
	DecidedAt         *time.Time
	CreatedAt         time.Time
	UpdatedAt         time.Time
	// Review is the underwriters' state (queue, SLA, claim, four-eyes).
	Review ReviewState
}

// HasProduct reports whether the application asks for product p.
func (a Application) HasProduct(p string) bool {
	for _, x := range a.Products {
		if x == p {
			return true
		}
	}
	return false
}

// ValidatorConfig says which fields are mandatory, per partner (seed fact
// 9): for the application and the company always and by product, and for
// members by client type (individual or legal entity).
type ValidatorConfig struct {
	Application FieldRule           `json:"application"`
	Company     FieldRule           `json:"company"`
	Members     map[string][]string `json:"members"`
	Notes       string              `json:"notes,omitempty"`
}

// FieldRule lists mandatory fields: Always, and ByProduct for applications
// that ask for that product.
type FieldRule struct {
	Always    []string            `json:"always"`
	ByProduct map[string][]string `json:"by_product,omitempty"`
}

// Client types of ValidatorConfig.Members.
const (
	ClientIndividual  = "individual"
	ClientLegalEntity = "legal_entity"
)

// DefaultValidatorConfig is the sandbox configuration `emi partner create`
// attaches.
func DefaultValidatorConfig() ValidatorConfig {
	return ValidatorConfig{
		Application: FieldRule{Always: []string{"products", "due_diligence"}},
		Company: FieldRule{Always: []string{"legal_name", "country"},
			ByProduct: map[string][]string{"e-commerce": {"website"}}},
		Members: map[string][]string{
			ClientIndividual:  {"first_name", "last_name", "birthday", "nationality"},
			ClientLegalEntity: {"legal_name", "uic", "country"},
		},
		Notes: "sandbox default",
	}
}

// Mandatory returns the fields a rule makes mandatory for products.
func (r FieldRule) Mandatory(products []string) []string {
	out := append([]string(nil), r.Always...)
	for _, p := range products {
		for _, f := range r.ByProduct[p] {
			dup := false
			for _, o := range out {
				dup = dup || o == f
			}
			if !dup {
				out = append(out, f)
			}
		}
	}
	return out
}

// ErrNoValidatorConfig is internal: the partner has none (11008 to the
// client).
var ErrNoValidatorConfig = errors.New("no validator configuration")

// ApplicationFilter selects applications for the back office.
type ApplicationFilter struct {
	Status    ApplicationStatus
	PartnerID string
	Q         string
	Limit     int
}

// CompanyRow is a company in the back office's list.
type CompanyRow struct {
	Application       string            `db:"application"`
	PartnerID         string            `db:"partner_id"`
	PartnerName       string            `db:"partner_name"`
	LegalName         string            `db:"legal_name"`
	TradeName         string            `db:"trade_name"`
	UIC               string            `db:"uic"`
	Country           string            `db:"country"`
	Status            ApplicationStatus `db:"status"`
	OnboardedMerchant string            `db:"onboarded_merchant"`
	UpdatedAt         time.Time         `db:"updated_at"`
}

// WatchlistEntry is one name on the adverse-media watch list.
type WatchlistEntry struct {
	ID        string    `db:"id" json:"id"`
	Name      string    `db:"name" json:"name" validate:"required,max=300"`
	Category  string    `db:"category" json:"category" validate:"required,oneof=fraud corruption money-laundering terrorism organised-crime sanctions-evasion tax-crime other"`
	Note      string    `db:"note" json:"note" validate:"max=2000"`
	Source    string    `db:"source" json:"source" validate:"max=1000"`
	CreatedBy string    `db:"created_by" json:"created_by"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
}

// ActiveMembers returns the application's members whose status is active
// (those screened and counted for ownership).
func (a Application) ActiveMembers() []Member {
	var out []Member
	for _, m := range a.Members {
		if m.Status == "active" {
			out = append(out, m)
		}
	}
	return out
}
