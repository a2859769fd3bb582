package transfers

// Unit tests of the transfers area's rules that need no database: what a
// partner sees of a transfer and of its events, the checks of a transfer,
// a return and an incoming credit (every problem at once), who may credit
// incoming money, the destination-miss budget, and the small formats the
// back office shows. The flows themselves (ledger, locks, events) are
// tested against PostgreSQL in internal/service/servicetest and web/api.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/ukbank"
)

// noFieldErrors is a struct validator that finds nothing wrong, so a test
// sees the service's own checks alone.
type noFieldErrors struct{}

func (noFieldErrors) Struct(any, *emi.Error) error { return nil }

func partnerCtx(partner string) context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: "key-" + partner,
		PartnerID: partner, MasterMerchant: "mm-" + partner})
}

func staffCtx(roles ...emi.Role) context.Context {
	rs := make([]string, len(roles))
	for i, r := range roles {
		rs[i] = string(r)
	}
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: "staff-1", StaffRoles: rs})
}

var systemCtx = emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))

// fieldsOf returns the field errors of err, an *emi.Error, as
// "field: message" lines, or fails the test when err is not want.
func fieldsOf(t *testing.T, err error, want *emi.Error) []string {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	var out []string
	for _, f := range emi.AsError(err).Fields {
		out = append(out, f.Field+": "+f.Message)
	}
	return out
}

// hasField reports whether one of the lines is about field.
func hasField(lines []string, field string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, field+": ") })
}

// twoPartners is an internal transfer from partner A's customer to
// partner B's.
func twoPartners() emi.Transfer {
	return emi.Transfer{Token: "t1", PartnerID: "A", Type: emi.TransferInternal, Status: emi.TransferCompleted,
		SourceAccount: "acc-a", SourceBalance: "bal-a", SourceIBAN: "IBAN-A", SourcePartner: "A",
		DestinationAccount: "acc-b", DestinationBalance: "bal-b", DestinationIBAN: "IBAN-B", DestinationPartner: "B",
		Amount: 1234, Currency: "EUR", Reference: "rent"}
}

func TestPartnerViewShowsAnotherPartnersSideByIBANOnly(t *testing.T) {
	t.Parallel()
	tr := twoPartners()

	a, err := PartnerView(tr, "A")
	if err != nil {
		t.Fatal(err)
	}
	if a.SourceAccount != "acc-a" || a.SourceBalance != "bal-a" {
		t.Errorf("the sender's own side: %q %q, want its tokens", a.SourceAccount, a.SourceBalance)
	}
	if a.DestinationAccount != "" || a.DestinationBalance != "" || a.DestinationIBAN != "IBAN-B" {
		t.Errorf("the other partner's side as the sender sees it: %q %q %q, want the IBAN only",
			a.DestinationAccount, a.DestinationBalance, a.DestinationIBAN)
	}

	b, err := PartnerView(tr, "B")
	if err != nil {
		t.Fatal(err)
	}
	if b.SourceAccount != "" || b.SourceBalance != "" || b.SourceIBAN != "IBAN-A" {
		t.Errorf("the sender's side as the receiver sees it: %q %q %q, want the IBAN only", b.SourceAccount, b.SourceBalance, b.SourceIBAN)
	}
	if b.DestinationAccount != "acc-b" || b.DestinationBalance != "bal-b" {
		t.Errorf("the receiver's own side: %q %q", b.DestinationAccount, b.DestinationBalance)
	}

	if _, err := PartnerView(tr, "C"); !errors.Is(err, emi.ErrTransferNotFound) {
		t.Errorf("a third partner: %v, want ErrTransferNotFound", err)
	}
	// The view is a copy: the transfer itself keeps both sides.
	if tr.DestinationAccount != "acc-b" || tr.SourceAccount != "acc-a" {
		t.Error("PartnerView changed the transfer it was given")
	}

	// A partner that sent the transfer on a side it does not hold (the
	// staff-made transfer's partner) still sees the source it sent from.
	own := twoPartners()
	own.SourcePartner = "X"
	if v, err := PartnerView(own, "A"); err != nil || v.SourceAccount != "acc-a" {
		t.Errorf("the sending partner's source: %+v %v", v, err)
	}
}

