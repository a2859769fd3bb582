package servicetest_test

// Transaction monitoring's typologies against PostgreSQL: each has a
// positive, a negative and a boundary case, booked through the history
// import (the ledger, then the rules as of each movement's time), and the
// windows are raced. The rules' parameters are the shipped defaults
// (migrations/00096_monitoring.sql).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/testwait"
)

// monitoringApp is the whole application with a partner whose people and
// merchant accounts the tests move money on.
type monitoringApp struct {
	env *apptest.Env
	p   *apptest.Partner
	// base is the first instant of the month before last: every test's
	// history happens in the past, in whole calendar months.
	base time.Time
}

func newMonitoringApp(t testing.TB) *monitoringApp {
	t.Helper()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	if tt, ok := t.(*testing.T); ok {
		t.Cleanup(func() { ledgerBalanced(tt, env) })
	}
	now := time.Now().UTC()
	base := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -2, 0)
	return &monitoringApp{env: env, p: env.NewPartner(t, emi.PartnerCreate{Name: "Monitored Partner"}), base: base}
}

func (m *monitoringApp) partner() context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: m.p.KeyID, PartnerID: m.p.ID,
		MasterMerchant: m.p.Merchant})
}

// person creates a person with the declared profile and a EUR account,
// and returns the person's and the account's tokens.
func (m *monitoringApp) person(t testing.TB, incoming, outgoing, frequency, risk string) (user, account string) {
	t.Helper()
	id := kernel.NewToken()
	in := emi.UserCreate{Email: id + "@example.com"}
	in.FirstName, in.LastName = "Mona", "Torrance "+strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return 'a' + (r - '0')
		}
		return r
	}, id[24:])
	in.ExpectedIncomingMonthlyEUR, in.ExpectedOutgoingMonthlyEUR = incoming, outgoing
	in.ExpectedMonthlyFrequency, in.RiskScore = frequency, risk
	u, err := m.env.App.Users.Create(m.partner(), in)
	if err != nil {
		t.Fatalf("create person: %v", err)
	}
	a, err := m.env.App.Accounts.Create(m.partner(), emi.AccountCreate{Program: "account_eur", User: u.Token})
	if err != nil {
		t.Fatalf("open the person's account: %v", err)
	}
	return u.Token, a.Token
}

// merchantAccount opens a EUR account of the partner's own merchant.
func (m *monitoringApp) merchantAccount(t *testing.T) string {
	t.Helper()
	a, err := m.env.App.Accounts.Create(m.partner(), emi.AccountCreate{Program: "account_eur", Merchant: m.p.Merchant})
	if err != nil {
		t.Fatalf("open a merchant account: %v", err)
	}
	return a.Token
}

// line is one movement of a history file.
type line map[string]any

func (m *monitoringApp) at(d time.Duration) string { return m.base.Add(d).Format(time.RFC3339) }

const day = 24 * time.Hour

func incoming(ref, at, account, amount, iban string) line {
	return line{"ref": ref, "at": at, "kind": "incoming", "account": account, "amount": amount, "currency": "EUR",
		"counterparty": map[string]string{"iban": iban, "name": "Payer " + iban}}
}

func outgoing(ref, at, account, amount, iban string) line {
	return line{"ref": ref, "at": at, "kind": "transfer_out", "account": account, "amount": amount, "currency": "EUR",
		"counterparty": map[string]string{"iban": iban, "name": "Payee " + iban}}
}

func card(kind, ref, at, account, amount, mcc string) line {
	return line{"ref": ref, "at": at, "kind": kind, "account": account, "amount": amount, "currency": "EUR",
		"merchant": map[string]string{"name": "Shop " + mcc, "mcc": mcc, "country": "DE"}}
}

// iban returns a German IBAN numbered n (monitoring checks no checksum).
func iban(n int) string { return fmt.Sprintf("DE89370400440532%06d", n) }

// load imports lines and fails on any refusal.
func (m *monitoringApp) load(t *testing.T, lines ...line) {
	t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	res, err := m.env.App.HistoryImport.Import(context.Background(), m.p.ID, &b)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if len(res.Refused) > 0 {
		t.Fatalf("import refused %v", res.Refused)
	}
}

