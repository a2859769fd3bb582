package ukbank

import (
	"errors"
	"testing"
)

// Weight rows of the published weight table valacdos.txt, for the sort code
// ranges of the specification's test cases. Read from the copy of
// valacdos.txt vendored in github.com/pauldambra/ModulusChecker
// (ModulusChecking/Resources/valacdos.txt, commit 09c9333d8a0a9b7dda474d8f2b5559419e393f8b):
//
//	089000 089999 MOD10    0 0 0 0 0 0 7 1 3 7 1 3 7 1
//	102400 107999 MOD11    0 0 0 0 0 0 8 7 6 5 4 3 2 1
//	202700 203239 MOD11    0 0 0 0 0 0 0 7 6 5 4 3 2 1   (exception 6)
//	202700 203239 DBLAL    2 1 2 1 2 1 2 1 2 1 2 1 2 1   (exception 6)
//	040082 040082 MOD10    2 1 2 1 2 1 0 64 32 16 8 4 2 1
//	120000 120961 MOD11    0 0 1 8 2 6 3 7 9 5 8 4 2 1
//	070030 070030 MOD11    0 0 7 6 5 8 9 4 5 6 7 8 9 -1
//
// The 089000-089999 range has only a MOD10 row and 102400-107999 only a
// MOD11 row: neither has a DBLAL row, and 089999/66374958 indeed fails DBLAL
// with the 2 1 2 1 ... row (total 92), which the table below records.
// Exception 6 of 202700-203239 concerns foreign currency accounts (first
// account digit 4-8 and the last two digits equal); none of the vectors used
// here has equal last two digits, so the plain rows apply.
var (
	row089 = Rule{MOD10, [14]int{0, 0, 0, 0, 0, 0, 7, 1, 3, 7, 1, 3, 7, 1}}
	row107 = Rule{MOD11, [14]int{0, 0, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}}
	row203 = Rule{MOD11, [14]int{0, 0, 0, 0, 0, 0, 0, 7, 6, 5, 4, 3, 2, 1}}
	dbl203 = Rule{DBLAL, [14]int{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}}
	row040 = Rule{MOD10, [14]int{2, 1, 2, 1, 2, 1, 0, 64, 32, 16, 8, 4, 2, 1}}
	row120 = Rule{MOD11, [14]int{0, 0, 1, 8, 2, 6, 3, 7, 9, 5, 8, 4, 2, 1}}
	row070 = Rule{MOD11, [14]int{0, 0, 7, 6, 5, 8, 9, 4, 5, 6, 7, 8, 9, -1}}

	// The specification's worked examples use rows of their own (not
	// table rows): DBLAL 2 1 2 1 ... for 499273/12345678 and MOD11
	// 0 0 0 0 0 0 7 5 8 3 4 6 2 1 for 000000/58177632.
	exDBLAL = Rule{DBLAL, [14]int{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}}
	exMOD11 = Rule{MOD11, [14]int{0, 0, 0, 0, 0, 0, 7, 5, 8, 3, 4, 6, 2, 1}}
	// The same weights as exDBLAL under MOD10, to show that splitting the
	// products into digits matters.
	mod10Alt = Rule{MOD10, exDBLAL.Weights}
)