func TestTransferEventFieldsFollowThePartnersView(t *testing.T) {
	t.Parallel()
	tr := twoPartners()

	a, ok := TransferEventFields(tr, "A")
	if !ok {
		t.Fatal("no event for the sender")
	}
	want := map[string]any{"type": emi.TransferInternal, "status": emi.TransferCompleted, "amount": "12.34", "currency": "EUR",
		"reference": "rent", "source_account": "acc-a", "source_balance": "bal-a", "source_iban": "IBAN-A", "destination_iban": "IBAN-B"}
	if !maps.Equal(a, want) {
		t.Errorf("the sender's event data\n got %v\nwant %v", a, want)
	}
	b, ok := TransferEventFields(tr, "B")
	if !ok || b["destination_account"] != "acc-b" || b["source_account"] != nil || b["source_iban"] != "IBAN-A" {
		t.Errorf("the receiver's event data %v", b)
	}
	if f, ok := TransferEventFields(tr, "C"); ok || f != nil {
		t.Errorf("a third partner gets an event: %v", f)
	}

	out := emi.Transfer{PartnerID: "A", Type: emi.TransferOutgoing, Status: emi.TransferReturned, SourceAccount: "acc-a",
		SourceBalance: "bal-a", SourcePartner: "A", Amount: 5, Currency: "GBP", ReturnReason: "account closed",
		Counterparty: emi.Counterparty{Name: "Ada", AccountNumber: "12345678", SortCode: "040004", Scheme: emi.SchemeFasterPayments}}
	f, ok := TransferEventFields(out, "A")
	if !ok {
		t.Fatal("no event for an outgoing payment")
	}
	for k, v := range map[string]any{"destination_name": "Ada", "destination_account_number": "12345678", "destination_sort_code": "040004",
		"return_reason": "account closed", "amount": "0.05", "source_account": "acc-a"} {
		if f[k] != v {
			t.Errorf("outgoing %s = %v, want %v", k, f[k], v)
		}
	}
	if _, ok := f["destination_iban"]; ok {
		t.Error("an outgoing payment to an account number carries a destination IBAN")
	}
	if _, ok := f["counterparty"]; ok {
		t.Error("an outgoing payment carries a counterparty object (that is for incoming credits)")
	}

	in := emi.Transfer{PartnerID: "B", Type: emi.TransferIncoming, Status: emi.TransferCompleted, DestinationAccount: "acc-b",
		DestinationBalance: "bal-b", DestinationPartner: "B", Amount: 100, Currency: "EUR",
		Counterparty: emi.Counterparty{Name: "Payer", IBAN: "DE89370400440532013000", Scheme: emi.SchemeSEPA}}
	f, ok = TransferEventFields(in, "B")
	if !ok {
		t.Fatal("no event for an incoming credit")
	}
	cp, _ := f["counterparty"].(map[string]any)
	if !maps.Equal(cp, map[string]any{"name": "Payer", "iban": "DE89370400440532013000", "scheme": emi.SchemeSEPA}) {
		t.Errorf("the counterparty %v: want only its non-empty fields", cp)
	}
	if _, ok := f["return_reason"]; ok || f["destination_account"] != "acc-b" {
		t.Errorf("incoming event data %v", f)
	}
}

func TestCheckPartyWantsExactlyOneWayOfNamingASide(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		party emi.TransferParty
		want  string // the message, "" for none
	}{
		{"a balance", emi.TransferParty{Balance: "b"}, ""},
		{"an account", emi.TransferParty{Account: "a"}, ""},
		{"an IBAN", emi.TransferParty{IBAN: "GB29NWBK60161331926819"}, ""},
		{"an account number with its sort code", emi.TransferParty{AccountNumber: "12345678", SortCode: "040004"}, ""},
		{"nothing", emi.TransferParty{}, "give one of balance, account, iban, or account_number with sort_code"},
		{"blanks only", emi.TransferParty{Account: " ", Balance: "\t"}, "give one of balance, account, iban, or account_number with sort_code"},
		{"two tokens", emi.TransferParty{Account: "a", Balance: "b"}, "give only one of balance, account, iban, or account_number with sort_code"},
		{"a token and an IBAN", emi.TransferParty{Balance: "b", IBAN: "GB29NWBK60161331926819"}, "give only one of balance, account, iban, or account_number with sort_code"},
		{"an IBAN and an account number", emi.TransferParty{IBAN: "GB29NWBK60161331926819", AccountNumber: "12345678", SortCode: "040004"},
			"give only one of balance, account, iban, or account_number with sort_code"},
		{"an account number alone", emi.TransferParty{AccountNumber: "12345678"}, "account_number and sort_code go together"},
		{"a sort code alone", emi.TransferParty{SortCode: "040004"}, "account_number and sort_code go together"},
	} {
		var bad kernel.Problems
		checkParty(&bad, "destination", c.party)
		switch {
		case c.want == "" && len(bad) != 0:
			t.Errorf("%s: %v, want no problem", c.name, bad)
		case c.want != "" && (len(bad) != 1 || bad[0].Field != "destination" || bad[0].Message != c.want):
			t.Errorf("%s: %v, want one problem on destination: %s", c.name, bad, c.want)
		}
	}
	if namedByToken(emi.TransferParty{IBAN: "x"}) || !namedByToken(emi.TransferParty{Account: "a"}) ||
		!namedByToken(emi.TransferParty{Balance: "b"}) || namedByToken(emi.TransferParty{Balance: "  "}) {
		t.Error("namedByToken: a side is named by token when it has an account or a balance that is not blank")
	}
}