// alertOf returns the subject's alert (empty when none).
func (m *monitoringApp) alertOf(t *testing.T, subject string) monitoring.Alert {
	t.Helper()
	alerts, err := m.env.App.Monitor.SystemAlerts(context.Background(), monitoring.AlertFilter{PartnerID: m.p.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if a.Subject.Token == subject {
			return a
		}
	}
	return monitoring.Alert{}
}

// raised reports whether rule raised on the subject, and its sentence.
func (m *monitoringApp) raised(t *testing.T, subject, rule string) (bool, string) {
	t.Helper()
	for _, h := range m.alertOf(t, subject).Hits {
		if h.Rule == rule {
			return true, h.Sentence
		}
	}
	return false, ""
}

func (m *monitoringApp) wantRaised(t *testing.T, subject, rule string, sentence ...string) {
	t.Helper()
	ok, got := m.raised(t, subject, rule)
	if !ok {
		t.Fatalf("%s did not raise; alert: %+v", rule, m.alertOf(t, subject))
	}
	for _, s := range sentence {
		if !strings.Contains(got, s) {
			t.Errorf("%s says %q, want it to say %q", rule, got, s)
		}
	}
}

func (m *monitoringApp) wantQuiet(t *testing.T, subject, rule string) {
	t.Helper()
	if ok, got := m.raised(t, subject, rule); ok {
		t.Fatalf("%s raised: %q", rule, got)
	}
}

func TestMonitoringLargeAmount(t *testing.T) {
	m := newMonitoringApp(t)
	t.Run("positive", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("big", m.at(day), a, "15000.00", iban(1)))
		m.wantRaised(t, u, monitoring.RuleLargeAmount, "15,000.00 EUR", "10,000.00 EUR or more")
	})
	t.Run("negative", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("small", m.at(day), a, "500.00", iban(1)))
		m.wantQuiet(t, u, monitoring.RuleLargeAmount)
	})
	t.Run("a merchant's account", func(t *testing.T) {
		a := m.merchantAccount(t)
		m.load(t, incoming("invoice", m.at(day), a, "25000.00", iban(1)))
		m.wantRaised(t, m.p.Merchant, monitoring.RuleLargeAmount, "25,000.00 EUR")
		if k := m.alertOf(t, m.p.Merchant).Subject.Kind; k != monitoring.SubjectMerchant {
			t.Errorf("subject kind %q, want merchant", k)
		}
	})
	t.Run("boundary", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("under", m.at(day), a, "9999.99", iban(1)))
		m.wantQuiet(t, u, monitoring.RuleLargeAmount)
		m.load(t, incoming("at", m.at(2*day), a, "10000.00", iban(1)))
		m.wantRaised(t, u, monitoring.RuleLargeAmount)
		if refs := m.alertOf(t, u).Refs(); !slices.Equal(refs, []string{"at"}) {
			t.Errorf("refs %v, want [at]", refs)
		}
	})
}

func TestMonitoringStructuring(t *testing.T) {
	m := newMonitoringApp(t)
	t.Run("positive", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("s1", m.at(day), a, "9500.00", iban(1)), incoming("s2", m.at(2*day), a, "9800.00", iban(2)),
			incoming("s3", m.at(4*day), a, "9100.00", iban(3)))
		m.wantRaised(t, u, monitoring.RuleStructuring, "3 incoming movements", "within 5 days")
		if refs := m.alertOf(t, u).Refs(); !slices.Equal(refs, []string{"s3"}) {
			t.Errorf("refs %v, want the third movement", refs)
		}
	})
	t.Run("negative", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("s1", m.at(day), a, "9500.00", iban(1)), incoming("s2", m.at(2*day), a, "9800.00", iban(2)),
			incoming("s3", m.at(3*day), a, "7999.99", iban(3)))
		m.wantQuiet(t, u, monitoring.RuleStructuring)
	})
	t.Run("boundary", func(t *testing.T) {
		// The third lands exactly five days after the first: the window
		// is the five days before it, the first excluded.
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("s1", m.at(day), a, "9500.00", iban(1)), incoming("s2", m.at(2*day), a, "9800.00", iban(2)),
			incoming("s3", m.at(6*day), a, "9100.00", iban(3)))
		m.wantQuiet(t, u, monitoring.RuleStructuring)
	})
}

