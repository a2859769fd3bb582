package validate

import (
	"reflect"
	"time"
	"unicode"

	"github.com/go-playground/validator/v10"

	"emi/internal/emi"
)

// Today is the date the past-date rule compares with; tests may replace it.
var Today = func() time.Time { return time.Now().UTC() }

// registerRules adds the rules the service's inputs share:
//   - country: an ISO 3166-1 alpha-2 code (validator's own list of the
//     current codes), upper case as ISO writes them;
//   - currency: an ISO 4217 code (validator's own list);
//   - date: YYYY-MM-DD naming a day that exists; pastdate: and not after
//     today (UTC);
//   - phone: 6 to 15 digits, optional leading +, with spaces, dashes, dots
//     or brackets between them (E.164 allows 15 digits);
//   - name: a person's name: letters and marks of any script, with spaces,
//     apostrophes, dots and hyphens, at least one letter, no digits or
//     control characters;
//   - emboss: what card embossers print: capital and small Latin letters,
//     digits, space and . , ' - / & (no diacritics: embossing machines
//     have no glyphs for them);
//   - pin: a card PIN, 4 to 6 ASCII digits;
//   - enum_*: the allowed values of the seed's lists (see emi).
func (v *Validator) registerRules() {
	must := func(tag string, fn validator.Func) {
		if err := v.v.RegisterValidation(tag, fn); err != nil {
			panic(err) // a programming error caught by every test
		}
	}
	must("country", func(fl validator.FieldLevel) bool {
		return v.v.Var(fl.Field().String(), "iso3166_1_alpha2") == nil
	})
	must("currency", func(fl validator.FieldLevel) bool {
		return v.v.Var(fl.Field().String(), "iso4217") == nil
	})
	must("date", func(fl validator.FieldLevel) bool {
		_, ok := ParseDate(fl.Field().String())
		return ok
	})
	must("pastdate", func(fl validator.FieldLevel) bool {
		d, ok := ParseDate(fl.Field().String())
		return ok && !d.After(Today())
	})
	must("phone", func(fl validator.FieldLevel) bool { return ValidPhone(fl.Field().String()) })
	must("name", func(fl validator.FieldLevel) bool { return ValidName(fl.Field().String()) })
	must("emboss", func(fl validator.FieldLevel) bool { return ValidEmboss(fl.Field().String()) })
	must("pin", func(fl validator.FieldLevel) bool { return ValidPIN(fl.Field().String()) })
	v.Enum("enum_occupation_position", emi.OccupationPositions)
	v.Enum("enum_employment_status", emi.EmploymentStatuses)
	v.Enum("enum_income_band", emi.IncomeBands)
	v.Enum("enum_transfer_frequency", emi.TransferFrequencies)
	v.Enum("enum_proof_of_identity_type", emi.ProofOfIdentityTypes)
	v.Enum("enum_risk_score", emi.RiskScores)
	v.Enum("enum_user_type", emi.UserTypes)
	v.Enum("enum_file_type", emi.FileTypes)
	v.Enum("enum_document_type", emi.DocumentTypes)
	v.Enum("enum_product", emi.Products)
	v.Enum("enum_due_diligence", emi.DueDiligences)
	v.Enum("enum_member_type", emi.MemberTypes)
	v.Enum("enum_legal_form", emi.LegalForms)
}

// Enum registers rule tag: a string field must be one of values (exactly,
// case-sensitive). Values may contain commas and spaces, which validator's
// oneof cannot express. The failure message lists the values.
func (v *Validator) Enum(tag string, values []string) {
	set := make(map[string]bool, len(values))
	for _, s := range values {
		set[s] = true
	}
	v.enums[tag] = values
	if err := v.v.RegisterValidation(tag, func(fl validator.FieldLevel) bool {
		f := fl.Field()
		return f.Kind() == reflect.String && set[f.String()]
	}); err != nil {
		panic(err)
	}
}

// ParseDate parses YYYY-MM-DD strictly (a day that exists, years 1000 to
// 9999), returning midnight UTC.
func ParseDate(s string) (time.Time, bool) {
	if len(s) != 10 {
		return time.Time{}, false
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil || d.Year() < 1000 {
		return time.Time{}, false
	}
	return d, true
}

// ValidPhone reports whether s reads as a phone number (see registerRules).
func ValidPhone(s string) bool {
	digits := 0
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '+' && i == 0:
		case r == ' ' || r == '-' || r == '.' || r == '(' || r == ')':
		default:
			return false
		}
	}
	return digits >= 6 && digits <= 15
}

// ValidName reports whether s reads as a person's name (see registerRules).
func ValidName(s string) bool {
	letters := 0
	for _, r := range s {
		switch {
		case unicode.IsLetter(r):
			letters++
		case unicode.Is(unicode.Mn, r), r == ' ', r == '\'', r == '’', r == '.', r == '-':
		default:
			return false
		}
	}
	return letters > 0
}

// ValidEmboss reports whether s can be embossed on a card (see
// registerRules). The empty string is valid.
func ValidEmboss(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case r == ' ' || r == '.' || r == ',' || r == '\'' || r == '-' || r == '/' || r == '&':
		default:
			return false
		}
	}
	return true
}

// ValidPIN reports whether s is a card PIN: 4 to 6 ASCII digits.
func ValidPIN(s string) bool {
	if len(s) < 4 || len(s) > 6 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
