package validate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"emi/internal/emi"
)

func TestParseDate(t *testing.T) {
	for s, ok := range map[string]bool{
		"1990-04-12": true, "2024-02-29": true, "2023-02-29": false, "1990-13-01": false, "1990-4-12": false,
		"12/04/1990": false, "0999-01-01": false, "": false, "1990-04-12T00:00:00Z": false, " 1990-04-12": false,
	} {
		if _, got := ParseDate(s); got != ok {
			t.Errorf("ParseDate(%q) = %v, want %v", s, got, ok)
		}
	}
}

func TestPhoneAndName(t *testing.T) {
	for s, ok := range map[string]bool{
		"+359888123456": true, "+44 (20) 7946-0000": true, "0888.123.456": true, "12345": false,
		"+1234567890123456": false, "call me": false, "++359888123456": false, "359+888123": false,
	} {
		if got := ValidPhone(s); got != ok {
			t.Errorf("ValidPhone(%q) = %v, want %v", s, got, ok)
		}
	}
	for s, ok := range map[string]bool{
		"Mara": true, "O'Brien": true, "Jean-Luc": true, "Лукашенко": true, "Ζωή": true, "St. John": true,
		"Zoë": true, "R2D2": false, "": false, "-": false, "a\x00b": false, "<script>": false,
	} {
		if got := ValidName(s); got != ok {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, ok)
		}
	}
}

type Inner struct {
	Country string   `json:"country" validate:"omitempty,country"`
	Codes   []string `json:"codes" validate:"dive,country"`
}

type outer struct {
	Inner
	Birthday string `json:"birthday" validate:"omitempty,pastdate"`
	Risk     string `json:"risk" validate:"omitempty,enum_occupation_position"`
	Currency string `json:"currency" validate:"omitempty,currency"`
}

func TestRulesReportJSONPathsAndAllowedValues(t *testing.T) {
	v := New()
	Today = func() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) }
	defer func() { Today = func() time.Time { return time.Now().UTC() } }()
	err := v.Struct(outer{Inner: Inner{Country: "bg", Codes: []string{"DE", "XX"}}, Birthday: "2026-11-23", Risk: "Wizard", Currency: "EURO"}, emi.ErrUserValidation)
	var e *emi.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v", err)
	}
	got := map[string]string{}
	for _, f := range e.Fields {
		got[f.Field] = f.Message
	}
	for _, f := range []string{"country", "codes[1]", "birthday", "risk", "currency"} {
		if got[f] == "" {
			t.Errorf("no error for %s: %v", f, e.Fields)
		}
	}
	if !strings.Contains(got["risk"], "Skilled agricultural, forestry and fishery worker") {
		t.Errorf("enum message does not list the values: %q", got["risk"])
	}
	if err := v.Struct(outer{Inner: Inner{Country: "BG", Codes: []string{"GR"}}, Birthday: "2026-11-22", Risk: "Manager", Currency: "BGN"}, emi.ErrUserValidation); err != nil {
		t.Fatalf("valid input refused: %v", err)
	}
}