func TestMonitoringProfileVolumes(t *testing.T) {
	m := newMonitoringApp(t)
	const band = "Between 1001 and 5000 EUR"
	t.Run("incoming positive", func(t *testing.T) {
		u, a := m.person(t, band, "", "", "High")
		m.load(t, incoming("i1", m.at(day), a, "3000.00", iban(1)), incoming("i2", m.at(3*day), a, "2500.00", iban(2)))
		m.wantRaised(t, u, monitoring.RuleProfileIncoming, "incoming 5,500.00 EUR this month", band, "alert above 5,000.00 EUR")
	})
	t.Run("incoming negative: a low-risk customer's band is wider", func(t *testing.T) {
		u, a := m.person(t, band, "", "", "Low")
		m.load(t, incoming("i1", m.at(day), a, "3000.00", iban(1)), incoming("i2", m.at(3*day), a, "2500.00", iban(2)))
		m.wantQuiet(t, u, monitoring.RuleProfileIncoming)
	})
	t.Run("incoming boundary: the band's bound itself, and a new month", func(t *testing.T) {
		u, a := m.person(t, band, "", "", "High")
		m.load(t, incoming("i1", m.at(day), a, "3000.00", iban(1)), incoming("i2", m.at(3*day), a, "2000.00", iban(2)),
			// Next month: the month-to-date starts again.
			incoming("i3", m.base.AddDate(0, 1, 0).Add(time.Hour).Format(time.RFC3339), a, "4000.00", iban(3)))
		m.wantQuiet(t, u, monitoring.RuleProfileIncoming)
	})
	t.Run("outgoing positive", func(t *testing.T) {
		u, a := m.person(t, "", band, "", "Medium")
		m.load(t, incoming("fund", m.at(day), a, "9000.00", iban(1)),
			outgoing("o1", m.at(2*day), a, "4000.00", iban(2)), outgoing("o2", m.at(3*day), a, "2300.00", iban(3)))
		m.wantRaised(t, u, monitoring.RuleProfileOutgoing, "outgoing 6,300.00 EUR", "alert above 6,250.00 EUR")
	})
	t.Run("outgoing negative", func(t *testing.T) {
		u, a := m.person(t, "", band, "", "Medium")
		m.load(t, incoming("fund", m.at(day), a, "9000.00", iban(1)),
			outgoing("o1", m.at(2*day), a, "4000.00", iban(2)), outgoing("o2", m.at(3*day), a, "2250.00", iban(3)))
		m.wantQuiet(t, u, monitoring.RuleProfileOutgoing)
	})
	t.Run("frequency", func(t *testing.T) {
		u, a := m.person(t, "", "", "Less than 2 times", "High")
		m.load(t, incoming("f1", m.at(day), a, "10.00", iban(1)), incoming("f2", m.at(2*day), a, "10.00", iban(2)))
		m.wantQuiet(t, u, monitoring.RuleProfileFrequency) // two: the declared bound
		m.load(t, incoming("f3", m.at(3*day), a, "10.00", iban(3)))
		m.wantRaised(t, u, monitoring.RuleProfileFrequency, "3 incoming transfers this month", "alert above 2")
		m.load(t, incoming("f4", m.at(4*day), a, "10.00", iban(4)))
		if n := len(m.alertOf(t, u).Hits); n != 1 {
			t.Errorf("%d hits after a fourth transfer, want the one of the third (raised once)", n)
		}
	})
}

func TestMonitoringPassThrough(t *testing.T) {
	m := newMonitoringApp(t)
	t.Run("positive", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("in", m.at(day), a, "2000.00", iban(1)), outgoing("out", m.at(day+20*time.Hour), a, "1700.00", iban(2)))
		m.wantRaised(t, u, monitoring.RulePassThrough, "2,000.00 EUR came in and 1,700.00 EUR (85 %) left within 48 hours")
	})
	t.Run("negative", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("in", m.at(day), a, "2000.00", iban(1)), outgoing("out", m.at(day+20*time.Hour), a, "1500.00", iban(2)))
		m.wantQuiet(t, u, monitoring.RulePassThrough)
	})
	t.Run("boundary: after 48 hours", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("in", m.at(day), a, "2000.00", iban(1)), outgoing("out", m.at(day+48*time.Hour), a, "1700.00", iban(2)))
		m.wantQuiet(t, u, monitoring.RulePassThrough)
	})
}

func TestMonitoringHighRiskCountry(t *testing.T) {
	m := newMonitoringApp(t)
	t.Run("positive: call for action, any amount", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("ir", m.at(day), a, "50.00", "IR062960000000100324200001"))
		m.wantRaised(t, u, monitoring.RuleHighRiskCountry, "Iran (IR, FATF call for action)")
	})
	t.Run("negative", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("de", m.at(day), a, "50000.00", iban(1)))
		m.wantQuiet(t, u, monitoring.RuleHighRiskCountry)
	})
	t.Run("boundary: increased monitoring from 5,000 EUR", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("bg1", m.at(day), a, "4999.99", "BG80BNBG96611020345678"))
		m.wantQuiet(t, u, monitoring.RuleHighRiskCountry)
		m.load(t, incoming("bg2", m.at(2*day), a, "5000.00", "BG80BNBG96611020345678"))
		m.wantRaised(t, u, monitoring.RuleHighRiskCountry, "Bulgaria")
	})
	t.Run("card merchant's country", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		pay := card("card_payment", "kp", m.at(2*day), a, "20.00", "5411")
		pay["merchant"] = map[string]string{"name": "Shop", "mcc": "5411", "country": "KP"}
		m.load(t, incoming("fund", m.at(day), a, "100.00", iban(1)), pay)
		m.wantRaised(t, u, monitoring.RuleHighRiskCountry, "card merchant in Democratic People's Republic of Korea")
	})
}