// TestCheck runs the published vectors and hand-computed ones.
//
// Published: the test cases of "Validating account numbers – UK modulus
// checking" (VocaLink/Pay.UK, v7.90,
// https://www.vocalink.com/media/a2febq5m/validating-account-numbers-uk-modulus-checking-v7-90.pdf),
// numbered as there: 1 "Pass modulus 10 check", 2 "Pass modulus 11 check",
// 3 "Pass modulus 11 and double alternate checks", 27 "Pass modulus 11 check
// and fail double alternate check", 28 "Fail modulus 11 check and pass double
// alternate check", 29 "Fail modulus 10 check", 30 "Fail modulus 11 check".
// The PDF itself was not reachable from here; the cases are reproduced
// identically by public implementations, e.g. the README of
// github.com/JayWilk/ModulusChecker and the test suites of the PureScript and
// TypeScript modulus checkers on GitHub, which also carry the two worked
// examples of the specification's algorithm section (499273/12345678 DBLAL,
// total 70; 000000/58177632 MOD11, total 176).
func TestCheck(t *testing.T) {
	tests := []struct {
		name          string
		rule          Rule
		sort, account string
		want          bool
	}{
		// Published test cases with their table rows.
		{"spec 1 MOD10 pass", row089, "089999", "66374958", true},
		{"spec 29 MOD10 fail", row089, "089999", "66374959", false},
		{"spec 2 MOD11 pass", row107, "107999", "88837491", true},
		{"spec 30 MOD11 fail", row107, "107999", "88837493", false},
		{"spec 3 MOD11 pass", row203, "202959", "63748472", true},
		{"spec 3 DBLAL pass", dbl203, "202959", "63748472", true},
		{"spec 27 MOD11 pass", row203, "203099", "66831036", true},
		{"spec 27 DBLAL fail", dbl203, "203099", "66831036", false},
		{"spec 28 MOD11 fail", row203, "203099", "58716970", false},
		{"spec 28 DBLAL pass", dbl203, "203099", "58716970", true},
		{"089999 is no DBLAL range", dbl203, "089999", "66374958", false},

		// Worked examples of the specification, and one digit off.
		{"spec example DBLAL", exDBLAL, "499273", "12345678", true},
		{"spec example DBLAL off", exDBLAL, "499273", "12345679", false},
		{"spec example MOD11", exMOD11, "000000", "58177632", true},
		{"spec example MOD11 off", exMOD11, "000000", "58177633", false},

		// Hand-computed.
		// MOD10, row 040082, sort 040082: 0*2+4*1+0+0+8*2+2*1 = 22;
		// account 1234567h with 0 64 32 16 8 4 2 1:
		// 0+128+96+64+40+24+14+h = 366+h; 22+366+2 = 390.
		{"MOD10 own", row040, "040082", "12345672", true},
		{"MOD10 own off", row040, "040082", "12345673", false},
		// MOD11, row 107: 8+14+18+20+20+18+14+h = 112+h; 112+9 = 121.
		{"MOD11 own", row107, "000000", "12345679", true},
		{"MOD11 own off", row107, "000000", "12345678", false},
		// MOD11 with sort code weights, row 120, sort 123456:
		// 3+32+10+36 = 81; account 3+14+27+20+40+24+14+h = 142+h;
		// 81+142+8 = 231 = 21*11.
		{"MOD11 sort weights", row120, "123456", "12345678", true},
		{"MOD11 sort weights off", row120, "123456", "12345677", false},
		// MOD11 with the weight -1, row 070, sort 070030: 3*5 = 15;
		// account 9+8+15+24+35+48+63-h = 202-h; 15+202-8 = 209 = 19*11.
		{"MOD11 negative weight", row070, "070030", "12345678", true},
		{"MOD11 negative weight off", row070, "070030", "12345679", false},
		// DBLAL 2 1 2 1 ...: sort 000000 gives 0; account 1234567h gives
		// 2, 2, 6, 4, 10 -> 1+0, 6, 14 -> 1+4, h: 26+h; 26+4 = 30.
		{"DBLAL own", exDBLAL, "000000", "12345674", true},
		{"DBLAL own off", exDBLAL, "000000", "12345675", false},
		// The same products added whole: 2+2+6+4+10+6+14+4 = 48.
		{"MOD10 does not split products", mod10Alt, "000000", "12345674", false},
		// DBLAL with a product over 9 in the sort code: sort 900000 with
		// 2 1 2 1 ...: 18 -> 1+8 = 9; account 00000001: 1; total 10.
		{"DBLAL sort product split", exDBLAL, "900000", "00000001", true},
		{"DBLAL sort product whole", mod10Alt, "900000", "00000001", false},
		// All zeros pass every rule (the total is 0).
		{"zeros MOD10", row089, "000000", "00000000", true},
		{"zeros MOD11", row107, "000000", "00000000", true},
		{"zeros DBLAL", exDBLAL, "000000", "00000000", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check(tt.rule, tt.sort, tt.account)
			if err != nil {
				t.Fatalf("Check(%s, %s): %v", tt.sort, tt.account, err)
			}
			if got != tt.want {
				t.Errorf("Check(%v, %s, %s) = %v, want %v", tt.rule, tt.sort, tt.account, got, tt.want)
			}
		})
	}
}