func TestCheckPrintableRefusesControlCharactersOnce(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "Invoice 42", "Zürich – café ☕", "Платёж №7"} {
		var bad kernel.Problems
		checkReference(&bad, ok)
		if len(bad) != 0 {
			t.Errorf("%q: %v, want accepted", ok, bad)
		}
	}
	for _, no := range []string{"line\nbreak", "tab\there", "nul\x00", "bell\a\a\a", "del\x7f", "bidi\u202eoverride"} {
		var bad kernel.Problems
		checkPrintable(&bad, "payer.name", no)
		if len(bad) != 1 || bad[0].Field != "payer.name" || bad[0].Message != "must be printable text without control characters" {
			t.Errorf("%q: %v, want one problem on payer.name", no, bad)
		}
	}
}

func TestReturnReason(t *testing.T) {
	t.Parallel()
	if got, err := returnReason("  account closed \n"); err != nil || got != "account closed" {
		t.Errorf("a reason with blanks around it: %q %v, want it trimmed", got, err)
	}
	// The bound is in characters, not bytes.
	long := strings.Repeat("é", MaxReturnReason)
	if got, err := returnReason(long); err != nil || got != long {
		t.Errorf("%d two-byte characters: %v, want accepted", MaxReturnReason, err)
	}
	for _, c := range []struct{ reason, want string }{
		{"", "reason: is required: why the receiving bank returned the payment"},
		{" \t ", "reason: is required: why the receiving bank returned the payment"},
		{long + "x", "reason: must be at most 140 characters"},
		{"closed\x00", "reason: must be printable text without control characters"},
	} {
		got, err := returnReason(c.reason)
		if fs := fieldsOf(t, err, emi.ErrTransferValidation); len(fs) != 1 || fs[0] != c.want || got != "" {
			t.Errorf("%q: %q %v, want %q", c.reason, got, fs, c.want)
		}
	}
}