func TestMonitoringDormantAccount(t *testing.T) {
	m := newMonitoringApp(t)
	long := m.base.AddDate(-1, 0, 0)
	at := func(d time.Duration) string { return long.Add(d).Format(time.RFC3339) }
	t.Run("positive", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("old", at(0), a, "10.00", iban(1)), incoming("wake", at(181*day), a, "1000.00", iban(2)))
		m.wantRaised(t, u, monitoring.RuleDormant, "after 181 days without any movement")
	})
	t.Run("negative: active within the period", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("old", at(0), a, "10.00", iban(1)), incoming("wake", at(179*day), a, "1000.00", iban(2)))
		m.wantQuiet(t, u, monitoring.RuleDormant)
	})
	t.Run("boundary: below the amount", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("old", at(0), a, "10.00", iban(1)), incoming("wake", at(200*day), a, "999.99", iban(2)))
		m.wantQuiet(t, u, monitoring.RuleDormant)
	})
}

func TestMonitoringFanInAndOut(t *testing.T) {
	m := newMonitoringApp(t)
	payers := func(a string, n int, spread time.Duration) []line {
		var out []line
		for i := range n {
			out = append(out, incoming(fmt.Sprintf("p%d", i), m.at(day+time.Duration(i)*spread), a, "100.00", iban(i)))
		}
		return out
	}
	t.Run("fan-in positive", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, payers(a, 10, time.Hour)...)
		m.wantRaised(t, u, monitoring.RuleFanIn, "10 distinct payers within 7 days")
	})
	t.Run("fan-in negative: one payer ten times", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		var lines []line
		for i := range 10 {
			lines = append(lines, incoming(fmt.Sprintf("p%d", i), m.at(day+time.Duration(i)*time.Hour), a, "100.00", iban(1)))
		}
		m.load(t, lines...)
		m.wantQuiet(t, u, monitoring.RuleFanIn)
	})
	t.Run("fan-in boundary: ten payers over more than seven days", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, payers(a, 10, 19*time.Hour+time.Minute)...) // 9 gaps: just over 7 days
		m.wantQuiet(t, u, monitoring.RuleFanIn)
	})
	t.Run("fan-out positive and boundary", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		lines := []line{incoming("fund", m.at(0), a, "2000.00", iban(99))}
		for i := range 9 {
			lines = append(lines, outgoing(fmt.Sprintf("o%d", i), m.at(day+time.Duration(i)*time.Hour), a, "10.00", iban(i)))
		}
		m.load(t, lines...)
		m.wantQuiet(t, u, monitoring.RuleFanOut) // nine payees
		m.load(t, outgoing("o9", m.at(2*day), a, "10.00", iban(9)))
		m.wantRaised(t, u, monitoring.RuleFanOut, "10 distinct payees")
	})
}

func TestMonitoringCardTypologies(t *testing.T) {
	m := newMonitoringApp(t)
	t.Run("cash positive", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("fund", m.at(0), a, "5000.00", iban(1)),
			card("card_withdrawal", "w1", m.at(day), a, "1500.00", "6011"), card("card_withdrawal", "w2", m.at(2*day), a, "600.00", "6011"))
		m.wantRaised(t, u, monitoring.RuleCardCash, "cash withdrawn 2,100.00 EUR this month in 2 withdrawals")
	})
	t.Run("cash boundary: the limit itself", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("fund", m.at(0), a, "5000.00", iban(1)),
			card("card_withdrawal", "w1", m.at(day), a, "1500.00", "6011"), card("card_withdrawal", "w2", m.at(2*day), a, "500.00", "6011"))
		m.wantQuiet(t, u, monitoring.RuleCardCash)
	})
	t.Run("cash beyond the declared band", func(t *testing.T) {
		// Declared outgoing up to 1,000 EUR, high risk: cash above 300.
		u, a := m.person(t, "", "Less than 1000 EUR", "", "High")
		m.load(t, incoming("fund", m.at(0), a, "500.00", iban(1)), card("card_withdrawal", "w1", m.at(day), a, "300.01", "6011"))
		m.wantRaised(t, u, monitoring.RuleCardCash, "declared outgoing band Less than 1000 EUR")
	})
	t.Run("high-risk merchant category", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		m.load(t, incoming("fund", m.at(0), a, "500.00", iban(1)),
			card("card_payment", "shop", m.at(day), a, "40.00", "5411"), card("card_payment", "bet", m.at(2*day), a, "0.01", "7995"))
		m.wantRaised(t, u, monitoring.RuleCardHighRiskMCC, "category 7995, gambling")
		if refs := m.alertOf(t, u).Refs(); !slices.Equal(refs, []string{"bet"}) {
			t.Errorf("refs %v, want only the gambling payment", refs)
		}
	})
	t.Run("card testing", func(t *testing.T) {
		u, a := m.person(t, "", "", "", "")
		start := m.base.Add(day)
		declined := func(i int, amount int64, at time.Time) {
			t.Helper()
			err := m.env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
				return m.env.App.Monitor.Record(ctx, monitoring.Movement{PartnerID: m.p.ID, Account: a, Kind: monitoring.KindCardPayment,
					Direction: monitoring.Out, Amount: amount, Currency: "EUR", MCC: "5999", Declined: true, At: at,
					Source: fmt.Sprintf("test-%d", i)})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for i := range 4 {
			declined(i, 100, start.Add(time.Duration(i)*time.Minute))
		}
		declined(10, 1100, start.Add(5*time.Minute)) // 11 EUR: not small
		m.wantQuiet(t, u, monitoring.RuleCardTesting)
		declined(4, 1000, start.Add(6*time.Minute)) // the fifth small one (10 EUR: the bound)
		m.wantRaised(t, u, monitoring.RuleCardTesting, "5 declined card authorizations of 10.00 EUR or less within 60 minutes")
		// Declined authorizations are no money: no other rule counts them.
		for _, h := range m.alertOf(t, u).Hits {
			if h.Rule != monitoring.RuleCardTesting {
				t.Errorf("declined authorizations raised %s", h.Rule)
			}
		}
	})
}

