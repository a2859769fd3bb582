// Package iban validates and builds International Bank Account Numbers
// (ISO 13616) and checks the UK domestic sort code and account number.
//
// The country table follows the SWIFT IBAN registry: every country listed
// there, with the exact IBAN length the registry gives it. Territories that
// the registry files under another country's code (French overseas
// departments under FR, the Channel Islands under GB, Åland under FI) use that
// code, as their IBANs do.
//
// The errors of Validate are short, client-readable reasons, meant to be shown
// as "must be a valid IBAN: <reason>".
package iban

import (
	"errors"
	"slices"
	"strings"
)

// Reasons an IBAN is invalid. Their messages are written to be shown to API
// clients after "must be a valid IBAN: ".
var (
	// ErrEmpty: nothing left after removing spaces.
	ErrEmpty = errors.New("is empty")
	// ErrChars: a character other than A-Z, a-z, 0-9 or a space.
	ErrChars = errors.New("may contain only letters, digits and spaces")
	// ErrCountry: the first two characters are not the code of a country
	// in the IBAN registry.
	ErrCountry = errors.New("has an unknown country code")
	// ErrLength: the IBAN is longer or shorter than its country's IBANs.
	ErrLength = errors.New("has the wrong length for its country")
	// ErrCheckDigits: characters 3 and 4 are not digits in 02..98, or the
	// ISO 7064 mod-97 check fails.
	ErrCheckDigits = errors.New("fails the check-digit test (mod 97)")
)

// lengths maps each country of the SWIFT IBAN registry (ISO 13616) to the
// length of its IBANs, country code and check digits included.
var lengths = map[string]int{
	"AD": 24, // Andorra
	"AE": 23, // United Arab Emirates
	"AL": 28, // Albania
	"AT": 20, // Austria
	"AZ": 28, // Azerbaijan
	"BA": 20, // Bosnia and Herzegovina
	"BE": 16, // Belgium
	"BG": 22, // Bulgaria
	"BH": 22, // Bahrain
	"BI": 27, // Burundi
	"BR": 29, // Brazil
	"BY": 28, // Belarus
	"CH": 21, // Switzerland
	"CR": 22, // Costa Rica
	"CY": 28, // Cyprus
	"CZ": 24, // Czechia
	"DE": 22, // Germany
	"DJ": 27, // Djibouti
	"DK": 18, // Denmark
	"DO": 28, // Dominican Republic
	"EE": 20, // Estonia
	"EG": 29, // Egypt
	"ES": 24, // Spain
	"FI": 18, // Finland (and Åland)
	"FK": 18, // Falkland Islands
	"FO": 18, // Faroe Islands
	"FR": 27, // France (and its overseas departments and territories)
	"GB": 22, // United Kingdom (and Guernsey, Jersey, Isle of Man)
	"GE": 22, // Georgia
	"GI": 23, // Gibraltar
	"GL": 18, // Greenland
	"GR": 27, // Greece
	"GT": 28, // Guatemala
	"HN": 28, // Honduras
	"HR": 21, // Croatia
	"HU": 28, // Hungary
	"IE": 22, // Ireland
	"IL": 23, // Israel
	"IQ": 23, // Iraq
	"IS": 26, // Iceland
	"IT": 27, // Italy
	"JO": 30, // Jordan
	"KW": 30, // Kuwait
	"KZ": 20, // Kazakhstan
	"LB": 28, // Lebanon
	"LC": 32, // Saint Lucia
	"LI": 21, // Liechtenstein
	"LT": 20, // Lithuania
	"LU": 20, // Luxembourg
	"LV": 21, // Latvia
	"LY": 25, // Libya
	"MC": 27, // Monaco
	"MD": 24, // Moldova
	"ME": 22, // Montenegro
	"MK": 19, // North Macedonia
	"MN": 20, // Mongolia
	"MR": 27, // Mauritania
	"MT": 31, // Malta
	"MU": 30, // Mauritius
	"NI": 28, // Nicaragua
	"NL": 18, // Netherlands
	"NO": 15, // Norway
	"OM": 23, // Oman
	"PK": 24, // Pakistan
	"PL": 28, // Poland
	"PS": 29, // Palestine
	"PT": 25, // Portugal
	"QA": 29, // Qatar
	"RO": 24, // Romania
	"RS": 22, // Serbia
	"RU": 33, // Russia
	"SA": 24, // Saudi Arabia
	"SC": 31, // Seychelles
	"SD": 18, // Sudan
	"SE": 24, // Sweden
	"SI": 19, // Slovenia
	"SK": 24, // Slovakia
	"SM": 27, // San Marino
	"SO": 23, // Somalia
	"ST": 25, // Sao Tome and Principe
	"SV": 28, // El Salvador
	"TL": 23, // Timor-Leste
	"TN": 24, // Tunisia
	"TR": 26, // Türkiye
	"UA": 29, // Ukraine
	"VA": 22, // Vatican City State
	"VG": 24, // British Virgin Islands
	"XK": 20, // Kosovo
	"YE": 30, // Yemen
}