func TestValidBIC(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"EMIXGB2L":     true,
		"DEUTDEFF500":  true,
		"NWBKGB2LXXX":  true,
		"BKAU1234":     false, // the country is letters
		"emixgb2l":     false, // capitals only
		"EMIXGB2":      false,
		"EMIXGB2LX":    false, // 9 characters
		"EMIXGB2LXXXX": false,
		"EM1XGB2L":     false, // the bank is letters
		"EMIXGB2-":     false,
		"":             false,
	} {
		if got := ValidBIC(s); got != want {
			t.Errorf("ValidBIC(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestCheckSchemeCurrency(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		scheme, currency string
		problem          bool
	}{
		{emi.SchemeSEPA, "EUR", false},
		{emi.SchemeSEPA, "GBP", true},
		{emi.SchemeSEPA, "BGN", true},
		{emi.SchemeFasterPayments, "GBP", false},
		{emi.SchemeFasterPayments, "EUR", true},
		{emi.SchemeCard, "BGN", false}, // a card top-up in any of emi's currencies
		{emi.SchemeSEPA, "", false},    // a missing currency is reported elsewhere
	} {
		var bad kernel.Problems
		checkSchemeCurrency(&bad, c.scheme, c.currency)
		if got := len(bad) == 1 && bad[0].Field == "currency"; got != c.problem || len(bad) > 1 {
			t.Errorf("%s in %q: %v, want a currency problem: %v", c.scheme, c.currency, bad, c.problem)
		}
	}
}

func TestOwnBankUKIBAN(t *testing.T) {
	t.Parallel()
	own := OwnBank{UK: ukbank.DefaultScheme}
	acc, err := ukbank.DefaultScheme.AccountNumber(1234567)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := own.UKIBAN(ukbank.DefaultScheme.SortCode, acc)
	if !ok || !strings.HasPrefix(got, "GB") || !strings.HasSuffix(got, "EMIX"+ukbank.DefaultScheme.SortCode+acc) {
		t.Errorf("emi's own account number: %q %v, want its GB IBAN", got, ok)
	}
	// A number that fails the modulus rule is not one of emi's.
	bad := acc[:7] + string('0'+(acc[7]-'0'+1)%10)
	if got, ok := own.UKIBAN(ukbank.DefaultScheme.SortCode, bad); ok {
		t.Errorf("an account number failing the rule: %q", got)
	}
	if got, ok := own.UKIBAN("040004", acc); ok {
		t.Errorf("another bank's sort code: %q", got)
	}
	if got, ok := (OwnBank{}).UKIBAN("", acc); ok {
		t.Errorf("no UK scheme configured: %q", got)
	}
}

func TestPayerOfSplitsAGBIBANOfAFasterPayment(t *testing.T) {
	t.Parallel()
	fp := emi.IncomingCredit{Scheme: emi.SchemeFasterPayments, Payer: emi.IncomingPayer{Name: "Ada", IBAN: "GB29NWBK60161331926819"}}
	if c := payerOf(fp); c.SortCode != "601613" || c.AccountNumber != "31926819" || c.IBAN != "GB29NWBK60161331926819" ||
		c.Name != "Ada" || c.Scheme != emi.SchemeFasterPayments {
		t.Errorf("a Faster Payment from a GB IBAN: %+v, want its sort code and account number read from it", c)
	}
	sepa := fp
	sepa.Scheme = emi.SchemeSEPA
	if c := payerOf(sepa); c.SortCode != "" || c.AccountNumber != "" {
		t.Errorf("a SEPA payer's GB IBAN was split: %+v", c)
	}
	given := fp
	given.Payer.AccountNumber, given.Payer.SortCode = "11112222", "334455"
	if c := payerOf(given); c.AccountNumber != "11112222" || c.SortCode != "334455" {
		t.Errorf("the payer's own account number was replaced: %+v", c)
	}
	card := emi.IncomingCredit{Scheme: emi.SchemeCard, Payer: emi.IncomingPayer{Name: "Bo", CardLast4: "4242"}}
	if c := payerOf(card); c.CardLast4 != "4242" || c.Scheme != emi.SchemeCard {
		t.Errorf("a card top-up's payer: %+v", c)
	}
}

func TestFormatsPeopleRead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		party emi.TransferParty
		want  string
	}{
		{emi.TransferParty{IBAN: "BG80BNBG96611020345678", Account: "ignored"}, "IBAN BG80BNBG96611020345678"},
		{emi.TransferParty{AccountNumber: "12345678", SortCode: "040069"}, "sort code 04-00-69 account 12345678"},
		{emi.TransferParty{Account: "acc"}, "account acc"},
		{emi.TransferParty{Balance: "bal"}, "balance bal"},
		{emi.TransferParty{}, ""},
	} {
		if got := describeParty(c.party); got != c.want {
			t.Errorf("describeParty(%+v) = %q, want %q", c.party, got, c.want)
		}
	}
	if got := fmtSortCode("12345"); got != "12345" {
		t.Errorf("a sort code that is not 6 digits is shown as it is: %q", got)
	}
	if got := digitsOnly(" 04-00 69 "); got != "040069" {
		t.Errorf("digitsOnly: %q", got)
	}
	if got := digitsOnly("04/00/69"); got != "04/00/69" {
		t.Errorf("digitsOnly keeps what the format checks refuse: %q", got)
	}
	for s, want := range map[string]bool{"4242": true, "0000": true, "424": false, "42424": false, "42a2": false, "": false} {
		if cardLast4(s) != want {
			t.Errorf("cardLast4(%q) = %v", s, !want)
		}
	}
	if targetText(emi.TransferParty{IBAN: "GB29NWBK60161331926819", Balance: "bal"}) != "GB29NWBK60161331926819" ||
		targetText(emi.TransferParty{Balance: "bal"}) != "bal" {
		t.Error("targetText: the IBAN when there is one, else the balance token")
	}
}