// TestMonitoringWindowRace: two credits recorded at once, in two
// transactions, and evaluated by two evaluators at once, cross a monthly
// limit together: the subject gets one alert, and its sentence counts
// both.
func TestMonitoringWindowRace(t *testing.T) {
	m := newMonitoringApp(t)
	for round := range 5 {
		u, a := m.person(t, "Less than 1000 EUR", "", "", "High")
		at := m.base.Add(day + time.Duration(round)*time.Hour)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for i := range 2 {
			wg.Go(func() {
				errs <- m.env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
					return m.env.App.Monitor.Record(ctx, monitoring.Movement{PartnerID: m.p.ID, Account: a, Kind: monitoring.KindIncoming,
						Direction: monitoring.In, Amount: 60000, Currency: "EUR", At: at, Ref: fmt.Sprintf("race-%d-%d", round, i),
						CounterpartyKey: monitoring.CounterpartyKey(iban(i))})
				})
			})
		}
		wg.Wait()
		for range 2 {
			wg.Go(func() {
				_, err := m.env.App.Monitor.Evaluate(context.Background())
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		m.wantRaised(t, u, monitoring.RuleProfileIncoming, "incoming 1,200.00 EUR this month")
		if n := len(m.alertOf(t, u).Hits); n != 1 {
			t.Errorf("round %d: %d hits, want one", round, n)
		}
	}
}

// TestMonitoringRecordsTheAPIsMovements: a credit, an internal transfer
// and an outgoing payment made through the services are recorded with
// their subject, both sides of the internal transfer under their own
// subject, and evaluated by the job the recording queues.
func TestMonitoringRecordsTheAPIsMovements(t *testing.T) {
	m := newMonitoringApp(t)
	ctxW, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.env.App.RunWorkers(ctxW); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	u1, a1 := m.person(t, "", "", "", "")
	u2, a2 := m.person(t, "", "", "", "")
	ctx := m.partner()
	var dest string
	if err := m.env.App.DB.Get(&dest, `SELECT iban FROM balances WHERE account = $1`, a1); err != nil {
		t.Fatal(err)
	}
	if _, err := m.env.App.Incoming.Credit(ctx, emi.IncomingCredit{Scheme: "sepa", Amount: 1500000, Currency: "EUR",
		Destination: emi.TransferParty{IBAN: dest}, Reference: "salary", Payer: emi.IncomingPayer{Name: "Employer", IBAN: withChecksum("LB", "099900000001001901229114")}}); err != nil {
		t.Fatalf("credit: %v %v", err, emi.AsError(err).Fields)
	}
	evaluated := func(want int) {
		t.Helper()
		testwait.For(t, fmt.Sprintf("%d movements evaluated by the job", want), func() (int, bool) {
			var n int
			if err := m.env.App.DB.Get(&n, `SELECT count(*) FROM monitoring_movements WHERE evaluated_at IS NOT NULL`); err != nil {
				t.Fatal(err)
			}
			return n, n == want
		})
	}
	evaluated(1)
	// After the first job ended: the transfer's own enqueue queues the next
	// (one that lands while a job runs waits for emi serve's tick).
	tr, err := m.env.App.Transfers.Create(ctx, emi.TransferCreate{Amount: 1200000, Currency: "EUR",
		Source: emi.TransferParty{Account: a1}, Destination: emi.TransferParty{Account: a2}, Reference: "rent"})
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	evaluated(3) // the credit and both sides of the transfer
	var sides []string
	if err := m.env.App.DB.Select(&sides, `SELECT direction || ' ' || subject_token FROM monitoring_movements
		WHERE source = $1 ORDER BY direction`, tr.Token); err != nil {
		t.Fatal(err)
	}
	if want := []string{"in " + u2, "out " + u1}; !slices.Equal(sides, want) {
		t.Errorf("the transfer's sides %v, want %v (each under its own subject, once)", sides, want)
	}
	m.wantRaised(t, u1, monitoring.RuleLargeAmount, "incoming payment of 15,000.00 EUR")
	m.wantRaised(t, u1, monitoring.RuleHighRiskCountry, "Lebanon")
	m.wantRaised(t, u2, monitoring.RuleLargeAmount, "internal transfer of 12,000.00 EUR")
	if refs := m.alertOf(t, u1).Refs(); len(refs) != 0 {
		t.Errorf("refs %v: movements made through the API have none", refs)
	}
}

// TestHistoryImportRefusesAMalformedFileWhole and reports the lines the
// ledger refuses while booking the others.
func TestHistoryImportRefusesAMalformedFileWhole(t *testing.T) {
	m := newMonitoringApp(t)
	_, a := m.person(t, "", "", "", "")
	other := newMonitoringApp(t)
	_, foreign := other.person(t, "", "", "", "")
	bad := func(l line) string {
		j, _ := json.Marshal(l)
		return string(j)
	}
	for name, file := range map[string]string{
		"not json":          "{\n",
		"unknown field":     bad(line{"ref": "x", "at": m.at(day), "kind": "incoming", "account": a, "amount": "1.00", "currency": "EUR", "counterparty": map[string]string{"iban": iban(1)}, "extra": 1}),
		"future":            bad(incoming("x", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), a, "1.00", iban(1))),
		"amount as number":  bad(line{"ref": "x", "at": m.at(day), "kind": "incoming", "account": a, "amount": 1, "currency": "EUR", "counterparty": map[string]string{"iban": iban(1)}}),
		"duplicate ref":     bad(incoming("x", m.at(day), a, "1.00", iban(1))) + "\n" + bad(incoming("x", m.at(day), a, "1.00", iban(1))),
		"another's account": bad(incoming("x", m.at(day), foreign, "1.00", iban(1))),
		"unknown kind":      bad(line{"ref": "x", "at": m.at(day), "kind": "gift", "account": a, "amount": "1.00", "currency": "EUR"}),
		"empty":             "",
	} {
		t.Run(name, func(t *testing.T) {
			if name != "empty" {
				// A good line first: a malformed file books none of it.
				file = bad(incoming("good", m.at(day), a, "5.00", iban(1))) + "\n" + file
			}
			res, err := m.env.App.HistoryImport.Import(context.Background(), m.p.ID, strings.NewReader(file))
			if err == nil || res.Booked != 0 {
				t.Fatalf("booked %d, error %v: want nothing booked and an error", res.Booked, err)
			}
		})
	}
	var n int
	if err := m.env.App.DB.Get(&n, `SELECT count(*) FROM monitoring_movements WHERE partner_id = $1`, m.p.ID); err != nil || n != 0 {
		t.Fatalf("%d movements recorded after refused files (%v)", n, err)
	}
	res, err := m.env.App.HistoryImport.Import(context.Background(), m.p.ID, strings.NewReader(
		bad(outgoing("too-much", m.at(day), a, "10.00", iban(2)))+"\n"+bad(incoming("in", m.at(2*day), a, "5.00", iban(1)))))
	if err != nil || res.Booked != 1 || len(res.Refused) != 1 || res.Refused[0].Ref != "too-much" {
		t.Fatalf("result %+v, %v: want the credit booked and the payment refused", res, err)
	}
}

