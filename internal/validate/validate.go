// Package validate wraps go-playground/validator: one validator for the whole
// service layer, field paths in JSON form (payout_details[0].iban), and one
// readable message per failed rule. Feature areas register their own rules
// (IBAN, Luhn, country codes) here so that every surface shares them.
package validate

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/go-playground/validator/v10"

	"emi/internal/emi"
)

// Validator checks input structs against their `validate` tags.
type Validator struct {
	v *validator.Validate
	// enums are the allowed values of the enum_* rules, for messages.
	enums map[string][]string
}

// New returns a Validator whose field paths use the `json` tag names.
func New() *Validator {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		if name == "" {
			return f.Name
		}
		return name
	})
	val := &Validator{v: v, enums: map[string][]string{}}
	val.registerRules()
	return val
}

// Engine exposes the underlying validator so feature packages can register
// custom rules at construction time.
func (v *Validator) Engine() *validator.Validate { return v.v }

// Struct validates s. On failure it returns code (the endpoint's validation
// error) carrying one FieldError per failed rule, every one of them, not only
// the first. It returns an internal error when s is not a struct.
func (v *Validator) Struct(s any, code *emi.Error) error {
	err := v.v.Struct(s)
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return emi.Internal(err)
	}
	fields := make([]emi.FieldError, 0, len(verrs))
	for _, fe := range verrs {
		fields = append(fields, emi.FieldError{Field: path(fe.Namespace()), Message: v.message(fe)})
	}
	return code.WithFields(fields...)
}

// path drops the struct's own name from a validator namespace:
// "ApplicationCreate.payout_details[0].iban" -> "payout_details[0].iban".
// Embedded structs appear in the namespace under their Go name
// ("UserCreate.UserFields.first_name"); every segment that starts with an
// upper-case letter is such a name (JSON names are snake_case) and is dropped.
func path(ns string) string {
	parts := strings.Split(ns, ".")
	if len(parts) > 1 {
		parts = parts[1:] // the struct's own name ("" for an anonymous struct)
	}
	out := parts[:0]
	for _, p := range parts {
		if p != "" && p[0] >= 'A' && p[0] <= 'Z' {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}

// message is Message with the allowed values of the enum_* rules.
func (v *Validator) message(fe validator.FieldError) string {
	if vals, ok := v.enums[fe.Tag()]; ok {
		return "must be one of: " + strings.Join(vals, "; ")
	}
	return Message(fe)
}

// Message returns the text shown to clients for one failed rule.
func Message(fe validator.FieldError) string {
	param := fe.Param()
	isString := fe.Kind() == reflect.String
	switch fe.Tag() {
	case "required", "required_if", "required_unless", "required_with", "required_without":
		return "is required"
	case "excluded_with", "excluded_without", "excluded_if":
		return "must not be given here"
	case "max":
		if isString {
			return fmt.Sprintf("must be at most %s characters", param)
		}
		if fe.Kind() == reflect.Slice || fe.Kind() == reflect.Array || fe.Kind() == reflect.Map {
			return fmt.Sprintf("must have at most %s elements", param)
		}
		return fmt.Sprintf("must be at most %s", param)
	case "min":
		if isString {
			return fmt.Sprintf("must be at least %s characters", param)
		}
		if fe.Kind() == reflect.Slice || fe.Kind() == reflect.Array || fe.Kind() == reflect.Map {
			return fmt.Sprintf("must have at least %s elements", param)
		}
		return fmt.Sprintf("must be at least %s", param)
	case "len":
		if isString {
			return fmt.Sprintf("must be exactly %s characters", param)
		}
		return fmt.Sprintf("must have exactly %s elements", param)
	case "oneof":
		return "must be one of: " + strings.Join(strings.Fields(param), ", ")
	case "email":
		return "must be a valid e-mail address"
	case "uuid", "uuid4", "uuid7":
		return "must be a token (UUID)"
	case "url", "http_url":
		return "must be an absolute URL"
	case "ip", "ipv4", "ipv6":
		return "must be an IP address"
	case "numeric", "number":
		return "must be a number"
	case "gt":
		return "must be greater than " + param
	case "gte":
		return "must be at least " + param
	case "lt":
		return "must be less than " + param
	case "lte":
		return "must be at most " + param
	case "unique":
		return "must not repeat values"
	case "dive":
		return "is invalid"
	case "country":
		return "must be an ISO 3166-1 alpha-2 country code in capitals (e.g. BG)"
	case "currency":
		return "must be an ISO 4217 currency code in capitals (e.g. EUR)"
	case "date":
		return "must be a date that exists, written YYYY-MM-DD"
	case "pastdate":
		return "must be a date that exists, written YYYY-MM-DD, and not in the future"
	case "phone":
		return "must be a phone number: digits with an optional leading +, spaces, dashes or brackets (6 to 15 digits)"
	case "name":
		return "must be a name: letters, with spaces, apostrophes, dots or hyphens"
	case "emboss":
		return "must use only Latin letters without accents, digits, spaces and . , ' - / &"
	case "pin":
		return "must be 4 to 6 digits"
	case "latitude":
		return "must be a latitude in degrees (-90 to 90)"
	case "longitude":
		return "must be a longitude in degrees (-180 to 180)"
	case "base64":
		return "must be base64"
	}
	return "is invalid (" + fe.Tag() + ")"
}
