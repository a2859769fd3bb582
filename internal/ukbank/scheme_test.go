package ukbank

import (
	"errors"
	"fmt"
	"regexp"
	"testing"

	"emi/internal/iban"
)

func TestDefaultSchemeValid(t *testing.T) {
	if err := DefaultScheme.Validate(); err != nil {
		t.Fatalf("DefaultScheme.Validate() = %v", err)
	}
	if err := DefaultBG.Validate(); err != nil {
		t.Fatalf("DefaultBG.Validate() = %v", err)
	}
	if DefaultScheme.BIC[:4] != DefaultScheme.BankCode {
		t.Errorf("bank code %q is not the BIC's first four (%q)", DefaultScheme.BankCode, DefaultScheme.BIC)
	}
}

func TestSchemeValidate(t *testing.T) {
	with := func(f func(*Scheme)) Scheme {
		s := DefaultScheme
		f(&s)
		return s
	}
	tests := []struct {
		name string
		s    Scheme
		want error
	}{
		{"short sort code", with(func(s *Scheme) { s.SortCode = "04006" }), ErrSortCode},
		{"hyphenated sort code", with(func(s *Scheme) { s.SortCode = "04-00-69" }), ErrSortCode},
		{"lower-case bank code", with(func(s *Scheme) { s.BankCode = "emix"; s.BIC = "emixGB2L" }), ErrBankCode},
		{"digit in bank code", with(func(s *Scheme) { s.BankCode = "EM1X"; s.BIC = "EM1XGB2L" }), ErrBankCode},
		{"long bank code", with(func(s *Scheme) { s.BankCode = "EMIXX" }), ErrBankCode},
		{"empty BIC", with(func(s *Scheme) { s.BIC = "" }), ErrBIC},
		{"short BIC", with(func(s *Scheme) { s.BIC = "EMIX" }), ErrBIC},
		{"9-character BIC", with(func(s *Scheme) { s.BIC = "EMIXGB2LX" }), ErrBIC},
		{"BIC of another bank", with(func(s *Scheme) { s.BIC = "ABCDGB2L" }), ErrBIC},
		{"BIC of another country", with(func(s *Scheme) { s.BIC = "EMIXIE2L" }), ErrBIC},
		{"BIC with bad location", with(func(s *Scheme) { s.BIC = "EMIXGB2l" }), ErrBIC},
		{"unknown method", with(func(s *Scheme) { s.Rule.Method = "MOD12" }), ErrMethod},
		{"weight out of range", with(func(s *Scheme) { s.Rule.Weights[0] = 1000 }), ErrWeight},
		{"check weight 0", with(func(s *Scheme) { s.Rule.Weights[13] = 0 }), ErrCheckWeight},
		{"MOD11 check weight 11", with(func(s *Scheme) { s.Rule.Weights[13] = 11 }), ErrCheckWeight},
		{"MOD10 check weight 2", with(func(s *Scheme) { s.Rule = Rule{MOD10, [14]int{13: 2}} }), ErrCheckWeight},
		{"MOD10 check weight 5", with(func(s *Scheme) { s.Rule = Rule{MOD10, [14]int{13: 5}} }), ErrCheckWeight},
		{"DBLAL check weight 3", with(func(s *Scheme) { s.Rule = Rule{DBLAL, [14]int{13: 3}} }), ErrCheckWeight},
		{"all zero", with(func(s *Scheme) { s.Rule.Weights = [14]int{} }), ErrCheckWeight},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.s.Validate(); !errors.Is(err, tt.want) {
				t.Fatalf("Validate() = %v, want %v", err, tt.want)
			}
			if tt.s.Valid("12345679") {
				t.Error("Valid on an invalid scheme")
			}
			if _, err := tt.s.AccountNumber(1); err == nil {
				t.Error("AccountNumber on an invalid scheme")
			}
			if _, err := tt.s.IBAN("12345679"); err == nil {
				t.Error("IBAN on an invalid scheme")
			}
		})
	}
	// Rules that do work: an 11-character BIC, and check weights that
	// make the last digit decide under each method.
	ok := []Scheme{
		with(func(s *Scheme) { s.BIC = "EMIXGB2LXXX" }),
		with(func(s *Scheme) { s.Rule = row089 }),
		with(func(s *Scheme) { s.Rule = dbl203 }),
		with(func(s *Scheme) { s.Rule = row070 }), // MOD11 with -1
		with(func(s *Scheme) { s.Rule = Rule{MOD10, [14]int{13: 7}} }),
		with(func(s *Scheme) { s.Rule = Rule{DBLAL, [14]int{13: 2}} }),
		with(func(s *Scheme) { s.Rule = Rule{DBLAL, [14]int{13: 5}} }),
	}
	for i, s := range ok {
		if err := s.Validate(); err != nil {
			t.Errorf("ok[%d].Validate() = %v", i, err)
		}
	}
}