// withChecksum returns the IBAN of country and bban with its check digits
// (ISO 13616: mod 97 of the rearranged digits).
func withChecksum(country, bban string) string {
	rearranged := bban + country + "00"
	rem := 0
	for _, r := range rearranged {
		v := int(r - '0')
		if r >= 'A' && r <= 'Z' {
			v = int(r-'A') + 10
			rem = (rem*100 + v) % 97
			continue
		}
		rem = (rem*10 + v) % 97
	}
	return fmt.Sprintf("%s%02d%s", country, 98-rem, bban)
}

// TestEveryTypologyHasARule: the migration ships a current rule for each
// typology the code evaluates, and no rule the code does not know.
func TestEveryTypologyHasARule(t *testing.T) {
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	var codes []string
	if err := env.App.DB.Select(&codes, `SELECT code FROM monitoring_rules WHERE current AND program = '' ORDER BY code`); err != nil {
		t.Fatal(err)
	}
	want := monitoring.Codes()
	slices.Sort(want)
	if !slices.Equal(codes, want) {
		t.Errorf("rules %v, typologies %v", codes, want)
	}
}

// officer is a context of a new compliance officer.
func officer() context.Context {
	return as(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleCompliance}})
}

// largeAmountParams is large_amount's parameters with another threshold.
func largeAmountParams(threshold float64) map[string]float64 {
	return map[string]float64{"threshold_eur": threshold}
}

