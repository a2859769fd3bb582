package kernel

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"emi/internal/emi"
)

// problems collects field errors under a path prefix.
type Problems []emi.FieldError

// Add records a problem with field, once: the same problem found by two
// checks (a list's rules and each element's, application_create members)
// is one errors entry.
func (p *Problems) Add(field, msg string) {
	fe := emi.FieldError{Field: field, Message: msg}
	if !slices.Contains(*p, fe) {
		*p = append(*p, fe)
	}
}

// AddErr records the field errors of err (a validation error) under
// prefix, and returns any other error unchanged.
func (p *Problems) AddErr(prefix string, err error) error {
	if err == nil {
		return nil
	}
	e := emi.AsError(err)
	if e.Kind != emi.KindInvalid {
		return err
	}
	for _, f := range e.Fields {
		p.Add(emi.JoinField(prefix, f.Field), f.Message)
	}
	return nil
}

// Has reports whether a problem with field is recorded.
func (p Problems) Has(field string) bool {
	return slices.ContainsFunc(p, func(f emi.FieldError) bool { return f.Field == field })
}

// CheckPage adds the problems of a page of a partner API list: page from 1,
// limit from 1 to maxLimit (the same words on every list; the caller
// answers them with its own validation code).
func (p *Problems) CheckPage(page, limit, maxLimit int) {
	if page < 1 {
		p.Add("page", "must be 1 or more")
	}
	if limit < 1 || limit > maxLimit {
		p.Add("limit", "must be from 1 to "+strconv.Itoa(maxLimit))
	}
}

var tokenRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ValidToken reports whether s is a token as emi issues them (a
// lower-case UUID).
func ValidToken(s string) bool { return tokenRe.MatchString(s) }

// Dedupe drops repeated field errors (same field and message), keeping
// the first.
func Dedupe(fs []emi.FieldError) []emi.FieldError {
	var out []emi.FieldError
	for _, f := range fs {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// AllDigits reports whether s is non-empty and only ASCII digits.
func AllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// UniqueNonEmpty returns the trimmed, non-empty strings of ss, each once,
// in order.
func UniqueNonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		s = strings.TrimSpace(s)
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// CheckPrintable adds a problem for field unless s is printable text
// (names, references and reasons reach statements, other banks, events
// and CSV exports). The one copy of this rule.
func (p *Problems) CheckPrintable(field, s string) {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			p.Add(field, "must be printable text without control characters")
			return
		}
	}
}