func TestSuspenseAge(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	now := created.Add(50 * time.Hour)
	if got := SuspenseAge(emi.SuspenseItem{CreatedAt: created}, now); got != 50*time.Hour {
		t.Errorf("an open item: %v, want its age now", got)
	}
	resolved := created.Add(3 * time.Hour)
	if got := SuspenseAge(emi.SuspenseItem{CreatedAt: created, ResolvedAt: &resolved}, now); got != 3*time.Hour {
		t.Errorf("a resolved item: %v, want the time it waited", got)
	}
	if got := SuspenseAge(emi.SuspenseItem{CreatedAt: now.Add(time.Minute)}, now); got != 0 {
		t.Errorf("an item stamped after now (clock skew): %v, want 0", got)
	}
}

// fakeLimits is a rate limiter with fixed answers that records its calls.
type fakeLimits struct {
	ok, over bool
	retry    time.Duration
	err      error
	calls    []string
}

func (f *fakeLimits) Take(_ context.Context, scope, subject string, limit int, window time.Duration, _ time.Time) (bool, time.Duration, error) {
	f.calls = append(f.calls, "take "+scope+" "+subject+" "+strconv.Itoa(limit)+" "+window.String())
	return f.ok, f.retry, f.err
}

func (f *fakeLimits) Over(_ context.Context, scope, subject string, limit int, window time.Duration, _ time.Time) (bool, time.Duration, error) {
	f.calls = append(f.calls, "over "+scope+" "+subject+" "+strconv.Itoa(limit)+" "+window.String())
	return f.over, f.retry, f.err
}

func (f *fakeLimits) Release(context.Context, string, string, time.Time) error { return nil }

func TestDestinationMissesAreCountedPerKey(t *testing.T) {
	t.Parallel()
	now := func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
	p := emi.Principal{Type: emi.ActorPartnerKey, ActorID: "key-1", PartnerID: "A"}
	ctx := context.Background()
	wantCall := destinationMissScope + " key-1 " + strconv.Itoa(DestinationMissLimit) + " " + DestinationMissWindow.String()

	// Without a limiter a miss is 14006 on the destination.
	err := (&Transfers{now: now}).destinationMiss(ctx, p)
	if fs := fieldsOf(t, err, emi.ErrDestinationNotFound); len(fs) != 1 || !hasField(fs, "destination") {
		t.Errorf("a miss without a limiter: %v", fs)
	}
	if err := (&Transfers{now: now}).missBudget(ctx, p); err != nil {
		t.Errorf("the budget without a limiter: %v", err)
	}

	l := &fakeLimits{ok: true}
	if err := (&Transfers{now: now, limits: l}).destinationMiss(ctx, p); !errors.Is(err, emi.ErrDestinationNotFound) {
		t.Errorf("a miss within the budget: %v, want 14006", err)
	}
	if len(l.calls) != 1 || l.calls[0] != "take "+wantCall {
		t.Errorf("limiter calls %q, want one take for the key", l.calls)
	}

	l = &fakeLimits{ok: false, retry: 90 * time.Second}
	err = (&Transfers{now: now, limits: l}).destinationMiss(ctx, p)
	var ra kernel.RetryAfter
	if !errors.Is(err, emi.ErrRateLimited) || !errors.As(err, &ra) || time.Duration(ra) != 90*time.Second {
		t.Errorf("a miss beyond the budget: %v, want 10029 with the limiter's retry", err)
	}

	l = &fakeLimits{over: true, retry: time.Minute}
	err = (&Transfers{now: now, limits: l}).missBudget(ctx, p)
	if !errors.Is(err, emi.ErrRateLimited) || !errors.As(err, &ra) || time.Duration(ra) != time.Minute {
		t.Errorf("a key over the budget: %v, want 10029 before anything is looked up", err)
	}
	if len(l.calls) != 1 || l.calls[0] != "over "+wantCall {
		t.Errorf("limiter calls %q, want one look (over) that counts nothing", l.calls)
	}
	if err := (&Transfers{now: now, limits: &fakeLimits{}}).missBudget(ctx, p); err != nil {
		t.Errorf("a key under the budget: %v", err)
	}

	broken := errors.New("limiter down")
	if err := (&Transfers{now: now, limits: &fakeLimits{err: broken}}).destinationMiss(ctx, p); !errors.Is(err, broken) {
		t.Errorf("a limiter failure: %v, want it passed on", err)
	}
	if err := (&Transfers{now: now, limits: &fakeLimits{err: broken}}).missBudget(ctx, p); !errors.Is(err, broken) {
		t.Errorf("a limiter failure (budget): %v, want it passed on", err)
	}
}

