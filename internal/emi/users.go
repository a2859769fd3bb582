package emi

import (
	"reflect"
	"strings"
	"time"
)

// Allowed values of the user fields that the seed lists (seed "User").
var (
	OccupationPositions = []string{"Manager", "Professional", "Technicians and associate professional",
		"Clerical support worker", "Service and sales worker", "Skilled agricultural, forestry and fishery worker",
		"Craft and related trades worker", "Plant and machine operator, and assemblers", "Elementary occupation",
		"NOT APPLICABLE"}
	EmploymentStatuses = []string{"Private sector employee", "Government sector or local authority employee",
		"Self-employed individual/professional", "Business owner", "Student", "Retired", "Unemployed",
		"Other (please specify)"}
	IncomeBands = []string{"Less than 1000 EUR", "Between 1001 and 5000 EUR", "Between 5001 and 10000 EUR",
		"Between 10001 and 15000 EUR", "More than 15 000 EUR"}
	TransferFrequencies  = []string{"Less than 2 times", "Between 3-5 times", "More than 6 times"}
	ProofOfIdentityTypes = []string{"ID", "Passport", "Driving license – UK only", "Other"}
	RiskScores           = []string{"Low", "Medium", "High"}
	UserTypes            = []string{"card-usage", "default"}
)

// Document file types and document types of the seed's Document object.
var (
	FileTypes     = []string{"pdf", "docx", "xlxs", "jpg", "jpeg", "png", "mov", "mp4"}
	DocumentTypes = []string{"idcard", "bankstmt", "bill", "other", "idcard-front", "idcard-back", "idcard-selfie",
		"passport-back", "passport-selfie", "passport", "driving-license-selfie", "selfie", "driving-license-front",
		"driving-license-back", "sharebook-excerpt", "management-contract", "moms-of-the-board", "activity-license",
		"bank-account", "bulstat-registration", "vat-registration", "patent-law", "power-of-attorney",
		"ubo-declaration", "frame-contract", "sample-of-signatures", "face-compare", "proof", "recent-excerpt",
		"incorporation-documents", "share_holders_list", "other_corporate", "signature", "id_card_passport_photo",
		"biometric-residence-permit-front", "biometric-residence-permit-back", "kyc-vendor-report",
		"fatca-declaration", "sow-declaration", "sof-desclaration", "resident-permit-eu-uk-front",
		"resident-permit-eu-uk-back"}
)

// MaxDocumentBytes is the largest decoded document accepted (10 MiB).
const MaxDocumentBytes = 10 << 20

// MaxFreeText bounds the seed's "string (0,any)" fields. The seed sets no
// bound; a real product needs one (a profile field is shown on one line in
// the back office and copied into reports), so 1,000 characters, far above
// any real value, is the decision. Fields with a seed bound keep it.
const MaxFreeText = 1000

// Document is one document of a request (seed "Document object"): File is
// base64. The service checks that the declared FileType matches the content.
type Document struct {
	File         string `json:"file" validate:"required"`
	FileType     string `json:"file_type" validate:"required,enum_file_type"`
	DocumentType string `json:"document_type" validate:"required,enum_document_type"`
}

// StoredDocument is a document's metadata as kept (the sealed content is
// read separately, for staff with the right permission).
type StoredDocument struct {
	Token        string    `db:"token"`
	PartnerID    string    `db:"partner_id"`
	OwnerType    string    `db:"owner_type"`
	OwnerToken   string    `db:"owner_token"`
	DocumentType string    `db:"document_type"`
	FileType     string    `db:"file_type"`
	ContentType  string    `db:"content_type"`
	Size         int       `db:"size"`
	SHA256       []byte    `db:"sha256"`
	CreatedAt    time.Time `db:"created_at"`
}

