package ukbank

import (
	"errors"
	"fmt"
	"regexp"
	"testing"

	"emi/internal/iban"
)

var bgLayout = regexp.MustCompile(`^BG\d\d[A-Z]{4}\d{4}\d{2}[0-9A-Z]{8}$`)

// TestBGIBAN builds the IBANs of many serials of both account types: each
// passes iban.Validate, has the Bulgarian layout with the scheme's codes, the
// type and the zero-padded serial, and differs from all the others.
func TestBGIBAN(t *testing.T) {
	b := DefaultBG
	seen := map[string]string{}
	for _, typ := range []string{BGCurrent, BGBusiness} {
		for i := range 5_000 {
			serial := int64(i) * 19_997
			got, err := b.IBAN(typ, serial)
			if err != nil {
				t.Fatalf("IBAN(%s, %d): %v", typ, serial, err)
			}
			if err := iban.Validate(got); err != nil {
				t.Fatalf("IBAN(%s, %d) = %s: iban.Validate: %v", typ, serial, got, err)
			}
			if !bgLayout.MatchString(got) || got[4:14] != "EMIB9661"+typ || got[12:] != fmt.Sprintf("%s%08d", typ, serial) {
				t.Fatalf("IBAN(%s, %d) = %s: wrong layout", typ, serial, got)
			}
			key := fmt.Sprintf("%s/%d", typ, serial)
			if prev, dup := seen[got]; dup {
				t.Fatalf("%s and %s both give %s", prev, key, got)
			}
			seen[got] = key
		}
	}
	for _, serial := range []int64{0, 1, MaxBGSerial} {
		got, err := b.IBAN(BGCurrent, serial)
		if err != nil || iban.Validate(got) != nil {
			t.Errorf("IBAN(10, %d) = %q, %v", serial, got, err)
		}
	}
}

// TestBGIBANRegistryExample rebuilds the SWIFT IBAN registry's Bulgarian
// example, BG80BNBG96611020345678 (bank BNBG, branch 9661, type 10, account
// 20345678).
func TestBGIBANRegistryExample(t *testing.T) {
	b := BGScheme{BankCode: "BNBG", Branch: "9661", BIC: "BNBGBGSF"}
	got, err := b.IBAN(BGCurrent, 20345678)
	if err != nil || got != "BG80BNBG96611020345678" {
		t.Errorf("IBAN = %q, %v; want BG80BNBG96611020345678", got, err)
	}
}

func TestBGErrors(t *testing.T) {
	with := func(f func(*BGScheme)) BGScheme {
		b := DefaultBG
		f(&b)
		return b
	}
	schemes := []struct {
		name string
		b    BGScheme
		want error
	}{
		{"lower-case bank code", with(func(b *BGScheme) { b.BankCode = "emib"; b.BIC = "emibBGSF" }), ErrBankCode},
		{"short bank code", with(func(b *BGScheme) { b.BankCode = "EMI" }), ErrBankCode},
		{"short branch", with(func(b *BGScheme) { b.Branch = "966" }), ErrBranch},
		{"letter in branch", with(func(b *BGScheme) { b.Branch = "96A1" }), ErrBranch},
		{"BIC of another bank", with(func(b *BGScheme) { b.BIC = "BNBGBGSF" }), ErrBIC},
		{"BIC of another country", with(func(b *BGScheme) { b.BIC = "EMIBGB2L" }), ErrBIC},
		{"empty BIC", with(func(b *BGScheme) { b.BIC = "" }), ErrBIC},
	}
	for _, tt := range schemes {
		if err := tt.b.Validate(); !errors.Is(err, tt.want) {
			t.Errorf("%s: Validate() = %v, want %v", tt.name, err, tt.want)
		}
		if got, err := tt.b.IBAN(BGCurrent, 1); !errors.Is(err, tt.want) || got != "" {
			t.Errorf("%s: IBAN = %q, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	calls := []struct {
		typ    string
		serial int64
		want   error
	}{
		{"11", 1, ErrAccountType},
		{"1", 1, ErrAccountType},
		{"", 1, ErrAccountType},
		{"AB", 1, ErrAccountType},
		{BGCurrent, -1, ErrSerial},
		{BGCurrent, MaxBGSerial + 1, ErrSerial},
	}
	for _, tt := range calls {
		if got, err := DefaultBG.IBAN(tt.typ, tt.serial); !errors.Is(err, tt.want) || got != "" {
			t.Errorf("IBAN(%q, %d) = %q, %v; want %v", tt.typ, tt.serial, got, err, tt.want)
		}
	}
}
