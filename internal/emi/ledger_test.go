package emi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"emi/internal/emi"
)

func TestParseAmount(t *testing.T) {
	good := map[string]int64{"0": 0, "12": 1200, "12.5": 1250, "12.50": 1250, "0.01": 1, "-3.07": -307,
		"1000000000.00": 100000000000, "9999999999999.99": 999999999999999}
	for in, want := range good {
		if got, ok := emi.ParseAmount(in); !ok || got != want {
			t.Errorf("ParseAmount(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", ".5", "5.", "1.005", "1e3", "+1", "--1", " 1", "1 ", "1,00", "0x10", "１", "12345678901234", "NaN", "-"} {
		if v, ok := emi.ParseAmount(in); ok {
			t.Errorf("ParseAmount(%q) accepted as %d", in, v)
		}
	}
}

// TestParseTypedAmount: a back-office form takes "12,50" (staff type a
// decimal comma) but never a comma that could be a thousands separator.
func TestParseTypedAmount(t *testing.T) {
	good := map[string]int64{"12,50": 1250, "12,5": 1250, " 12.50 ": 1250, "0,01": 1, "7": 700, "-3,07": -307}
	for in, want := range good {
		if got, ok := emi.ParseTypedAmount(in); !ok || got != want {
			t.Errorf("ParseTypedAmount(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"1,250", "1,250.00", "1.250,00", "12,", ",5", "1,2,3", "12,50.1", "1 250,00", "abc"} {
		if v, ok := emi.ParseTypedAmount(in); ok {
			t.Errorf("ParseTypedAmount(%q) accepted as %d", in, v)
		}
	}
}

func TestAmountJSON(t *testing.T) {
	for in, want := range map[string]int64{`"12.50"`: 1250, `"0.1"`: 10, `"7"`: 700, `"-3.00"`: -300} {
		var a emi.Amount
		if err := json.Unmarshal([]byte(in), &a); err != nil || int64(a) != want {
			t.Errorf("%s: %d, %v", in, a, err)
		}
	}
	for _, in := range []string{`"1.005"`, `1e2`, `true`, `null`, `"ten"`, `[1]`, `{"v":1}`, `0.1e1`,
		// a JSON number is not an amount, however exact (issue 34)
		`12345`, `12.5`, `0.1`, `-1`, `"12.5e0"`, `" 12.50"`, `""`} {
		var a emi.Amount
		if err := json.Unmarshal([]byte(in), &a); err == nil {
			t.Errorf("%s accepted as %d", in, a)
		}
	}
	b, _ := json.Marshal(emi.Amount(-5))
	if string(b) != `"-0.05"` {
		t.Fatalf("marshal: %s", b)
	}
}

// FuzzParseAmount: whatever the input, ParseAmount never panics; what it
// accepts is at most two decimals of ASCII digits, and writing the value
// back (FormatMinor) and reading it again gives the same minor units.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"12.50", "0", "-1.1", "1.005", "1e3", "9999999999999.99", ".5", "00012.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := emi.ParseAmount(s)
		if !ok {
			return
		}
		whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
		if len(frac) > 2 || whole == "" || strings.Trim(whole+frac, "0123456789") != "" {
			t.Fatalf("accepted %q", s)
		}
		back, ok := emi.ParseAmount(emi.FormatMinor(v))
		if !ok || back != v {
			t.Fatalf("%q -> %d -> %q -> %d", s, v, emi.FormatMinor(v), back)
		}
		var a emi.Amount
		if err := json.Unmarshal([]byte(`"`+s+`"`), &a); err != nil || int64(a) != v {
			t.Fatalf("JSON %q: %d, %v", s, a, err)
		}
	})
}