// TestMonitoringRuleChangeTakesTwoOfficers: a rule change proposed by one
// compliance officer shows its backtest and is applied only when another
// approves; the proposer (in any session) cannot, customer service cannot
// propose, and the next movements are evaluated by the new version.
func TestMonitoringRuleChangeTakesTwoOfficers(t *testing.T) {
	m := newMonitoringApp(t)
	u, a := m.person(t, "", "", "", "")
	recent := func(d time.Duration) string { return time.Now().UTC().Add(-5*day + d).Format(time.RFC3339) }
	m.load(t, incoming("six", recent(0), a, "6000.00", iban(1)))
	m.wantQuiet(t, u, monitoring.RuleLargeAmount)

	first, second := officer(), officer()
	cs := as(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleCustomerService}})
	change := monitoring.RuleChange{Code: monitoring.RuleLargeAmount, Score: 30, Enabled: true, Params: largeAmountParams(5000),
		Reason: "the regulator's threshold for this market"}
	if _, err := m.env.App.Monitor.ProposeRuleChange(cs, change); !errors.Is(err, emi.ErrForbidden) {
		t.Fatalf("customer service proposes: %v, want 403", err)
	}
	p, err := m.env.App.Monitor.ProposeRuleChange(first, change)
	if err != nil {
		t.Fatalf("propose: %v", err)
	}
	if p.BaseVersion != 1 || p.Backtest.Days != monitoring.BacktestDays || p.Backtest.CurrentSubjects != 0 ||
		p.Backtest.ProposedSubjects < 1 || p.Backtest.NewSubjects < 1 || p.Backtest.ProposedHits <= p.Backtest.CurrentHits {
		t.Fatalf("backtest %+v: the lower threshold alerts the 6,000 EUR credit", p.Backtest)
	}
	if _, err := m.env.App.Monitor.ProposeRuleChange(second, change); !errors.Is(err, emi.ErrRequestPending) {
		t.Fatalf("a second proposal while one waits: %v", err)
	}
	// The proposer, in another session, cannot approve their own change.
	if _, err := m.env.App.Monitor.ApproveRuleChange(as(emi.StaffUser{ID: staffOf(first), Roles: []emi.Role{emi.RoleCompliance}}),
		monitoring.RuleLargeAmount, "", p.Request.ID); !errors.Is(err, emi.ErrFourEyes) {
		t.Fatalf("the proposer approves: %v, want four-eyes", err)
	}
	pending, err := m.env.App.Monitor.PendingRuleChanges(second)
	if err != nil || len(pending) != 1 || !pending[0].Can.Approve {
		t.Fatalf("pending %+v %v: the second officer may approve", pending, err)
	}
	if mine, _ := m.env.App.Monitor.PendingRuleChanges(first); len(mine) != 1 || mine[0].Can.Approve || !mine[0].Can.Withdraw {
		t.Fatalf("the proposer's view %+v: withdraw, not approve", mine)
	}
	r, err := m.env.App.Monitor.ApproveRuleChange(second, monitoring.RuleLargeAmount, "", p.Request.ID)
	if err != nil || r.Version != 2 || r.Params["threshold_eur"] != 5000 {
		t.Fatalf("approve: %+v %v", r, err)
	}
	m.load(t, incoming("again", recent(time.Hour), a, "6000.00", iban(2)))
	m.wantRaised(t, u, monitoring.RuleLargeAmount, "5,000.00 EUR or more")
	if h := m.alertOf(t, u).Hits[0]; h.Version != 2 || h.Ref != "again" {
		t.Errorf("hit %+v: by version 2, on the new credit", h)
	}
	var versions int
	if err := m.env.App.DB.Get(&versions, `SELECT count(*) FROM monitoring_rules WHERE code = 'large_amount'`); err != nil || versions != 2 {
		t.Errorf("%d versions kept (%v), want both", versions, err)
	}
}

