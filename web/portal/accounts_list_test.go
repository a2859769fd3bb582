package portal_test

import (
	"regexp"
	"testing"
)

// TestAccountListShowsBalances: the account list shows each account's
// available balance beside its identifiers, so customer service need not
// open every account. The old list had no balance column: this test failed
// there.
func TestAccountListShowsBalances(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	a.env.Fund(t, a.eurTok, balance(a.eur, "token"), "EUR", 1250)
	p := a.cs.Get(t, "/backoffice/accounts?q=Velikova")
	cell := func(tok string) string {
		m := regexp.MustCompile(`(?s)href="/backoffice/accounts/` + tok + `".*?data-testid="account-balances">(.*?)</td>`).FindStringSubmatch(p.Body)
		if m == nil {
			t.Fatalf("account %s: no balance cell", tok)
		}
		return m[1]
	}
	if c := cell(a.eurTok); !regexp.MustCompile(`<div>12\.50 EUR</div>`).MatchString(c) {
		t.Errorf("the funded EUR account's balance cell is %q", c)
	}
	if c := cell(a.gbpTok); !regexp.MustCompile(`<div>0\.00 GBP</div>`).MatchString(c) {
		t.Errorf("the GBP account's balance cell is %q", c)
	}
}
