package goaml

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ValidationError is what Marshal returns when the report is incomplete or
// wrong: every problem found, in the order of the fields.
type ValidationError struct {
	Problems []FieldProblem
}

// FieldProblem is one problem with one input field.
type FieldProblem struct {
	// Field is the Go path of the field in the Report, e.g. "Reason" or
	// "Transactions[1].From.Client.Holder.BirthDate" (indexes from 0).
	Field string
	// Problem says what is wrong, e.g. "is required".
	Problem string
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("goaml: invalid report: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Field + " " + p.Problem)
	}
	return b.String()
}

// checker collects the problems of one report.
type checker struct {
	problems []FieldProblem
}

func (c *checker) add(field, format string, args ...any) {
	c.problems = append(c.problems, FieldProblem{Field: field, Problem: fmt.Sprintf(format, args...)})
}

// text checks a string the schema limits to min-max characters; min 0 means
// optional. It also rejects what XML cannot carry: invalid UTF-8 and the
// control characters other than tab, line feed and carriage return
// (encoding/xml would replace them silently).
func (c *checker) text(field, v string, min, max int) {
	if strings.TrimSpace(v) == "" {
		if min > 0 {
			c.add(field, "is required")
		}
		return
	}
	if !utf8.ValidString(v) {
		c.add(field, "is not valid UTF-8")
		return
	}
	for _, r := range v {
		if !xmlChar(r) {
			c.add(field, "contains the character %U, which XML cannot carry", r)
			return
		}
	}
	if n := utf8.RuneCountInString(v); n > max {
		c.add(field, "is %d characters long, more than the %d allowed", n, max)
	}
}

// xmlChar reports whether r is a Char of XML 1.0.
func xmlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// code checks an FIU lookup code: required, short, without spaces. Whether
// the FIU knows it is for its own schema to say.
func (c *checker) code(field, v string) {
	switch {
	case v == "":
		c.add(field, "is required (an FIU lookup code)")
	case len(v) > 50 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7F || r > '~' }):
		c.add(field, "%q is not a lookup code (up to 50 printable ASCII characters without spaces)", v)
	}
}

// sqlDateMin is the schema's lower bound of sql_date.
var sqlDateMin = time.Date(1753, 1, 1, 0, 0, 0, 0, time.UTC)

// date checks a time the schema types sql_date: from 1753 to 9999.
func (c *checker) date(field string, t time.Time, required bool) {
	if t.IsZero() {
		if required {
			c.add(field, "is required")
		}
		return
	}
	if y := t.Year(); y < sqlDateMin.Year() || y > 9999 {
		c.add(field, "is in the year %d: goAML dates run from 1753 to 9999", y)
	}
}

func (c *checker) country(field, v string) {
	if v == "" {
		c.add(field, "is required (an ISO 3166 country code)")
		return
	}
	if !schemaLists().countries[v] {
		c.add(field, "%q is not an ISO 3166 alpha-2 country code of the goAML schema (two capital letters, e.g. FR)", v)
	}
}

func (c *checker) currency(field, v string, required bool) {
	if v == "" {
		if required {
			c.add(field, "is required (an ISO 4217 currency code)")
		}
		return
	}
	if !schemaLists().currencies[v] {
		c.add(field, "%q is not an ISO 4217 currency code of the goAML schema (three capital letters, e.g. EUR)", v)
	}
}

var decimalRE = regexp.MustCompile(`^[0-9]{1,16}(\.[0-9]{1,13})?$`)

// maxAmount is the schema's upper bound of sql_decimal.
var maxAmount = big.NewRat(7_900_000_000_000_000, 1)

// amount checks a decimal string for sql_decimal, and that it is positive.
func (c *checker) amount(field, v string) {
	if v == "" {
		c.add(field, "is required")
		return
	}
	if !decimalRE.MatchString(v) {
		c.add(field, "%q is not a decimal amount: digits with an optional dot and up to 13 decimals, like 1234.56", v)
		return
	}
	r, ok := new(big.Rat).SetString(v)
	switch {
	case !ok:
		c.add(field, "%q is not a decimal amount", v)
	case r.Sign() <= 0:
		c.add(field, "%q must be more than zero", v)
	case r.Cmp(maxAmount) > 0:
		c.add(field, "%q is more than the schema's maximum, 7900000000000000", v)
	}
}

var bicRE = regexp.MustCompile(`^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$`)

// institution checks the choice between swift and institution_code.
func (c *checker) institution(path, bic, code string) {
	switch {
	case bic != "":
		if !bicRE.MatchString(bic) {
			c.add(path+".BIC", "%q is not a BIC (8 or 11 capital letters and digits)", bic)
		}
	case code != "":
		c.text(path+".InstitutionCode", code, 1, 50)
	default:
		c.add(path+".BIC", "is required, or InstitutionCode (the schema requires swift or institution_code)")
	}
}

// normIBAN is an IBAN in its electronic form: no spaces, capitals.
func normIBAN(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, " ", ""))
}

// iban checks an IBAN's form and check digits (ISO 13616, mod 97).
func (c *checker) iban(field, raw string) {
	s := normIBAN(raw)
	if len(s) < 15 || len(s) > 34 {
		c.add(field, "%q is not an IBAN: it has %d characters, an IBAN 15 to 34", raw, len(s))
		return
	}
	for i, r := range s {
		letter, digit := r >= 'A' && r <= 'Z', r >= '0' && r <= '9'
		if (i < 2 && !letter) || (i >= 2 && i < 4 && !digit) || (!letter && !digit) {
			c.add(field, "%q is not an IBAN: two letters, two check digits, then letters and digits", raw)
			return
		}
	}
	rem := 0
	for _, r := range s[4:] + s[:4] {
		if r >= 'A' {
			rem = (rem*100 + int(r-'A') + 10) % 97
		} else {
			rem = (rem*10 + int(r-'0')) % 97
		}
	}
	if rem != 1 {
		c.add(field, "%q is not an IBAN: its check digits are wrong", raw)
	}
}

// enumerations are the ISO code lists of the embedded schema.
type enumerations struct {
	countries, currencies map[string]bool
}

// schemaLists reads country_type and currency_type from the embedded schema
// once. Their "-" (unknown) entry is left out: it is no ISO code.
var schemaLists = sync.OnceValue(func() enumerations {
	lists := map[string]map[string]bool{}
	d := xml.NewDecoder(strings.NewReader(schema))
	var current map[string]bool
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic("goaml: reading the embedded schema: " + err.Error())
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "simpleType":
				current = nil
				for _, a := range t.Attr {
					if a.Name.Local == "name" {
						current = map[string]bool{}
						lists[a.Value] = current
					}
				}
			case "enumeration":
				for _, a := range t.Attr {
					if a.Name.Local == "value" && current != nil && a.Value != "-" {
						current[a.Value] = true
					}
				}
			}
		case xml.EndElement:
			if t.Name.Local == "simpleType" {
				current = nil
			}
		}
	}
	e := enumerations{countries: lists["country_type"], currencies: lists["currency_type"]}
	if len(e.countries) == 0 || len(e.currencies) == 0 {
		panic("goaml: the embedded schema has no country_type or currency_type list")
	}
	return e
})