// UserFields are the user fields a partner may set at creation and change
// with user_update (seed "User", without the create-only fields).
type UserFields struct {
	Merchant    string `json:"merchant" validate:"omitempty,min=32,max=36"`
	FirstName   string `json:"first_name" validate:"required,max=1000,name"`
	LastName    string `json:"last_name" validate:"required,max=1000,name"`
	MiddleName  string `json:"middle_name" validate:"max=255"`
	Address1    string `json:"address1" validate:"max=1000"`
	Address2    string `json:"address2" validate:"max=1000"`
	Country     string `json:"country" validate:"omitempty,country"`
	City        string `json:"city" validate:"max=1000"`
	Zip         string `json:"zip" validate:"max=1000"`
	Phone       string `json:"phone" validate:"omitempty,phone"`
	MobilePhone string `json:"mobile_phone" validate:"omitempty,phone"`
	Language    string `json:"language" validate:"max=1000"`
	Nationality string `json:"nationality" validate:"omitempty,country"`
	Birthday    string `json:"birthday" validate:"omitempty,pastdate"`

	PlaceOfBirth          string `json:"place_of_birth" validate:"max=1000"`
	Occupation            string `json:"occupation" validate:"max=1000"`
	Education             string `json:"education" validate:"max=1000"`
	Info                  string `json:"info" validate:"max=1000"`
	MoneyDeclaration      string `json:"money_declaration" validate:"max=1000"`
	SourceOfFunds         string `json:"source_of_funds" validate:"max=1000"`
	ExternalReference     string `json:"external_reference" validate:"max=1000"`
	IsSAN                 string `json:"is_san" validate:"max=1000"`
	IsSIP                 string `json:"is_sip" validate:"max=1000"`
	PEPsDeclaration       string `json:"peps_declaration" validate:"max=1000"`
	PEP                   string `json:"pep" validate:"max=1000"`
	PEPRelative           string `json:"pep_relative" validate:"max=1000"`
	UniqueIdentifier      string `json:"unique_identifier" validate:"max=1000"`
	IDPassportValidity    string `json:"id_passport_validity" validate:"omitempty,date"`
	IDPassportNumber      string `json:"id_passport_number" validate:"max=1000"`
	IDIssueDate           string `json:"id_issue_date" validate:"omitempty,pastdate"`
	VulnerabilityType     string `json:"vulnerability_type" validate:"max=1000"`
	AccessibilityRequired string `json:"accessibility_required" validate:"max=1000"`
	RegistrationLat       string `json:"registration_lat" validate:"omitempty,latitude"`
	RegistrationLng       string `json:"registration_lng" validate:"omitempty,longitude"`
	RegistrationCountry   string `json:"registration_country" validate:"max=1000"`
	RegistrationCity      string `json:"registration_city" validate:"max=1000"`

	OtherOccupation            string   `json:"other_occupation" validate:"max=255"`
	OtherSourceOfFunds         string   `json:"other_source_of_funds" validate:"max=255"`
	OtherPurposeOfWalletUsage  string   `json:"other_purpose_of_wallet_usage" validate:"max=255"`
	OtherEmploymentStatus      string   `json:"other_employment_status" validate:"max=255"`
	ProofOfIdentityType        string   `json:"proof_of_identity_type" validate:"omitempty,max=100,enum_proof_of_identity_type"`
	CountryIssuingIDCard       string   `json:"country_issuing_id_card" validate:"omitempty,max=2,country"`
	AdditionalNationality      []string `json:"additional_nationality" validate:"max=20,dive,country"`
	PurposeOfWalletUsage       []string `json:"purpose_of_wallet_usage" validate:"max=20,dive,max=255"`
	TypeOfIncomingFunds        []string `json:"type_of_incoming_funds" validate:"max=20,dive,max=255"`
	OccupationPosition         string   `json:"occupation_position" validate:"omitempty,max=255,enum_occupation_position"`
	EmploymentStatus           string   `json:"employment_status" validate:"omitempty,max=255,enum_employment_status"`
	ClientMonthlyNetIncome     string   `json:"client_monthly_net_income" validate:"omitempty,max=255,enum_income_band"`
	ExpectedIncomingMonthlyEUR string   `json:"expected_incoming_monthly_eur" validate:"omitempty,max=255,enum_income_band"`
	ExpectedOutgoingMonthlyEUR string   `json:"expected_outgoing_monthly_eur" validate:"omitempty,max=255,enum_income_band"`
	ExpectedMonthlyFrequency   string   `json:"expected_monthly_frequency_incoming_transfer" validate:"omitempty,max=255,enum_transfer_frequency"`
	SanctionMediaScreening     *bool    `json:"sanction_media_screening" nullable:"true"`
	RiskScore                  string   `json:"risk_score" validate:"omitempty,max=100,enum_risk_score"`
	SpecifiedUSPerson          *bool    `json:"specified_us_person" nullable:"true"`
}

