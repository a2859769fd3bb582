package iban

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// published are the example IBANs of the SWIFT IBAN registry and of the
// national banks that publish them.
var published = []string{
	"GB82WEST12345698765432",
	"GB29NWBK60161331926819",
	"BG80BNBG96611020345678",
	"DE89370400440532013000",
	"FR1420041010050500013M02606",
	"NL91ABNA0417164300",
	"IE29AIBK93115212345678",
	"AD1200012030200359100100",
	"AE070331234567890123456",
	"AL47212110090000000235698741",
	"AT611904300234573201",
	"AZ21NABZ00000000137010001944",
	"BA391290079401028494",
	"BE68539007547034",
	"BH67BMAG00001299123456",
	"BR1800360305000010009795493C1",
	"BY13NBRB3600900000002Z00AB00",
	"CH9300762011623852957",
	"CR05015202001026284066",
	"CY17002001280000001200527600",
	"CZ6508000000192000145399",
	"DK5000400440116243",
	"DO28BAGR00000001212453611324",
	"EE382200221020145685",
	"EG380019000500000000263180002",
	"ES9121000418450200051332",
	"FI2112345600000785",
	"FO6264600001631634",
	"GE29NB0000000101904917",
	"GI75NWBK000000007099453",
	"GL8964710001000206",
	"GR1601101250000000012300695",
	"GT82TRAJ01020000001210029690",
	"HR1210010051863000160",
	"HU42117730161111101800000000",
	"IL620108000000099999999",
	"IQ98NBIQ850123456789012",
	"IS140159260076545510730339",
	"IT60X0542811101000000123456",
	"JO94CBJO0010000000000131000302",
	"KW81CBKU0000000000001234560101",
	"KZ86125KZT5004100100",
	"LB62099900000001001901229114",
	"LC55HEMM000100010012001200023015",
	"LI21088100002324013AA",
	"LT121000011101001000",
	"LU280019400644750000",
	"LV80BANK0000435195001",
	"MC5811222000010123456789030",
	"MD24AG000225100013104168",
	"ME25505000012345678951",
	"MK07250120000058984",
	"MR1300020001010000123456753",
	"MT84MALT011000012345MTLCAST001S",
	"MU17BOMM0101101030300200000MUR",
	"NO9386011117947",
	"PK36SCBL0000001123456702",
	"PL61109010140000071219812874",
	"PS92PALS000000000400123456702",
	"PT50000201231234567890154",
	"QA58DOHB00001234567890ABCDEFG",
	"RO49AAAA1B31007593840000",
	"RS35260005601001611379",
	"SA0380000000608010167519",
	"SC18SSCB11010000000000001497USD",
	"SE4550000000058398257466",
	"SI56263300012039086",
	"SK3112000000198742637541",
	"SM86U0322509800000000270100",
	"ST23000100010051845310146",
	"SV62CENR00000000000000700025",
	"TL380080012345678910157",
	"TN5910006035183598478831",
	"TR330006100519786457841326",
	"UA213223130000026007233566001",
	"VA59001123000012345678",
	"VG96VPVG0000012345678901",
	"XK051212012345678906",
}

func TestTableCoversTheRegistry(t *testing.T) {
	if n := len(Countries()); n != 89 {
		t.Errorf("the table has %d countries, the registry 89", n)
	}
	for _, c := range []struct {
		country string
		length  int
	}{
		{"BG", 22}, {"GB", 22}, {"DE", 22}, {"FR", 27}, {"NL", 18}, {"IE", 22},
		{"NO", 15}, {"LC", 32}, {"RU", 33}, {"BE", 16}, {"MT", 31},
	} {
		if got, ok := CountryLength(c.country); !ok || got != c.length {
			t.Errorf("CountryLength(%s) = %d, %v; want %d", c.country, got, ok, c.length)
		}
	}
	if _, ok := CountryLength("US"); ok {
		t.Error("US has no IBAN")
	}
}

