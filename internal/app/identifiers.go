package app

import (
	"errors"

	"emi/internal/ukbank"
)

// identifiers issues account identifiers with emi's configured schemes:
// Bulgarian IBANs (bank code, branch, account type "10" for payment
// accounts) and UK account numbers under emi's sort code and modulus rule.
type identifiers struct {
	bg ukbank.BGScheme
	uk ukbank.Scheme
}

// bgAccountType is the 2-digit account type of emi's payment accounts.
const bgAccountType = "10"

// BGIBAN implements service.Identifiers.
func (i identifiers) BGIBAN(serial int64) (string, string, error) {
	iban, err := i.bg.IBAN(bgAccountType, serial)
	return iban, i.bg.BIC, err
}

// UKAccount implements service.Identifiers.
func (i identifiers) UKAccount(serial int64) (string, string, string, string, bool, error) {
	number, err := i.uk.AccountNumber(int(serial))
	if errors.Is(err, ukbank.ErrNoCheckDigit) {
		return "", "", "", "", false, nil
	}
	if err != nil {
		return "", "", "", "", false, err
	}
	iban, err := i.uk.IBAN(number)
	if err != nil {
		return "", "", "", "", false, err
	}
	return number, i.uk.SortCode, iban, i.uk.BIC, true, nil
}