// CountryLength returns the IBAN length of a country of the IBAN registry
// (an upper-case ISO 3166 alpha-2 code) and whether the registry lists it.
func CountryLength(country string) (int, bool) {
	n, ok := lengths[country]
	return n, ok
}

// Countries returns the codes of the countries in the IBAN registry table,
// sorted.
func Countries() []string {
	codes := make([]string, 0, len(lengths))
	for c := range lengths {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	return codes
}

// Normalize returns s without spaces, tabs and no-break spaces, with the
// ASCII letters upper-cased. Other characters are left as they are, so that
// Validate rejects them instead of a case mapping turning them into letters.
func Normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == ' ' || r == '\t' || r == '\u00a0' || r == '\u202f':
			// dropped
		case 'a' <= r && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Validate checks an IBAN as written by a person: it is normalised first (see
// Normalize), so "gb82 west 1234 5698 7654 32" is valid. The checks, in order:
// only letters and digits (ErrChars), a country of the IBAN registry
// (ErrCountry), that country's exact length (ErrLength), check digits 02..98
// and the ISO 7064 mod-97 test (ErrCheckDigits). It does not check the
// country-specific layout of the BBAN.
func Validate(s string) error {
	n := Normalize(s)
	if n == "" {
		return ErrEmpty
	}
	if !alnum(n) {
		return ErrChars
	}
	if len(n) < 2 {
		return ErrCountry
	}
	want, ok := lengths[n[:2]]
	if !ok {
		return ErrCountry
	}
	if len(n) != want {
		return ErrLength
	}
	if !isDigit(n[2]) || !isDigit(n[3]) {
		return ErrCheckDigits
	}
	if cd := int(n[2]-'0')*10 + int(n[3]-'0'); cd < 2 || cd > 98 {
		return ErrCheckDigits
	}
	if mod97(n[4:], n[:4]) != 1 {
		return ErrCheckDigits
	}
	return nil
}

// CheckDigits returns the two check digits ("02".."98") of the IBAN made of
// country and bban. Both are normalised first (see Normalize); the country
// must be in the IBAN registry and the BBAN must consist of letters and digits
// and have the length the country's IBANs need.
func CheckDigits(country, bban string) (string, error) {
	country, bban = Normalize(country), Normalize(bban)
	if len(country) != 2 {
		return "", ErrCountry
	}
	want, ok := lengths[country]
	if !ok {
		return "", ErrCountry
	}
	if !alnum(bban) {
		return "", ErrChars
	}
	if 4+len(bban) != want {
		return "", ErrLength
	}
	cd := 98 - mod97(bban, country+"00")
	return string([]byte{byte('0' + cd/10), byte('0' + cd%10)}), nil
}

// Build returns the IBAN made of country, its check digits and bban, without
// spaces; the errors are those of CheckDigits. The result always passes
// Validate.
func Build(country, bban string) (string, error) {
	cd, err := CheckDigits(country, bban)
	if err != nil {
		return "", err
	}
	s := Normalize(country) + cd + Normalize(bban)
	if err := Validate(s); err != nil {
		return "", err
	}
	return s, nil
}

// ValidSortCode reports whether s is a UK sort code: exactly six digits, with
// no hyphens or spaces (the caller strips nothing).
func ValidSortCode(s string) bool { return digitsOfLen(s, 6) }

// ValidUKAccountNumber reports whether s is a UK bank account number: exactly
// eight digits, with no spaces.
func ValidUKAccountNumber(s string) bool { return digitsOfLen(s, 8) }

// mod97 returns the ISO 7064 MOD 97-10 remainder of the number spelt by a
// followed by b, letters counting as two digits (A=10 ... Z=35). It works
// digit by digit, so any length fits in an int. a and b must be upper-case
// alphanumeric.
func mod97(a, b string) int {
	r := 0
	for _, s := range [2]string{a, b} {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if isDigit(c) {
				r = (r*10 + int(c-'0')) % 97
			} else {
				r = (r*100 + int(c-'A') + 10) % 97
			}
		}
	}
	return r
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// alnum reports whether s consists of upper-case ASCII letters and digits.
func alnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

func digitsOfLen(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
