package ukbank

import (
	"errors"
	"fmt"

	"emi/internal/iban"
)

// Scheme is emi's UK identifier scheme: its own sort code and the modulus
// rule Pay.UK assigns to it (configuration), with the BIC and the four-letter
// bank code that GB IBANs carry.
type Scheme struct {
	// SortCode is emi's sort code, six digits without hyphens.
	SortCode string
	// Rule is the weight-table row Pay.UK publishes for SortCode.
	Rule Rule
	// BIC is emi's business identifier code (8 or 11 characters, country
	// GB).
	BIC string
	// BankCode is the bank code of GB IBANs: four upper-case letters, the
	// first four characters of BIC.
	BankCode string
}

// MaxSerial is the largest serial AccountNumber accepts: account numbers are
// a seven-digit serial followed by one check digit.
const MaxSerial = 9_999_999

// Errors of Scheme and BGScheme.
var (
	// ErrBankCode: a bank code that is not four upper-case letters A-Z.
	ErrBankCode = errors.New("ukbank: bank code must be 4 upper-case letters")
	// ErrBIC: a BIC that is not 4 letters, the scheme's country code and 2
	// (or 5) upper-case letters or digits, or whose first four characters
	// are not the bank code.
	ErrBIC = errors.New("ukbank: BIC must be 8 or 11 characters, start with the bank code and carry the scheme's country")
	// ErrCheckWeight: a rule under which two different last digits of the
	// account number give the same remainder, so that the last digit
	// cannot serve as a check digit (see Scheme.Validate).
	ErrCheckWeight = errors.New("ukbank: the weight of the account number's last digit cannot make it a check digit")
	// ErrSerial: a serial outside the range the scheme accepts.
	ErrSerial = errors.New("ukbank: serial out of range")
	// ErrNoCheckDigit: no last digit makes the serial's account number pass
	// a MOD11 rule; the caller takes the next serial.
	ErrNoCheckDigit = errors.New("ukbank: no check digit satisfies the rule for this serial")
	// ErrFailsRule: an account number that fails the scheme's modulus
	// check, so it is not one of the scheme's.
	ErrFailsRule = errors.New("ukbank: account number fails the sort code's modulus check")
)

// DefaultScheme is the sandbox's UK scheme. Every value is a sandbox choice,
// to be replaced by the allocation Pay.UK (sort code and its valacdos row)
// and SWIFT (BIC) make before any live use:
//
//   - SortCode 040069, in the 04-00 series that several e-money and
//     payment institutions use. It is absent from the published
//     valacdos.txt read for this package, so outside validators presume its
//     accounts valid (the specification's rule for sort codes not in the
//     table). 040004 was avoided: the table lists it (a DBLAL row), so it is
//     allocated to an existing institution.
//   - Rule MOD11 with weights 0 0 0 0 0 0 8 7 6 5 4 3 2 1, a common row of
//     the table (for example 010004-016715 and 102400-107999): the
//     sort code is ignored and the last account digit, of weight 1, is the
//     check digit. One serial in eleven has no check digit (ErrNoCheckDigit).
//   - BIC EMIXGB2L (bank EMIX, country GB, location 2L) and bank code EMIX.
var DefaultScheme = Scheme{
	SortCode: "040069",
	Rule:     Rule{Method: MOD11, Weights: [14]int{0, 0, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}},
	BIC:      "EMIXGB2L",
	BankCode: "EMIX",
}

// Validate checks the scheme's configuration: a six-digit sort code, a bank
// code of four upper-case letters, a BIC of 8 or 11 characters that starts
// with the bank code and has country GB, and a valid rule (Rule.Validate)
// under which the account number's last digit works as a check digit: the ten
// digits 0-9 in that place must give ten different remainders, so that at
// most one of them passes for a given serial (MOD10 and DBLAL: exactly one;
// MOD11: one, or none for about one serial in eleven).
func (s Scheme) Validate() error {
	if !digitsOfLen(s.SortCode, 6) {
		return ErrSortCode
	}
	if !upperLetters(s.BankCode, 4) {
		return ErrBankCode
	}
	if err := checkBIC(s.BIC, "GB", s.BankCode); err != nil {
		return err
	}
	if err := s.Rule.Validate(); err != nil {
		return err
	}
	if !checkDigitDecides(s.Rule) {
		return ErrCheckWeight
	}
	return nil
}

// Valid reports whether account is eight digits and passes the scheme's
// modulus rule under its sort code. It is false for an invalid scheme.
func (s Scheme) Valid(account string) bool {
	if s.Validate() != nil {
		return false
	}
	ok, err := Check(s.Rule, s.SortCode, account)
	return err == nil && ok
}

// AccountNumber turns a 7-digit serial (0..MaxSerial) into the 8-digit
// account number that passes the scheme's rule: the serial, zero-padded to
// seven digits, followed by the check digit that makes the rule hold. Distinct
// serials give distinct account numbers. It returns an error wrapping
// ErrNoCheckDigit when no digit makes it valid for that serial (possible for
// MOD11): the caller then takes the next serial. An invalid scheme
// (Validate) or serial (ErrSerial) is an error too.
func (s Scheme) AccountNumber(serial int) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	if serial < 0 || serial > MaxSerial {
		return "", fmt.Errorf("%w: %d is not in 0..%d", ErrSerial, serial, MaxSerial)
	}
	b := []byte(fmt.Sprintf("%07d0", serial))
	for c := byte('0'); c <= '9'; c++ {
		b[7] = c
		if ok, _ := Check(s.Rule, s.SortCode, string(b)); ok {
			return string(b), nil
		}
	}
	return "", fmt.Errorf("%w (serial %d)", ErrNoCheckDigit, serial)
}

// IBAN returns the GB IBAN of one of the scheme's accounts: GB, the check
// digits, the bank code, the sort code and the account number (iban.Build),
// e.g. GB..EMIX04006912345679 for DefaultScheme. The account must be eight
// digits (ErrAccountNumber) and pass the scheme's rule (ErrFailsRule); the
// scheme must be valid (Validate).
func (s Scheme) IBAN(account string) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	ok, err := Check(s.Rule, s.SortCode, account)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", ErrFailsRule
	}
	return iban.Build("GB", s.BankCode+s.SortCode+account)
}

// checkDigitDecides reports whether the ten digits in the last place (weight
// h) give ten different contributions modulo the rule's modulus, so that at
// most one of them completes a given serial.
func checkDigitDecides(r Rule) bool {
	m, w := r.modulus(), r.Weights[13]
	var seen [11]bool
	for d := range 10 {
		c := ((r.term(d, w) % m) + m) % m
		// #nosec G602 -- c is reduced modulo the rule's modulus (10 or 11)
		if seen[c] {
			return false
		}
		seen[c] = true // #nosec G602 -- as above
	}
	return true
}

// checkBIC checks a BIC (ISO 9362): 4 letters (which must be bankCode), the
// country, 2 upper-case letters or digits for the location and optionally 3
// for the branch.
func checkBIC(bic, country, bankCode string) error {
	if (len(bic) != 8 && len(bic) != 11) || bic[:4] != bankCode || bic[4:6] != country || !upperAlnum(bic[6:]) {
		return ErrBIC
	}
	return nil
}

// upperLetters reports whether s is exactly n upper-case ASCII letters.
func upperLetters(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// upperAlnum reports whether s consists of upper-case ASCII letters and
// digits.
func upperAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