var gbLayout = regexp.MustCompile(`^GB[0-9]{2}EMIX040069[0-9]{8}$`)

// TestAccountNumber issues the account numbers of 10,000 serials under the
// default (MOD11) scheme: every one is 8 digits, starts with its serial,
// passes the rule and is distinct; the serials without a check digit fail
// with ErrNoCheckDigit, and no digit would indeed do for them.
func TestAccountNumber(t *testing.T) {
	s := DefaultScheme
	seen := map[string]int{}
	noDigit := 0
	digit := regexp.MustCompile(`^[0-9]{8}$`)
	for serial := range 10_000 {
		// Spread the serials over the whole range, not only 0..9999.
		n := serial * 997
		acc, err := s.AccountNumber(n)
		if errors.Is(err, ErrNoCheckDigit) {
			noDigit++
			prefix := fmt.Sprintf("%07d", n)
			for d := range 10 {
				if ok, _ := Check(s.Rule, s.SortCode, fmt.Sprintf("%s%d", prefix, d)); ok {
					t.Fatalf("serial %d: ErrNoCheckDigit, but digit %d passes", n, d)
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("AccountNumber(%d): %v", n, err)
		}
		if !digit.MatchString(acc) || acc[:7] != fmt.Sprintf("%07d", n) {
			t.Fatalf("AccountNumber(%d) = %q", n, acc)
		}
		if !s.Valid(acc) {
			t.Fatalf("AccountNumber(%d) = %s fails the rule", n, acc)
		}
		if prev, dup := seen[acc]; dup {
			t.Fatalf("serials %d and %d both give %s", prev, n, acc)
		}
		seen[acc] = n
	}
	// With check weight 1 the check digit is 10 for one serial in 11.
	if noDigit < 700 || noDigit > 1100 {
		t.Errorf("%d of 10000 serials without check digit, want about 909", noDigit)
	}
	t.Logf("%d account numbers, %d serials skipped", len(seen), noDigit)
}

// TestAccountNumberKnown pins values worked out by hand for the default
// rule: weights 8 7 6 5 4 3 2 on the serial's seven digits, 1 on the check
// digit h, total a multiple of 11.
func TestAccountNumberKnown(t *testing.T) {
	tests := []struct {
		serial int
		want   string // "" for ErrNoCheckDigit
	}{
		{0, "00000000"},
		{1, "00000019"},       // 1*2 = 2; 2+9 = 11
		{5, "00000051"},       // 5*2 = 10; 10+1 = 11
		{6, ""},               // 6*2 = 12 = 11+1: h would have to be 10
		{1234567, "12345679"}, // 8+14+18+20+20+18+14 = 112; 112+9 = 121
		{9999999, "99999994"}, // 9*35 = 315; 315+4 = 319 = 29*11
	}
	for _, tt := range tests {
		got, err := DefaultScheme.AccountNumber(tt.serial)
		if tt.want == "" {
			if !errors.Is(err, ErrNoCheckDigit) {
				t.Errorf("AccountNumber(%d) = %q, %v; want ErrNoCheckDigit", tt.serial, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("AccountNumber(%d) = %q, %v; want %s", tt.serial, got, err, tt.want)
		}
	}
}

// TestAccountNumberOtherMethods: under MOD10 and DBLAL rows whose check
// weight makes the last digit decide, every serial has exactly one check
// digit.
func TestAccountNumberOtherMethods(t *testing.T) {
	for _, r := range []Rule{row089, dbl203, {DBLAL, [14]int{13: 5}}, {MOD10, [14]int{13: 3}}} {
		s := DefaultScheme
		s.Rule = r
		seen := map[string]bool{}
		for serial := range 2_000 {
			n := serial * 4999
			acc, err := s.AccountNumber(n)
			if err != nil {
				t.Fatalf("%v: AccountNumber(%d): %v", r, n, err)
			}
			if !s.Valid(acc) || seen[acc] {
				t.Fatalf("%v: AccountNumber(%d) = %s invalid or repeated", r, n, acc)
			}
			seen[acc] = true
		}
	}
}

func TestAccountNumberSerialRange(t *testing.T) {
	for _, n := range []int{-1, MaxSerial + 1, 1 << 40} {
		if _, err := DefaultScheme.AccountNumber(n); !errors.Is(err, ErrSerial) {
			t.Errorf("AccountNumber(%d) error = %v, want ErrSerial", n, err)
		}
	}
	if _, err := DefaultScheme.AccountNumber(MaxSerial); err != nil {
		t.Errorf("AccountNumber(MaxSerial): %v", err)
	}
}

func TestValid(t *testing.T) {
	s := DefaultScheme
	for acc, want := range map[string]bool{
		"12345679":  true,
		"12345678":  false,
		"00000000":  true,
		"1234567":   false,
		"123456790": false,
		"1234567a":  false,
		"":          false,
	} {
		if got := s.Valid(acc); got != want {
			t.Errorf("Valid(%q) = %v, want %v", acc, got, want)
		}
	}
}

// TestGBIBAN builds the IBANs of issued account numbers: each passes
// iban.Validate, has the layout GB kk EMIX 040069 account, carries its
// account and differs from the others.
func TestGBIBAN(t *testing.T) {
	s := DefaultScheme
	seen := map[string]string{}
	for serial := range 5_000 {
		acc, err := s.AccountNumber(serial * 1999)
		if errors.Is(err, ErrNoCheckDigit) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.IBAN(acc)
		if err != nil {
			t.Fatalf("IBAN(%s): %v", acc, err)
		}
		if err := iban.Validate(got); err != nil {
			t.Fatalf("IBAN(%s) = %s: iban.Validate: %v", acc, got, err)
		}
		if !gbLayout.MatchString(got) || got[14:] != acc {
			t.Fatalf("IBAN(%s) = %s: wrong layout", acc, got)
		}
		if prev, dup := seen[got]; dup {
			t.Fatalf("accounts %s and %s both give %s", prev, acc, got)
		}
		seen[got] = acc
	}
	if len(seen) < 4_000 {
		t.Errorf("only %d IBANs", len(seen))
	}
}

func TestGBIBANKnown(t *testing.T) {
	// BBAN EMIX04006912345679; check digits by iban.CheckDigits, which
	// the iban package tests against the registry's examples.
	cd, err := iban.CheckDigits("GB", "EMIX04006912345679")
	if err != nil {
		t.Fatal(err)
	}
	got, err := DefaultScheme.IBAN("12345679")
	if want := "GB" + cd + "EMIX04006912345679"; err != nil || got != want {
		t.Errorf("IBAN = %q, %v; want %s", got, err, want)
	}
	// The registry's GB example, GB29NWBK60161331926819, rebuilt by a
	// scheme with its bank code and sort code and a made-up MOD10 row that
	// its account passes: weight 1 on the fifth sort code digit (1) and on
	// every account digit (3+1+9+2+6+8+1+9 = 39): 1+39 = 40.
	nw := Scheme{
		SortCode: "601613",
		Rule:     Rule{MOD10, [14]int{0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1}},
		BIC:      "NWBKGB2L",
		BankCode: "NWBK",
	}
	got, err = nw.IBAN("31926819")
	if err != nil || got != "GB29NWBK60161331926819" {
		t.Errorf("NatWest example: IBAN = %q, %v", got, err)
	}
}

func TestGBIBANErrors(t *testing.T) {
	s := DefaultScheme
	for acc, want := range map[string]error{
		"12345678":  ErrFailsRule,
		"1234567":   ErrAccountNumber,
		"1234567X":  ErrAccountNumber,
		"123456790": ErrAccountNumber,
	} {
		if got, err := s.IBAN(acc); !errors.Is(err, want) || got != "" {
			t.Errorf("IBAN(%q) = %q, %v; want %v", acc, got, err, want)
		}
	}
}
