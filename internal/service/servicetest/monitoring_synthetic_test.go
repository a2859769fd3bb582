package servicetest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"emi/internal/service/monitoring"
)

// TestMonitoringSyntheticSet measures the shipped rules on a seeded
// synthetic population booked through the history import (the ledger,
// then the rules as of each movement's time), as a private set would:
//
//   - clean customers living five kinds of ordinary lives over three
//     months, each with a declared profile that fits it and a risk level
//     drawn at random: a salaried employee, a student, a freelancer with
//     a handful of clients, a retiree and a traveller paying by card
//     abroad; a few declined card payments among them;
//   - for each typology, customers living one of those lives with the
//     pattern planted in it, its size drawn at random beyond the rule's
//     parameters (structuring from 3 to 5 amounts between 80 % and 99.9 %
//     of the threshold over 1 to 4 days, a pass-through of 82 to 100 %
//     within 2 to 40 hours, ...).
//
// It reports, per typology, the share of planted customers whose alert
// names the typology (detection), and the share of clean customers with
// any alert (the false-positive rate), and fails below 0.95 detection for
// a typology or above 5 % false positives. The figures are in the
// back-office guide (Transaction monitoring: measured on a synthetic
// population).
//
// The clean customers' alerts are real findings of the shipped rules, not
// noise of the generator: with seed 320601, 4 of the 24 freelancers pay a
// quarter's tax or move savings within 48 hours of a client's payment of
// 1,000 EUR or more, and pass_through alerts on them (3.3 % of the clean
// population). Paying from what the account held before does not tell
// them from a mule: a mule's account recruited from an ordinary life holds
// savings too, and a rule that subtracted the balance (tried) missed every
// pass-through planted in a life with savings. Compliance tunes it with
// the backtest (min_in_eur, hours, per program).
//
//	go test ./internal/service/servicetest -run TestMonitoringSyntheticSet -v
func TestMonitoringSyntheticSet(t *testing.T) {
	if testing.Short() {
		t.Skip("books about 20,000 movements")
	}
	m := newMonitoringApp(t)
	g := &synthetic{m: m, rng: rand.New(rand.NewPCG(320601, 32)), start: m.base.AddDate(0, -1, 0)}
	const cleanPerLife, plantedPerTypology = 24, 8
	type subject struct {
		user, life, typology string
	}
	var subjects []subject
	for _, life := range syntheticLives {
		for range cleanPerLife {
			c := g.customer(t, life)
			g.live(c)
			subjects = append(subjects, subject{c.user, life.name, ""})
		}
	}
	for _, p := range syntheticPatterns {
		for range plantedPerTypology {
			life := syntheticLives[g.rng.IntN(len(syntheticLives))]
			if p.life != "" {
				life = lifeNamed(p.life)
			}
			c := g.customer(t, life)
			if !p.quietBefore {
				g.live(c)
			}
			p.plant(g, c)
			subjects = append(subjects, subject{c.user, life.name, p.typology})
		}
	}
	for _, d := range g.declined {
		err := m.env.App.DB.InTx(context.Background(), func(ctx context.Context) error { return m.env.App.Monitor.Record(ctx, d) })
		if err != nil {
			t.Fatal(err)
		}
	}
	m.load(t, g.lines...)
	if _, err := m.env.App.Monitor.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	alerts, err := m.env.App.Monitor.SystemAlerts(context.Background(), monitoring.AlertFilter{PartnerID: m.p.ID, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	raised := map[string][]string{}
	for _, a := range alerts {
		for _, h := range a.Hits {
			if !slices.Contains(raised[a.Subject.Token], h.Rule) {
				raised[a.Subject.Token] = append(raised[a.Subject.Token], h.Rule)
			}
		}
	}
	type tally struct{ n, found int }
	detect := map[string]*tally{}
	clean := map[string]*tally{}
	also := map[string]map[string]int{}
	for _, s := range subjects {
		rules := raised[s.user]
		if s.typology == "" {
			c := clean[s.life]
			if c == nil {
				c = &tally{}
				clean[s.life] = c
			}
			c.n++
			if len(rules) > 0 {
				c.found++
				t.Logf("false positive: a %s raised %v", s.life, rules)
			}
			continue
		}
		d := detect[s.typology]
		if d == nil {
			d, also[s.typology] = &tally{}, map[string]int{}
			detect[s.typology] = d
		}
		d.n++
		hit := false
		for _, r := range rules {
			if r == s.typology || (s.typology == monitoring.RuleHighRiskCountry && r == monitoring.RuleHighRiskCountryHold) {
				hit = true
			} else {
				also[s.typology][r]++
			}
		}
		if hit {
			d.found++
		} else {
			t.Logf("missed: %s planted in a %s's life raised %v", s.typology, s.life, rules)
		}
	}
	t.Logf("%-28s %8s %9s  %s", "typology", "planted", "detection", "other rules raised on them")
	for _, p := range syntheticPatterns {
		d := detect[p.typology]
		var others []string
		for r, n := range also[p.typology] {
			others = append(others, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(others)
		rate := float64(d.found) / float64(d.n)
		t.Logf("%-28s %8d %9.2f  %s", p.typology, d.n, rate, strings.Join(others, ", "))
		if rate < 0.95 {
			t.Errorf("%s: detection %.2f, want 0.95 or more", p.typology, rate)
		}
	}
	var n, fp int
	for _, life := range syntheticLives {
		c := clean[life.name]
		n, fp = n+c.n, fp+c.found
		t.Logf("clean %-22s %8d customers, %d alerted", life.name, c.n, c.found)
	}
	rate := float64(fp) / float64(n)
	t.Logf("false-positive rate: %d of %d clean customers alerted (%.1f %%); %d movements booked", fp, n, 100*rate, len(g.lines)+len(g.declined))
	if rate > 0.05 {
		t.Errorf("false-positive rate %.3f, want 5 %% or less", rate)
	}
}

// synthetic builds the population's history.
type synthetic struct {
	m        *monitoringApp
	rng      *rand.Rand
	start    time.Time // the first of three whole past months
	lines    []line
	declined []monitoring.Movement
	n        int // customers, for unique references and counterparties
}

// customer is one person of the population.
type customer struct {
	n             int
	user, account string
	life          syntheticLife
}

// syntheticLife is an ordinary life: its declared profile and what it
// books in a month.
type syntheticLife struct {
	name, incoming, outgoing, frequency string
	month                               func(g *synthetic, c customer, month int)
}

// bandUpperEUR are the declared bands' upper bounds.
var bandUpperEUR = map[string]int64{"Less than 1000 EUR": 1000, "Between 1001 and 5000 EUR": 5000, "Between 5001 and 10000 EUR": 10000}

func lifeNamed(name string) syntheticLife {
	for _, l := range syntheticLives {
		if l.name == name {
			return l
		}
	}
	panic("no life " + name)
}

func (g *synthetic) customer(t *testing.T, life syntheticLife) customer {
	t.Helper()
	g.n++
	risk := []string{"Low", "Medium", "High"}[g.rng.IntN(3)]
	u, a := g.m.person(t, life.incoming, life.outgoing, life.frequency, risk)
	return customer{n: g.n, user: u, account: a, life: life}
}

// live books the customer's ordinary life over the three months, after an
// opening deposit the week before (savings from another bank: nine tenths
// of the declared incoming band).
func (g *synthetic) live(c customer) {
	g.in(c, "opening", g.start.AddDate(0, 0, -7), 90*bandUpperEUR[c.life.incoming], g.own(c, 13))
	for month := range 3 {
		c.life.month(g, c, month)
	}
}

// at is an instant of the month (0 to 2): day 1 to 28, hour 0 to 23.
func (g *synthetic) at(month, day, hour int) time.Time {
	return g.start.AddDate(0, month, day-1).Add(time.Duration(hour)*time.Hour + time.Duration(g.rng.IntN(60))*time.Minute)
}

// between draws an amount in minor units.
func (g *synthetic) between(lo, hi float64) int64 {
	return int64(lo*100) + g.rng.Int64N(int64((hi-lo)*100)+1)
}

func amount(minor int64) string { return fmt.Sprintf("%d.%02d", minor/100, minor%100) }

func (g *synthetic) ref(c customer, what string) string {
	return fmt.Sprintf("s%d-%s-%d", c.n, what, len(g.lines))
}

// counterparty IBANs: a customer's own (employer, landlord, clients) and
// the shared ones (utilities).
func (g *synthetic) own(c customer, k int) string { return iban(100_000 + c.n*50 + k) }

func (g *synthetic) in(c customer, what string, at time.Time, minor int64, from string) {
	g.lines = append(g.lines, incoming(g.ref(c, what), at.Format(time.RFC3339), c.account, amount(minor), from))
}

func (g *synthetic) out(c customer, what string, at time.Time, minor int64, to string) {
	g.lines = append(g.lines, outgoing(g.ref(c, what), at.Format(time.RFC3339), c.account, amount(minor), to))
}

func (g *synthetic) pay(c customer, kind string, at time.Time, minor int64, mcc, merchant, country string) {
	g.lines = append(g.lines, line{"ref": g.ref(c, "card"), "at": at.Format(time.RFC3339), "kind": kind, "account": c.account,
		"amount": amount(minor), "currency": "EUR", "merchant": map[string]string{"name": merchant, "mcc": mcc, "country": country}})
}

// everyday are card payments of ordinary lives: category and merchant.
var everyday = []struct{ mcc, name string }{
	{"5411", "Supermarket"}, {"5411", "Organic Grocer"}, {"5812", "Trattoria"}, {"5814", "Burger Bar"}, {"5541", "Fuel Station"},
	{"5912", "Pharmacy"}, {"5311", "Department Store"}, {"4121", "Taxi"}, {"5999", "Corner Shop"}, {"5942", "Bookshop"},
	{"4111", "City Transit"}, {"5651", "Clothes Shop"}, {"7832", "Cinema"}, {"5732", "Electronics"},
}

// cards books n everyday card payments between lo and hi EUR in the month,
// in country (home: DE).
func (g *synthetic) cards(c customer, month, n int, lo, hi float64, countries ...string) {
	if len(countries) == 0 {
		countries = []string{"DE"}
	}
	for range n {
		e := everyday[g.rng.IntN(len(everyday))]
		country := countries[g.rng.IntN(len(countries))]
		g.pay(c, "card_payment", g.at(month, 1+g.rng.IntN(28), 8+g.rng.IntN(14)), g.between(lo, hi), e.mcc, e.name+" "+country, country)
	}
}

// maybeDeclined sometimes adds a declined card payment or two (a card
// refused for funds or a typo in the PIN): ordinary lives have them.
func (g *synthetic) maybeDeclined(c customer, month int) {
	for range g.rng.IntN(3) {
		if g.rng.IntN(3) > 0 {
			continue
		}
		g.declined = append(g.declined, monitoring.Movement{PartnerID: g.m.p.ID, Account: c.account, Kind: monitoring.KindCardPayment,
			Direction: monitoring.Out, Amount: g.between(2, 60), Currency: "EUR", MCC: "5411", Declined: true,
			At: g.at(month, 1+g.rng.IntN(28), 10), Source: fmt.Sprintf("decl-%d-%d", c.n, len(g.declined))})
	}
}

// syntheticLives are the clean customers' lives. Each fits its declared
// profile whatever the risk level drawn (the risk factor of a high-risk
// customer is 1: the band itself).
var syntheticLives = []syntheticLife{
	{name: "salaried employee", incoming: "Between 1001 and 5000 EUR", outgoing: "Between 1001 and 5000 EUR", frequency: "Less than 2 times",
		month: func(g *synthetic, c customer, month int) {
			salary := g.between(1900, 4100)
			g.in(c, "salary", g.at(month, 25+g.rng.IntN(4), 9), salary, g.own(c, 0))
			if g.rng.IntN(3) == 0 { // a friend pays back a dinner
				g.in(c, "friend", g.at(month, 5+g.rng.IntN(15), 20), g.between(15, 180), g.own(c, 1+g.rng.IntN(3)))
			}
			g.out(c, "rent", g.at(month, 1+g.rng.IntN(3), 8), salary*(30+g.rng.Int64N(10))/100, g.own(c, 10))
			g.out(c, "utilities", g.at(month, 6, 10), g.between(60, 160), iban(4000))
			g.out(c, "phone", g.at(month, 8, 10), g.between(15, 45), iban(4001))
			g.cards(c, month, 12+g.rng.IntN(14), 3, 80)
			for range g.rng.IntN(3) {
				g.pay(c, "card_withdrawal", g.at(month, 1+g.rng.IntN(28), 17), 5000*(1+g.rng.Int64N(6)), "6011", "ATM", "DE")
			}
			g.maybeDeclined(c, month)
		}},
	{name: "student", incoming: "Less than 1000 EUR", outgoing: "Less than 1000 EUR", frequency: "Between 3-5 times",
		month: func(g *synthetic, c customer, month int) {
			g.in(c, "parents", g.at(month, 1+g.rng.IntN(3), 10), g.between(300, 550), g.own(c, 0))
			g.in(c, "job", g.at(month, 15+g.rng.IntN(3), 10), g.between(150, 350), g.own(c, 1))
			if g.rng.IntN(2) == 0 {
				g.in(c, "friend", g.at(month, 5+g.rng.IntN(20), 21), g.between(5, 60), g.own(c, 2+g.rng.IntN(4)))
			}
			g.out(c, "room", g.at(month, 3, 9), g.between(250, 380), g.own(c, 10))
			g.cards(c, month, 20+g.rng.IntN(15), 2, 12)
			if g.rng.IntN(2) == 0 {
				g.pay(c, "card_withdrawal", g.at(month, 1+g.rng.IntN(28), 17), 2000*(1+g.rng.Int64N(3)), "6011", "ATM", "DE")
			}
			g.maybeDeclined(c, month)
		}},
	{name: "freelancer", incoming: "Between 5001 and 10000 EUR", outgoing: "Between 5001 and 10000 EUR", frequency: "Between 3-5 times",
		month: func(g *synthetic, c customer, month int) {
			var earned int64
			for k := range 2 + g.rng.IntN(3) {
				fee := g.between(900, 2400)
				earned += fee
				g.in(c, "invoice", g.at(month, 3+k*6+g.rng.IntN(5), 11), fee, g.own(c, g.rng.IntN(6)))
			}
			g.out(c, "rent", g.at(month, 1, 8), g.between(900, 1600), g.own(c, 10))
			g.out(c, "tax", g.at(month, 10, 9), earned*(15+g.rng.Int64N(10))/100, iban(4100))
			g.out(c, "savings", g.at(month, 28, 18), earned*(10+g.rng.Int64N(15))/100, g.own(c, 11))
			g.out(c, "coworking", g.at(month, 2, 9), g.between(150, 300), iban(4101))
			g.cards(c, month, 10+g.rng.IntN(16), 4, 100)
			g.maybeDeclined(c, month)
		}},
	{name: "retiree", incoming: "Between 1001 and 5000 EUR", outgoing: "Less than 1000 EUR", frequency: "Less than 2 times",
		month: func(g *synthetic, c customer, month int) {
			pension := g.between(1050, 1900)
			g.in(c, "pension", g.at(month, 1, 7), pension, iban(4200))
			g.out(c, "savings", g.at(month, 2+g.rng.IntN(5), 10), g.between(100, 250), g.own(c, 11))
			g.out(c, "utilities", g.at(month, 6, 10), g.between(50, 120), iban(4000))
			g.cards(c, month, 6+g.rng.IntN(8), 5, 30)
			g.pay(c, "card_withdrawal", g.at(month, 1+g.rng.IntN(28), 11), 5000*(1+g.rng.Int64N(2)), "6011", "ATM", "DE")
		}},
	{name: "traveller", incoming: "Between 1001 and 5000 EUR", outgoing: "Between 1001 and 5000 EUR", frequency: "Less than 2 times",
		month: func(g *synthetic, c customer, month int) {
			salary := g.between(2500, 4000)
			g.in(c, "salary", g.at(month, 26, 9), salary, g.own(c, 0))
			g.out(c, "rent", g.at(month, 1, 8), salary*30/100, g.own(c, 10))
			g.cards(c, month, 6+g.rng.IntN(7), 5, 60)
			abroad := []string{"FR", "ES", "IT", "PT", "NL", "AT", "GB", "US", "JP", "TH", "CA", "SE"}
			country := abroad[g.rng.IntN(len(abroad))]
			g.cards(c, month, 6+g.rng.IntN(7), 8, 120, country)
			g.pay(c, "card_withdrawal", g.at(month, 1+g.rng.IntN(28), 12), 10000, "6011", "ATM "+country, country)
			g.maybeDeclined(c, month)
		}},
}

// syntheticPattern is a typology planted in a customer's life.
type syntheticPattern struct {
	typology string
	// life, when set, is the life the pattern needs; quietBefore: the
	// customer has no life before the pattern (a dormant account).
	life        string
	quietBefore bool
	plant       func(g *synthetic, c customer)
}

// syntheticPatterns plant each typology, drawn beyond the shipped
// parameters (migrations/00096_monitoring.sql) by a random margin.
var syntheticPatterns = []syntheticPattern{
	{typology: monitoring.RuleLargeAmount, plant: func(g *synthetic, c customer) {
		a := g.between(10_000, 60_000)
		at := g.at(1, 1+g.rng.IntN(27), 11)
		g.in(c, "large", at, a, iban(900_000+c.n))
		if g.rng.IntN(2) == 0 {
			g.out(c, "large out", at.Add(time.Duration(3+g.rng.IntN(20))*24*time.Hour), a*9/10, iban(910_000+c.n))
		}
	}},
	{typology: monitoring.RuleStructuring, plant: func(g *synthetic, c customer) {
		at := g.at(1, 1+g.rng.IntN(20), 10)
		span := time.Duration(1+g.rng.IntN(4)) * 24 * time.Hour
		n := 3 + g.rng.IntN(3)
		for i := range n {
			g.in(c, "cash deposit", at.Add(span*time.Duration(i)/time.Duration(n)), g.between(8_000, 9_990), iban(920_000+c.n*10+g.rng.IntN(3)))
		}
	}},
	{typology: monitoring.RuleProfileIncoming, life: "salaried employee", plant: func(g *synthetic, c customer) {
		// Two to four payments of 2,000 to 4,000 EUR beside the salary.
		for k := range 2 + g.rng.IntN(3) {
			g.in(c, "unexplained", g.at(2, 2+k*5+g.rng.IntN(4), 14), g.between(2_000, 4_000), iban(930_000+c.n))
		}
	}},
	{typology: monitoring.RuleProfileOutgoing, life: "retiree", plant: func(g *synthetic, c customer) {
		// Savings moved in last year, spent far beyond the declared band.
		g.in(c, "savings", g.start.AddDate(0, -1, 2), g.between(6_000, 9_000), g.own(c, 11))
		for k := range 2 + g.rng.IntN(3) {
			g.out(c, "payment", g.at(2, 3+k*6+g.rng.IntN(4), 15), g.between(700, 1_500), iban(940_000+c.n*10+k))
		}
	}},
	{typology: monitoring.RuleProfileFrequency, life: "retiree", plant: func(g *synthetic, c customer) {
		for k := range 5 + g.rng.IntN(5) {
			g.in(c, "small credit", g.at(2, 2+k*3, 12), g.between(20, 90), iban(950_000+c.n*10+g.rng.IntN(4)))
		}
	}},
	{typology: monitoring.RulePassThrough, plant: func(g *synthetic, c customer) {
		in := g.between(3_000, 9_000)
		at := g.at(1, 1+g.rng.IntN(26), 10)
		g.in(c, "through", at, in, iban(960_000+c.n))
		share := int64(82 + g.rng.IntN(19))
		g.out(c, "onward", at.Add(time.Duration(2+g.rng.IntN(39))*time.Hour), in*share/100, iban(961_000+c.n))
	}},
	{typology: monitoring.RuleHighRiskCountry, plant: func(g *synthetic, c customer) {
		at := g.at(1, 1+g.rng.IntN(27), 13)
		switch g.rng.IntN(4) {
		case 0:
			g.in(c, "from iran", at, g.between(50, 3_000), "IR062960000000100324200001")
		case 1:
			g.in(c, "from lebanon", at, g.between(50, 3_000), withChecksum("LB", fmt.Sprintf("0999000000010019012%05d", c.n)))
		case 2:
			g.out(c, "to lebanon", at, g.between(50, 1_000), withChecksum("LB", fmt.Sprintf("0999000000010019012%05d", c.n)))
		default:
			country := []string{"KP", "IR", "MM", "SY", "YE"}[g.rng.IntN(5)]
			g.pay(c, "card_payment", at, g.between(5, 400), "5999", "Shop "+country, country)
		}
	}},
	{typology: monitoring.RuleDormant, life: "retiree", quietBefore: true, plant: func(g *synthetic, c customer) {
		old := g.start.AddDate(0, 0, -(190 + g.rng.IntN(200)))
		g.in(c, "last before", old, g.between(10, 300), g.own(c, 0))
		g.in(c, "wake", g.at(2, 1+g.rng.IntN(10), 10), g.between(1_000, 8_000), iban(970_000+c.n))
		c.life.month(g, c, 2)
	}},
	{typology: monitoring.RuleFanIn, plant: func(g *synthetic, c customer) {
		at := g.at(1, 1+g.rng.IntN(20), 9)
		span := time.Duration(1+g.rng.IntN(6)) * 24 * time.Hour
		n := 10 + g.rng.IntN(16)
		for i := range n {
			g.in(c, "payer", at.Add(span*time.Duration(i)/time.Duration(n)), g.between(20, 300), iban(980_000+c.n*30+i))
		}
	}},
	{typology: monitoring.RuleFanOut, plant: func(g *synthetic, c customer) {
		at := g.at(1, 1+g.rng.IntN(20), 9)
		g.in(c, "funds", at.Add(-2*time.Hour), g.between(3_000, 6_000), g.own(c, 12))
		span := time.Duration(1+g.rng.IntN(6)) * 24 * time.Hour
		n := 10 + g.rng.IntN(11)
		for i := range n {
			g.out(c, "payee", at.Add(span*time.Duration(i)/time.Duration(n)), g.between(10, 120), iban(990_000+c.n*30+i))
		}
	}},
	{typology: monitoring.RuleCardCash, life: "salaried employee", plant: func(g *synthetic, c customer) {
		// Cash beyond 30 % of a 5,000 EUR band times the risk factor
		// (up to 2,250 EUR for a low risk): 2,300 to 4,000 EUR.
		g.in(c, "cash funds", g.at(2, 1, 8), g.between(2_500, 4_000), g.own(c, 12))
		total, target := int64(0), g.between(2_300, 4_000)
		for total < target {
			a := min(target-total, 50_000+g.rng.Int64N(5)*10_000)
			total += a
			g.pay(c, "card_withdrawal", g.at(2, 2+g.rng.IntN(26), 16), a, "6011", "ATM", "DE")
		}
	}},
	{typology: monitoring.RuleCardHighRiskMCC, plant: func(g *synthetic, c customer) {
		mcc := []string{"7995", "6051", "4829", "6540"}[g.rng.IntN(4)]
		g.pay(c, "card_payment", g.at(1, 1+g.rng.IntN(27), 22), g.between(5, 300), mcc, "Merchant "+mcc, "MT")
	}},
	{typology: monitoring.RuleCardTesting, plant: func(g *synthetic, c customer) {
		at := g.at(1, 1+g.rng.IntN(27), 3)
		n := 5 + g.rng.IntN(6)
		span := time.Duration(5+g.rng.IntN(50)) * time.Minute
		for i := range n {
			g.declined = append(g.declined, monitoring.Movement{PartnerID: g.m.p.ID, Account: c.account, Kind: monitoring.KindCardPayment,
				Direction: monitoring.Out, Amount: g.between(0.5, 10), Currency: "EUR", MCC: "5999", Declined: true,
				At: at.Add(span * time.Duration(i) / time.Duration(n)), Source: fmt.Sprintf("test-%d-%d", c.n, i)})
		}
	}},
}