// TestMonitoringRuleChangeChecksAndVoids: a proposal names the rule's own
// parameters within their ranges, and a rule changed since it was proposed
// voids it.
func TestMonitoringRuleChangeChecksAndVoids(t *testing.T) {
	m := newMonitoringApp(t)
	first, second := officer(), officer()
	for name, c := range map[string]monitoring.RuleChange{
		"unknown rule":      {Code: "nothing", Enabled: true, Params: largeAmountParams(1)},
		"unknown parameter": {Code: monitoring.RuleLargeAmount, Enabled: true, Params: map[string]float64{"threshold_eur": 1, "x": 2}},
		"missing parameter": {Code: monitoring.RuleLargeAmount, Enabled: true, Params: map[string]float64{}},
		"negative":          {Code: monitoring.RuleLargeAmount, Enabled: true, Params: largeAmountParams(-1)},
		"ratio above one":   {Code: monitoring.RulePassThrough, Enabled: true, Params: map[string]float64{"hours": 48, "ratio": 1.5, "min_in_eur": 1000}},
		"score":             {Code: monitoring.RuleLargeAmount, Score: 101, Enabled: true, Params: largeAmountParams(1)},
		"shadow while off":  {Code: monitoring.RuleLargeAmount, Shadow: true, Params: largeAmountParams(1)},
		"unknown program":   {Code: monitoring.RuleLargeAmount, Program: "nope", Enabled: true, Params: largeAmountParams(1)},
		"no change":         {Code: monitoring.RuleLargeAmount, Score: 30, Enabled: true, Params: largeAmountParams(10000)},
	} {
		c.Reason = "tuning"
		if _, err := m.env.App.Monitor.ProposeRuleChange(first, c); !errors.Is(err, emi.ErrReviewValidation) {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
	p, err := m.env.App.Monitor.ProposeRuleChange(first, monitoring.RuleChange{Code: monitoring.RuleLargeAmount, Program: "account_eur",
		Score: 40, Enabled: true, Shadow: true, Params: largeAmountParams(8000), Reason: "try a lower threshold on EUR accounts"})
	if err != nil || p.BaseVersion != 0 {
		t.Fatalf("a program's first override: %+v %v", p, err)
	}
	// Another change of the rule lands meanwhile (as a migration would).
	if _, err := m.env.App.DB.Exec(`INSERT INTO monitoring_rules (code, program, version, description, score, params)
		VALUES ('large_amount', 'account_eur', 1, 'x', 10, '{"threshold_eur": 9000}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := m.env.App.Monitor.ApproveRuleChange(second, monitoring.RuleLargeAmount, "account_eur", p.Request.ID); !errors.Is(err, emi.ErrRequestVoid) {
		t.Fatalf("approving a proposal about a rule changed since: %v, want void", err)
	}
}

// TestMonitoringShadowRuleCountsAndRaisesNothing: a rule in shadow mode
// is evaluated and counted, and raises no alert.
func TestMonitoringShadowRuleCountsAndRaisesNothing(t *testing.T) {
	m := newMonitoringApp(t)
	first, second := officer(), officer()
	p, err := m.env.App.Monitor.ProposeRuleChange(first, monitoring.RuleChange{Code: monitoring.RuleLargeAmount, Score: 30,
		Enabled: true, Shadow: true, Params: largeAmountParams(10000), Reason: "watch it before it alerts"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.env.App.Monitor.ApproveRuleChange(second, monitoring.RuleLargeAmount, "", p.Request.ID); err != nil {
		t.Fatal(err)
	}
	u, a := m.person(t, "", "", "", "")
	m.load(t, incoming("big", m.at(day), a, "20000.00", iban(1)))
	m.wantQuiet(t, u, monitoring.RuleLargeAmount)
	counts, err := m.env.App.Monitor.ShadowCounts(first, 365)
	if err != nil || counts[monitoring.RuleLargeAmount] != 1 {
		t.Fatalf("shadow counts %v %v, want one large_amount", counts, err)
	}
}

// TestMonitoringRuleChangeRejectAndWithdraw: another officer's rejection
// needs a reason and closes the proposal; the proposer withdraws their
// own; neither changes the rule.
func TestMonitoringRuleChangeRejectAndWithdraw(t *testing.T) {
	m := newMonitoringApp(t)
	first, second := officer(), officer()
	propose := func() monitoring.PendingRuleChange {
		t.Helper()
		p, err := m.env.App.Monitor.ProposeRuleChange(first, monitoring.RuleChange{Code: monitoring.RuleLargeAmount, Score: 30,
			Enabled: true, Params: largeAmountParams(7000), Reason: "try it"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := propose()
	if err := m.env.App.Monitor.RejectRuleChange(second, monitoring.RuleLargeAmount, "", p.Request.ID, "not with this backtest"); err != nil {
		t.Fatalf("reject: %v", err)
	}
	if err := m.env.App.Monitor.RejectRuleChange(second, monitoring.RuleLargeAmount, "", p.Request.ID, "again"); err == nil {
		t.Fatal("a closed proposal rejected twice")
	}
	p = propose()
	if err := m.env.App.Monitor.RejectRuleChange(first, monitoring.RuleLargeAmount, "", p.Request.ID, ""); err != nil {
		t.Fatalf("withdraw: %v", err)
	}
	if pending, err := m.env.App.Monitor.PendingRuleChanges(second); err != nil || len(pending) != 0 {
		t.Fatalf("pending after reject and withdraw: %v %v", pending, err)
	}
	var versions int
	if err := m.env.App.DB.Get(&versions, `SELECT count(*) FROM monitoring_rules WHERE code = 'large_amount'`); err != nil || versions != 1 {
		t.Fatalf("%d versions (%v): the rule must be unchanged", versions, err)
	}
}
