package ukbank

import (
	"errors"
	"fmt"

	"emi/internal/iban"
)

// BGScheme builds Bulgarian IBANs: BG + check digits + 4-letter bank code +
// 4-digit branch + 2-digit account type + 8 characters. This is the layout of
// the SWIFT IBAN registry (BG2!n4!a4!n2!n8!c, example BG80BNBG96611020345678)
// and of BNB Ordinance No 13: the bank code is the first four letters of the
// BIC, the branch identifies the BAE (business addressable entity) within the
// bank, the two digits after it give the account type, and the institution
// sets the last eight characters. emi fills the last eight with a zero-padded
// decimal serial.
type BGScheme struct {
	// BankCode is the first four letters of BIC.
	BankCode string
	// Branch is the four-digit BAE number.
	Branch string
	// BIC is the institution's BIC (8 or 11 characters, country BG).
	BIC string
}

// Account types that emi puts in Bulgarian IBANs. The values are emi's
// (sandbox) convention, the only two IBAN accepts.
const (
	// BGCurrent ("10") is a customer's current (payment) account: the type
	// of the registry's example IBAN BG80BNBG96611020345678.
	BGCurrent = "10"
	// BGBusiness ("20") is a business customer's current (payment)
	// account.
	BGBusiness = "20"
)

// MaxBGSerial is the largest serial BGScheme.IBAN accepts: the eight last
// characters are the serial in decimal.
const MaxBGSerial = 99_999_999

// Errors of BGScheme.
var (
	// ErrBranch: a branch (BAE number) that is not four digits.
	ErrBranch = errors.New("ukbank: branch must be exactly 4 digits")
	// ErrAccountType: an account type other than BGCurrent and BGBusiness.
	ErrAccountType = errors.New("ukbank: unknown Bulgarian account type (want 10 or 20)")
)

// DefaultBG is the sandbox's Bulgarian scheme: bank code EMIB, branch (BAE)
// 9661, BIC EMIBBGSF (bank EMIB, country BG, location SF as Sofia BICs
// have). All three are sandbox choices, to be replaced by the codes SWIFT and
// the BNB assign before any live use.
var DefaultBG = BGScheme{BankCode: "EMIB", Branch: "9661", BIC: "EMIBBGSF"}

// Validate checks the configuration: a bank code of four upper-case letters,
// a four-digit branch and a BIC of 8 or 11 characters that starts with the
// bank code and has country BG.
func (b BGScheme) Validate() error {
	if !upperLetters(b.BankCode, 4) {
		return ErrBankCode
	}
	if !digitsOfLen(b.Branch, 4) {
		return ErrBranch
	}
	return checkBIC(b.BIC, "BG", b.BankCode)
}

// IBAN builds the IBAN of an account: accountType is BGCurrent ("10") or
// BGBusiness ("20"), and serial (0..MaxBGSerial) becomes the eight last
// characters, zero-padded decimal digits. Distinct (type, serial) pairs give
// distinct IBANs, and every one passes iban.Validate. An invalid scheme
// (Validate), type (ErrAccountType) or serial (ErrSerial) is an error.
func (b BGScheme) IBAN(accountType string, serial int64) (string, error) {
	if err := b.Validate(); err != nil {
		return "", err
	}
	if accountType != BGCurrent && accountType != BGBusiness {
		return "", ErrAccountType
	}
	if serial < 0 || serial > MaxBGSerial {
		return "", fmt.Errorf("%w: %d is not in 0..%d", ErrSerial, serial, MaxBGSerial)
	}
	return iban.Build("BG", fmt.Sprintf("%s%s%s%08d", b.BankCode, b.Branch, accountType, serial))
}