func TestValidatePublishedExamples(t *testing.T) {
	for _, s := range published {
		if err := Validate(s); err != nil {
			t.Errorf("Validate(%s) = %v", s, err)
		}
		if n, _ := CountryLength(s[:2]); n != len(s) {
			t.Errorf("%s: length %d, table says %d", s, len(s), n)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     error
	}{
		{"valid", "GB82WEST12345698765432", nil},
		{"printed form with spaces", "GB82 WEST 1234 5698 7654 32", nil},
		{"lower case", "gb82west12345698765432", nil},
		{"mixed case, tabs, no-break spaces", "\tGb82 west\u00a01234 5698 7654 32 ", nil},
		{"Bulgarian", "bg80 bnbg 9661 1020 3456 78", nil},
		{"empty", "", ErrEmpty},
		{"only spaces", "   \t", ErrEmpty},
		{"hyphens", "GB82-WEST-1234-5698-7654-32", ErrChars},
		{"punctuation", "GB82WEST1234569876543.", ErrChars},
		{"non-ASCII letter", "GB82WEST1234569876543Ä", ErrChars},
		{"dotless i is not upper-cased into I", "GB82WEST1234569876543ı", ErrChars},
		{"newline", "GB82WEST12345698765432\n", ErrChars},
		{"one letter", "G", ErrCountry},
		{"unknown country", "US82WEST12345698765432", ErrCountry},
		{"country with digits", "1282WEST12345698765432", ErrCountry},
		{"too short", "GB82WEST1234569876543", ErrLength},
		{"too long", "GB82WEST123456987654321", ErrLength},
		{"country code only", "GB", ErrLength},
		{"German length for a French IBAN", "FR89370400440532013000", ErrLength},
		{"wrong digit", "GB82WEST12345698765431", ErrCheckDigits},
		{"wrong letter", "GB82WESU12345698765432", ErrCheckDigits},
		{"wrong check digits", "GB83WEST12345698765432", ErrCheckDigits},
		{"swapped digits", "GB82WEST12345698765423", ErrCheckDigits},
		{"letters as check digits", "GBXXWEST12345698765432", ErrCheckDigits},
		{"check digits 00", "GB00WEST12345698765432", ErrCheckDigits},
		{"check digits 01", "GB01WEST12345698765432", ErrCheckDigits},
		{"check digits 99", "GB99WEST12345698765432", ErrCheckDigits},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := Validate(c.in); !errors.Is(err, c.want) {
				t.Errorf("Validate(%q) = %v, want %v", c.in, err, c.want)
			}
		})
	}
}

// TestCheckDigitsOfPublishedExamples: CheckDigits and Build give back the
// published IBANs from their country and BBAN, lower case accepted.
func TestCheckDigitsOfPublishedExamples(t *testing.T) {
	for _, s := range published {
		cd, err := CheckDigits(s[:2], s[4:])
		if err != nil || cd != s[2:4] {
			t.Errorf("CheckDigits(%s, %s) = %q, %v; want %s", s[:2], s[4:], cd, err, s[2:4])
		}
		got, err := Build(strings.ToLower(s[:2]), strings.ToLower(s[4:]))
		if err != nil || got != s {
			t.Errorf("Build(%s) = %q, %v", s, got, err)
		}
	}
}