func TestCheckErrors(t *testing.T) {
	tests := []struct {
		name          string
		rule          Rule
		sort, account string
		want          error
	}{
		{"short sort code", row089, "08999", "66374958", ErrSortCode},
		{"long sort code", row089, "0899990", "66374958", ErrSortCode},
		{"hyphenated sort code", row089, "08-99-99", "66374958", ErrSortCode},
		{"letter in sort code", row089, "08999A", "66374958", ErrSortCode},
		{"empty sort code", row089, "", "66374958", ErrSortCode},
		{"non-ASCII digit", row089, "08999٩", "66374958", ErrSortCode},
		{"short account", row089, "089999", "6637495", ErrAccountNumber},
		{"long account", row089, "089999", "663749580", ErrAccountNumber},
		{"space in account", row089, "089999", "6637 4958", ErrAccountNumber},
		{"sign in account", row089, "089999", "+6637495", ErrAccountNumber},
		{"empty account", row089, "089999", "", ErrAccountNumber},
		{"unknown method", Rule{"MOD97", row089.Weights}, "089999", "66374958", ErrMethod},
		{"empty method", Rule{Weights: row089.Weights}, "089999", "66374958", ErrMethod},
		{"lower-case method", Rule{"mod10", row089.Weights}, "089999", "66374958", ErrMethod},
		{"weight too large", Rule{MOD10, [14]int{13: MaxWeight + 1}}, "089999", "66374958", ErrWeight},
		{"weight too small", Rule{MOD11, [14]int{0: -MaxWeight - 1}}, "089999", "66374958", ErrWeight},
		{"negative DBLAL weight", Rule{DBLAL, [14]int{5: -1}}, "089999", "66374958", ErrWeight},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check(tt.rule, tt.sort, tt.account)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Check(%v, %q, %q) error = %v, want %v", tt.rule, tt.sort, tt.account, err, tt.want)
			}
			if got {
				t.Errorf("Check returned true with error %v", err)
			}
		})
	}
}

// reference is a direct transcription of the specification, to compare
// Check with in the fuzz target.
func reference(r Rule, sortCode, account string) bool {
	s := sortCode + account
	total := 0
	for i := range 14 {
		p := int(s[i]-'0') * r.Weights[i]
		if r.Method == DBLAL {
			for _, c := range []byte(itoa(p)) {
				total += int(c - '0')
			}
			continue
		}
		total += p
	}
	if r.Method == MOD11 {
		return total%11 == 0
	}
	return total%10 == 0
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// FuzzCheck feeds Check arbitrary inputs and rules: it must never panic,
// return true only without an error, reject exactly the malformed inputs and
// rules, and agree with reference on the well-formed ones.
func FuzzCheck(f *testing.F) {
	seeds := []struct {
		r             Rule
		sort, account string
	}{
		{row089, "089999", "66374958"},
		{row107, "107999", "88837491"},
		{dbl203, "202959", "63748472"},
		{row070, "070030", "12345678"},
		{row040, "040082", "12345672"},
		{row089, "08-99-99", "6637495"},
	}
	for _, s := range seeds {
		var w []byte
		for _, x := range s.r.Weights {
			w = append(w, byte(int8(x)))
		}
		f.Add(string(s.r.Method), w, s.sort, s.account)
	}
	f.Add("", []byte{}, "", "")
	f.Add("DBLAL", []byte{0xff, 0x80, 0x7f}, "\xff\xfe\xfd\xfc\xfb\xfa", "99999999")
	f.Fuzz(func(t *testing.T, method string, weights []byte, sortCode, account string) {
		r := Rule{Method: Method(method)}
		for i := 0; i < len(weights) && i < 14; i++ {
			r.Weights[i] = int(int8(weights[i]))
		}
		got, err := Check(r, sortCode, account)
		if err != nil {
			if got {
				t.Fatalf("true with error %v", err)
			}
			wellFormed := digitsOfLen(sortCode, 6) && digitsOfLen(account, 8) && r.Validate() == nil
			if wellFormed {
				t.Fatalf("error %v for well-formed input", err)
			}
			return
		}
		if !digitsOfLen(sortCode, 6) || !digitsOfLen(account, 8) || r.Validate() != nil {
			t.Fatalf("no error for %q %q %v", sortCode, account, r)
		}
		if want := reference(r, sortCode, account); got != want {
			t.Fatalf("Check(%v, %s, %s) = %v, reference says %v", r, sortCode, account, got, want)
		}
	})
}