// UserCreate is the request of user_create: the fields plus the create-only
// ones. first_name, last_name and email are required (a decision: the seed
// makes every field optional, but a person without a name cannot be
// screened and without an e-mail cannot be told apart, seed -2).
type UserCreate struct {
	UserFields
	Email          string     `json:"email" validate:"required,max=254,email"`
	AML            string     `json:"aml" validate:"omitempty,max=36"`
	RegistrationIP string     `json:"registration_ip" validate:"omitempty,ip"`
	Type           string     `json:"type" validate:"omitempty,enum_user_type"`
	Documents      []Document `json:"documents" validate:"max=10,dive"`
	Company        string     `json:"company" validate:"max=1000"`
}

// UserCreateOnlyFields are refused by user_update.
var UserCreateOnlyFields = []string{"email", "aml", "registration_ip", "type", "documents", "company"}

// UserPatch is the request of user_update: Present names the fields the
// partner sent (a field left out is unchanged; one sent as null or "" is
// cleared, unless a rule requires it).
type UserPatch struct {
	Fields  UserFields
	Present map[string]bool
	// Refused are problems found while decoding (create-only fields,
	// wrong types); they are reported with the others and nothing changes.
	Refused []FieldError
}

// UserStatus is a user's life-cycle state.
type UserStatus string

// User statuses. A removed user is archived: kept, invisible to the API.
const (
	UserActive  UserStatus = "active"
	UserRemoved UserStatus = "removed"
)

// KYCStatus is where a user's identification stands; it follows the user's
// latest KYC session.
type KYCStatus string

// KYC statuses (contract §6 plus "none" before any session).
const (
	KYCNone      KYCStatus = "none"
	KYCPending   KYCStatus = "pending"
	KYCSubmitted KYCStatus = "submitted"
	KYCApproved  KYCStatus = "approved"
	KYCRejected  KYCStatus = "rejected"
	KYCExpired   KYCStatus = "expired"
)

// User is a natural person of a partner.
type User struct {
	UserFields
	Token          string
	PartnerID      string
	MasterMerchant string
	Email          string
	AML            string
	RegistrationIP string
	Type           string
	Company        string
	Status         UserStatus
	KYCStatus      KYCStatus
	CreatedAt      time.Time
	UpdatedAt      time.Time
	RemovedAt      *time.Time
}

// FullName is first, middle and last name joined.
func (u User) FullName() string {
	return strings.Join(strings.Fields(u.FirstName+" "+u.MiddleName+" "+u.LastName), " ")
}

// UserFilter selects users for the back office. Q matches the name, e-mail,
// phone or token. Removed users are included (marked).
type UserFilter struct {
	Q         string
	PartnerID string
	KYCStatus KYCStatus
	Limit     int
	// Before pages backwards: the created_at and token of the last row seen.
	BeforeAt    time.Time
	BeforeToken string
	// Sort is another order than the newest first (name, email, kyc,
	// created); with it, BeforeToken alone names the last row seen and the
	// page holds the rows after it in that order.
	Sort SortOrder
}

// ApplyUserPatch copies the fields named in p.Present from p.Fields onto f.
func ApplyUserPatch(f *UserFields, p UserPatch) {
	dst := reflect.ValueOf(f).Elem()
	src := reflect.ValueOf(p.Fields)
	t := dst.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if p.Present[name] {
			dst.Field(i).Set(src.Field(i))
		}
	}
}

// UserFieldNames lists the JSON names of UserFields, in declaration order.
func UserFieldNames() []string {
	t := reflect.TypeFor[UserFields]()
	out := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}