func TestCheckDigitsErrors(t *testing.T) {
	for _, c := range []struct {
		country, bban string
		want          error
	}{
		{"", "WEST12345698765432", ErrCountry},
		{"G", "WEST12345698765432", ErrCountry},
		{"GBR", "WEST12345698765432", ErrCountry},
		{"US", "WEST12345698765432", ErrCountry},
		{"GB", "WEST1234569876543", ErrLength},
		{"GB", "", ErrLength},
		{"GB", "WEST-1234569876543", ErrChars},
		{"GB", "WEST 1234 5698 7654 32", nil},
	} {
		_, err := CheckDigits(c.country, c.bban)
		if !errors.Is(err, c.want) {
			t.Errorf("CheckDigits(%q, %q) = %v, want %v", c.country, c.bban, err, c.want)
		}
		if _, err := Build(c.country, c.bban); !errors.Is(err, c.want) {
			t.Errorf("Build(%q, %q) = %v, want %v", c.country, c.bban, err, c.want)
		}
	}
}

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// TestBuildProperty: for every country, Build of a random BBAN validates, and
// replacing any one character with any other character of the same class
// (digit for digit, letter for letter) makes Validate fail. That is what ISO
// 7064 MOD 97-10 guarantees. A digit replaced by a letter (or the other way
// round) changes the length of the number the check works on; the check
// catches that only with probability about 96/97, so those replacements are
// counted, not required to fail.
func TestBuildProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(13616, 97))
	var crossClass, crossMissed int
	for _, country := range Countries() {
		n, _ := CountryLength(country)
		for range 20 {
			b := make([]byte, n-4)
			for i := range b {
				if rng.IntN(3) == 0 {
					b[i] = alphabet[10+rng.IntN(26)]
				} else {
					b[i] = alphabet[rng.IntN(10)]
				}
			}
			s, err := Build(country, string(b))
			if err != nil {
				t.Fatalf("Build(%s, %s) = %v", country, b, err)
			}
			if err := Validate(s); err != nil {
				t.Fatalf("Validate(Build(%s, %s)) = %v", country, b, err)
			}
			for i := 0; i < len(s); i++ {
				for j := 0; j < len(alphabet); j++ {
					c := alphabet[j]
					if c == s[i] {
						continue
					}
					mutated := s[:i] + string(c) + s[i+1:]
					err := Validate(mutated)
					if isDigit(c) == isDigit(s[i]) {
						if err == nil {
							t.Fatalf("%s -> %s (position %d) still validates", s, mutated, i)
						}
						continue
					}
					crossClass++
					if err == nil {
						crossMissed++
					}
				}
			}
		}
	}
	// About 1 in 97 cross-class replacements inside the BBAN slips through.
	if crossMissed*40 > crossClass {
		t.Errorf("%d of %d digit<->letter replacements still validate", crossMissed, crossClass)
	}
	t.Logf("digit<->letter replacements: %d, not caught by mod 97: %d", crossClass, crossMissed)
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"gb82 west 1234":   "GB82WEST1234",
		"\tde89\t3704 ":    "DE893704",
		"nl91\u00a0abna":   "NL91ABNA",
		"":                 "",
		"fr14-2004":        "FR14-2004",
		"äbc":              "äBC",
		"ı":                "ı",
		"GB82WEST12345698": "GB82WEST12345698",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidSortCodeAndAccountNumber(t *testing.T) {
	for in, want := range map[string]bool{
		"601613": true, "000000": true, "60161": false, "6016133": false,
		"60-16-13": false, "60 16 13": false, "6016a3": false, "": false,
		"６０１６１３": false,
	} {
		if got := ValidSortCode(in); got != want {
			t.Errorf("ValidSortCode(%q) = %v", in, got)
		}
	}
	for in, want := range map[string]bool{
		"31926819": true, "00000000": true, "3192681": false, "319268190": false,
		"3192 6819": false, "3192681x": false, "": false,
	} {
		if got := ValidUKAccountNumber(in); got != want {
			t.Errorf("ValidUKAccountNumber(%q) = %v", in, got)
		}
	}
}

func FuzzValidate(f *testing.F) {
	for _, s := range published[:10] {
		f.Add(s)
	}
	for _, s := range []string{"", " ", "GB", "GB82 west 1234 5698 7654 32", "XX00", "GB\u00a082", "ı", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := Validate(s)
		if err == nil {
			n := Normalize(s)
			if Normalize(n) != n || Validate(n) != nil {
				t.Fatalf("%q validates but its normal form %q does not", s, n)
			}
			if l, ok := CountryLength(n[:2]); !ok || l != len(n) {
				t.Fatalf("%q validates with the wrong length", s)
			}
			if b, err := Build(n[:2], n[4:]); err != nil || b != n {
				t.Fatalf("Build(%q, %q) = %q, %v; want %q", n[:2], n[4:], b, err, n)
			}
			return
		}
		for _, known := range []error{ErrEmpty, ErrChars, ErrCountry, ErrLength, ErrCheckDigits} {
			if err == known {
				return
			}
		}
		t.Fatalf("Validate(%q) = %v, not one of the package's errors", s, err)
	})
}
