package servicetest_test

import (
	"fmt"
	"testing"
	"time"
)

// TestMonitoringCleanCustomersRaiseNothing: customers who live as they
// declared (a monthly salary within their band, rent, bills, everyday card
// payments, a cash withdrawal a month, a few transfers in) raise no alert
// over three months. A rule that alerts on them is too sensitive for
// ordinary lives: the false positives compliance would drown in.
func TestMonitoringCleanCustomersRaiseNothing(t *testing.T) {
	m := newMonitoringApp(t)
	const customers = 12
	type person struct{ user, account string }
	var people []person
	var lines []line
	for c := range customers {
		u, a := m.person(t, "Between 1001 and 5000 EUR", "Between 1001 and 5000 EUR", "Between 3-5 times", []string{"Low", "Medium", "High"}[c%3])
		people = append(people, person{u, a})
		for month := range 3 {
			// Three whole past months: the current month's days may
			// be in the future, which the import refuses.
			start := m.base.AddDate(0, month-1, 0)
			at := func(day int, hour int) string {
				return start.Add(time.Duration(day-1)*24*time.Hour + time.Duration(hour)*time.Hour).Format(time.RFC3339)
			}
			ref := func(what string, n int) string { return fmt.Sprintf("c%d-m%d-%s-%d", c, month, what, n) }
			lines = append(lines,
				incoming(ref("salary", 0), at(25, 9), a, fmt.Sprintf("%d.00", 2000+50*c), iban(1000+c)),
				incoming(ref("refund", 0), at(12, 14), a, "45.50", iban(2000+c)),
				outgoing(ref("rent", 0), at(2, 8), a, fmt.Sprintf("%d.00", 600+10*c), iban(3000+c)),
				outgoing(ref("utilities", 0), at(6, 10), a, "118.40", iban(4000)),
				outgoing(ref("phone", 0), at(8, 10), a, "29.99", iban(4001)),
				card("card_withdrawal", ref("atm", 0), at(14, 17), a, "200.00", "6011"),
			)
			if month == 0 {
				// The first month opens the account with savings from
				// another bank.
				lines = append(lines, incoming(ref("opening", 0), at(1, 9), a, "1800.00", iban(5000+c)))
			}
			for n := range 18 {
				mcc := []string{"5411", "5812", "5541", "5912", "5311", "4121"}[n%6]
				lines = append(lines, card("card_payment", ref("card", n), at(3+n, 12+n%6), a, fmt.Sprintf("%d.%02d", 8+n*3%40, 10+n), mcc))
			}
		}
	}
	m.load(t, lines...)
	for _, p := range people {
		if a := m.alertOf(t, p.user); a.Token != "" {
			for _, h := range a.Hits {
				t.Errorf("a clean customer alerted: %s: %s (%s)", h.Rule, h.Sentence, h.Ref)
			}
		}
	}
}
