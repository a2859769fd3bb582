// Package ukbank issues and checks emi's own bank identifiers: UK account
// numbers under emi's sort code (with the Pay.UK modulus check that the
// industry applies to them), the GB IBANs built on them, and Bulgarian IBANs.
//
// # UK modulus checking
//
// Check implements the three algorithms of the Pay.UK (formerly VocaLink)
// specification "Validating account numbers – UK modulus checking" (v7.90,
// https://www.vocalink.com/media/a2febq5m/validating-account-numbers-uk-modulus-checking-v7-90.pdf;
// the specification and its weight table valacdos.txt are published at
// https://www.vocalink.com/tools/modulus-checking/). The PDF was not
// reachable when this package was written: the algorithms, test cases and
// weight rows were taken from public implementations that reproduce them
// (see modulus_test.go). Each sort code range of
// the table has one or two rows naming an algorithm (MOD10, MOD11 or DBLAL)
// and 14 weights u v w x y z a b c d e f g h, applied to the six digits of
// the sort code followed by the eight of the account number.
//
// Only the three algorithms are implemented: the table's exception numbers
// (1 to 14) and the sort code substitution table (scsubtab.txt) are not,
// because emi validates and issues numbers for its own sort code only, and
// that sort code's rule is configuration (Scheme.Rule), not a table look-up.
// Validating a counterparty's account against the whole table is another job.
//
// The test vectors in modulus_test.go are the specification's published test
// cases, with the weight rows the published valacdos.txt gives their sort
// codes, and the two worked examples of its algorithm section; see that file
// for where each comes from.
package ukbank

import "errors"

// Method is a modulus checking algorithm of the Pay.UK specification, spelt
// as in the weight table (valacdos.txt).
type Method string

// The three algorithms of the specification.
const (
	// MOD10: the sum of each digit times its weight must be a multiple of 10.
	MOD10 Method = "MOD10"
	// MOD11: the sum of each digit times its weight must be a multiple of 11.
	MOD11 Method = "MOD11"
	// DBLAL (double alternate): each digit is multiplied by its weight and
	// the decimal digits of the products are added (a product of 14 counts
	// 1+4); the total must be a multiple of 10.
	DBLAL Method = "DBLAL"
)

// MaxWeight bounds the absolute value of a weight that a Rule may hold. The
// rows of the published table read for this package have weights from -1 to
// 64; the bound only keeps sums far from overflow and rejects rows that
// cannot be meant.
const MaxWeight = 99

// Rule is one row of the weight table: an algorithm and the 14 weights
// u v w x y z a b c d e f g h, the first six for the sort code and the last
// eight for the account number.
type Rule struct {
	// Method is the algorithm.
	Method Method
	// Weights are applied, in order, to the six digits of the sort code
	// and then the eight digits of the account number.
	Weights [14]int
}

// Errors of Check and of the schemes' validation.
var (
	// ErrSortCode: a sort code that is not exactly six ASCII digits.
	ErrSortCode = errors.New("ukbank: sort code must be exactly 6 digits")
	// ErrAccountNumber: an account number that is not exactly eight ASCII
	// digits.
	ErrAccountNumber = errors.New("ukbank: account number must be exactly 8 digits")
	// ErrMethod: a Rule whose Method is not MOD10, MOD11 or DBLAL.
	ErrMethod = errors.New("ukbank: unknown modulus method (want MOD10, MOD11 or DBLAL)")
	// ErrWeight: a weight outside -MaxWeight..MaxWeight, or a negative
	// weight in a DBLAL rule (whose products are split into digits).
	ErrWeight = errors.New("ukbank: weight out of range")
)

// Validate reports whether r can be applied: a known Method, every weight
// within -MaxWeight..MaxWeight, and no negative weight for DBLAL.
func (r Rule) Validate() error {
	switch r.Method {
	case MOD10, MOD11, DBLAL:
	default:
		return ErrMethod
	}
	for _, w := range r.Weights {
		if w < -MaxWeight || w > MaxWeight || (r.Method == DBLAL && w < 0) {
			return ErrWeight
		}
	}
	return nil
}

// Check applies r to sortCode (six digits, no hyphens) followed by account
// (eight digits) and reports whether the modulus check passes. It returns an
// error, and false, when an input is not exactly that many ASCII digits
// (ErrSortCode, ErrAccountNumber) or when r is not valid (see Rule.Validate).
func Check(r Rule, sortCode, account string) (bool, error) {
	if !digitsOfLen(sortCode, 6) {
		return false, ErrSortCode
	}
	if !digitsOfLen(account, 8) {
		return false, ErrAccountNumber
	}
	if err := r.Validate(); err != nil {
		return false, err
	}
	var d [14]int
	for i := range 6 {
		d[i] = int(sortCode[i] - '0') // #nosec G602 -- sortCode has 6 digits (checked above)
	}
	for i := range 8 {
		d[6+i] = int(account[i] - '0') // #nosec G602 -- account has 8 digits (checked above)
	}
	return r.holds(&d), nil
}

// holds applies the valid rule r to the 14 digits d.
func (r Rule) holds(d *[14]int) bool {
	total := 0
	for i, w := range r.Weights {
		total += r.term(d[i], w)
	}
	return total%r.modulus() == 0
}

// term is what one digit d with weight w adds to the total under r.Method.
func (r Rule) term(d, w int) int {
	if r.Method == DBLAL {
		return digitSum(d * w)
	}
	return d * w
}

// modulus is 11 for MOD11 and 10 for MOD10 and DBLAL.
func (r Rule) modulus() int {
	if r.Method == MOD11 {
		return 11
	}
	return 10
}

// digitSum returns the sum of the decimal digits of n >= 0.
func digitSum(n int) int {
	s := 0
	for ; n > 0; n /= 10 {
		s += n % 10
	}
	return s
}

// digitsOfLen reports whether s is exactly n ASCII digits.
func digitsOfLen(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