// TestCreateReportsEveryProblemBeforeTouchingAnything: a malformed
// transfer is refused with all its problems at once (14001), before the
// service reads or locks anything (its store and transaction are nil
// here), and only a partner may send one.
func TestCreateReportsEveryProblemBeforeTouchingAnything(t *testing.T) {
	t.Parallel()
	s := &Transfers{validate: noFieldErrors{}, now: time.Now}
	_, err := s.Create(partnerCtx("A"), emi.TransferCreate{
		Source:      emi.TransferParty{},
		Destination: emi.TransferParty{Account: "a", IBAN: "GB29NWBK60161331926819"},
		Amount:      0, Currency: "USD", Reference: "rent\x00",
	})
	fs := fieldsOf(t, err, emi.ErrTransferValidation)
	for _, f := range []string{"amount", "currency", "reference", "source", "destination"} {
		if !hasField(fs, f) {
			t.Errorf("no problem on %s in %q", f, fs)
		}
	}
	if len(fs) != 5 {
		t.Errorf("%d problems %q, want one per field", len(fs), fs)
	}

	for name, ctx := range map[string]context.Context{
		"no principal": context.Background(),
		"staff":        staffCtx(emi.RoleAdmin),
		"the system":   systemCtx,
	} {
		if _, err := s.Create(ctx, emi.TransferCreate{}); !errors.Is(err, emi.ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", name, err)
		}
	}
}

func TestCreditorSaysWhoMayCreditIncomingMoney(t *testing.T) {
	t.Parallel()
	sandbox := &Incoming{cfg: IncomingConfig{Sandbox: true}}
	live := &Incoming{cfg: IncomingConfig{Sandbox: false}}
	for _, c := range []struct {
		name    string
		s       *Incoming
		ctx     context.Context
		partner string
		err     *emi.Error
	}{
		{"the system, live", live, systemCtx, "", nil},
		{"the system, sandbox", sandbox, systemCtx, "", nil},
		{"a partner, sandbox: its own accounts", sandbox, partnerCtx("A"), "A", nil},
		{"a partner, live: an unknown route", live, partnerCtx("A"), "", emi.ErrRouteNotFound},
		{"a key without a partner", sandbox, emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey}), "", emi.ErrForbidden},
		{"staff who manage money, sandbox", sandbox, staffCtx(emi.RoleCompliance), "", nil},
		{"staff who manage money, live: an unknown route", live, staffCtx(emi.RoleCustomerService), "", emi.ErrRouteNotFound},
		{"an admin (views money, does not manage it)", sandbox, staffCtx(emi.RoleAdmin), "", emi.ErrForbidden},
		{"an auditor", sandbox, staffCtx(emi.RoleAuditor), "", emi.ErrForbidden},
		{"no principal", sandbox, context.Background(), "", emi.ErrForbidden},
	} {
		got, err := c.s.creditor(c.ctx)
		switch {
		case c.err == nil && (err != nil || got != c.partner):
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.partner)
		case c.err != nil && (!errors.Is(err, c.err) || got != ""):
			t.Errorf("%s: %q %v, want %v", c.name, got, err, c.err)
		}
	}
}

func TestCheckCreditNormalisesAndReportsEveryProblem(t *testing.T) {
	t.Parallel()
	s := &Incoming{validate: noFieldErrors{}}

	in := emi.IncomingCredit{Scheme: " faster_payments ", Amount: 2500, Currency: " gbp ", Reference: "  invoice 7 ",
		Payer:       emi.IncomingPayer{Name: " Ada Lovelace ", AccountNumber: "1234 5678", SortCode: "60-16-13"},
		Destination: emi.TransferParty{AccountNumber: "12-34-56-79", SortCode: "04 00 69"}}
	dest, err := s.checkCredit(&in)
	if err != nil {
		t.Fatalf("a good Faster Payment: %v", err)
	}
	if dest != "sort code 04-00-69 account 12345679" {
		t.Errorf("destination as people read it: %q", dest)
	}
	if in.Scheme != emi.SchemeFasterPayments || in.Currency != "GBP" || in.Reference != "invoice 7" || in.Payer.Name != "Ada Lovelace" ||
		in.Payer.AccountNumber != "12345678" || in.Payer.SortCode != "601613" || in.Destination.SortCode != "040069" {
		t.Errorf("not normalised: %+v", in)
	}

	token := "0f8fad5b-d9cb-469f-a165-70867728950e"
	for _, c := range []struct {
		name string
		in   emi.IncomingCredit
		want []string // the fields with a problem, all of them
	}{
		{"a good SEPA credit", emi.IncomingCredit{Scheme: emi.SchemeSEPA, Amount: 1, Currency: "EUR",
			Payer: emi.IncomingPayer{Name: "P", IBAN: "DE89 3704 0044 0532 0130 00"}, Destination: emi.TransferParty{IBAN: "BG80BNBG96611020345678"}}, nil},
		{"a good card top-up to an account", emi.IncomingCredit{Scheme: emi.SchemeCard, Amount: 1, Currency: "BGN",
			Payer: emi.IncomingPayer{Name: "P", CardLast4: "4242"}, Destination: emi.TransferParty{Account: strings.ToUpper(token)}}, nil},
		{"SEPA in pounds to an account number, from a card", emi.IncomingCredit{Scheme: emi.SchemeSEPA, Amount: 1, Currency: "GBP",
			Payer: emi.IncomingPayer{Name: "P", CardLast4: "4242"}, Destination: emi.TransferParty{AccountNumber: "12345678", SortCode: "040069"}},
			[]string{"currency", "payer", "destination"}},
		{"a Faster Payment from a German IBAN and a card", emi.IncomingCredit{Scheme: emi.SchemeFasterPayments, Amount: 1, Currency: "GBP",
			Payer: emi.IncomingPayer{Name: "P", IBAN: "DE89370400440532013000", CardLast4: "4242"}, Destination: emi.TransferParty{IBAN: "DE89370400440532013000"}},
			[]string{"payer.card_last4", "payer.iban", "destination"}},
		{"a card top-up without the card, to an IBAN", emi.IncomingCredit{Scheme: emi.SchemeCard, Amount: 1, Currency: "EUR",
			Payer: emi.IncomingPayer{Name: "P"}, Destination: emi.TransferParty{IBAN: "BG80BNBG96611020345678"}},
			[]string{"payer.card_last4", "destination"}},
		{"nothing right", emi.IncomingCredit{Scheme: "swift", Amount: -1, Currency: "USD", Reference: "a\nb",
			Payer: emi.IncomingPayer{IBAN: "GB00NWBK60161331926819", AccountNumber: "123", CardLast4: "42x2"}, Destination: emi.TransferParty{}},
			[]string{"amount", "reference", "currency", "scheme", "payer.name", "payer.iban", "payer.account_number", "payer.card_last4", "destination"}},
		{"a destination token that is not one", emi.IncomingCredit{Scheme: emi.SchemeCard, Amount: 1, Currency: "EUR",
			Payer: emi.IncomingPayer{Name: "P", CardLast4: "4242"}, Destination: emi.TransferParty{Balance: "not-a-token"}},
			[]string{"destination.balance"}},
		{"an invalid destination IBAN", emi.IncomingCredit{Scheme: emi.SchemeSEPA, Amount: 1, Currency: "EUR",
			Payer: emi.IncomingPayer{Name: "P"}, Destination: emi.TransferParty{IBAN: "BG00BNBG96611020345678"}},
			[]string{"destination.iban"}},
		{"a payer with an IBAN and an account number (Faster Payments)", emi.IncomingCredit{Scheme: emi.SchemeFasterPayments, Amount: 1, Currency: "GBP",
			Payer:       emi.IncomingPayer{Name: "P", IBAN: "GB29NWBK60161331926819", AccountNumber: "12345678", SortCode: "601613"},
			Destination: emi.TransferParty{IBAN: "GB29NWBK60161331926819"}},
			[]string{"payer"}},
	} {
		in := c.in
		_, err := s.checkCredit(&in)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want accepted", c.name, err)
			}
			continue
		}
		fs := fieldsOf(t, err, emi.ErrTransferValidation)
		var got []string
		for _, f := range fs {
			field, _, _ := strings.Cut(f, ": ")
			if !slices.Contains(got, field) {
				got = append(got, field)
			}
		}
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: problems on %v (%q), want on %v", c.name, got, fs, want)
		}
	}
}
