package browser_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// auditRowMaxHeight is the most an audit row may take at 390 px: about
// a half of a phone's screen (844 px): the long entry below measures 408
// px on the audit log and 321 px in the card's trail with the stacked
// rows, 940 px in both on the old tables.
const auditRowMaxHeight = 480

// TestAuditRowsOnAPhoneInTheBrowser: at 390 px an audit row (the audit log
// page, a card's audit trail and its reveals of card data) stacks its fields as label and value
// lines, the changes taking the screen's width, so an entry with a long
// change set is at most auditRowMaxHeight tall and the page does not
// scroll sideways; at 1440 px the table keeps its columns. The old tables
// squeezed the changes into a column a few letters wide, one word (or a
// few letters) a line: the row measured 940 px there, and this test
// failed.
func TestAuditRowsOnAPhoneInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Audit Partner"})
	card, _ := cardHolder(t, env, p)
	// A change set as long as a block with its reason and a delivery
	// address change leaves, on the card.
	if _, err := env.App.DB.Exec(`INSERT INTO audit_log (actor_type, actor_id, action, resource_type, resource_token, outcome, request_id, ip, changes)
		VALUES ('system', 'phone-test', 'card.block', 'card', $1, 'success', 'b3f1c2d4e5a6978812345678', '203.0.113.77', $2)`, card.Token,
		`{"status": {"from": "active", "to": "inactive"}, "reason": "Customer called from a new number: phone lost on the train to Plovdiv, block until they find it or ask for a replacement", "reason_code": "lost", "delivery": {"address1": "12 Vitosha Boulevard, entrance B, floor 4", "city": "Sofia", "zip": "1000", "country": "BG"}, "fields": ["status", "reason", "reason_code", "delivery"]}`); err != nil {
		t.Fatal(err)
	}
	// A reveal with a long reason: the card page's reveals table stacks
	// the same way (it squeezed its reason column as the audit tables did).
	if _, err := env.App.DB.Exec(`INSERT INTO audit_log (actor_type, actor_id, action, resource_type, resource_token, outcome, request_id, ip, changes)
		VALUES ('system', 'phone-test', 'card.reveal', 'card', $1, 'success', 'b3f1c2d4e5a6978812345679', '203.0.113.77', $2)`, card.Token,
		`{"fields": ["pan", "cvv", "expiry"], "reason": "Cardholder on the phone cannot read the number off a damaged card and needs it for a hotel booking in Plovdiv tonight; identity checked by security questions"}`); err != nil {
		t.Fatal(err)
	}
	b := newTab(t, env)
	b.signIn(env, apptest.AdminEmail)
	tallest := func(rows string) int {
		return eval[int](b, `Math.max(0, ...Array.from(document.querySelectorAll(`+jsString(rows)+`)).map(r => Math.round(r.getBoundingClientRect().height)))`)
	}
	for _, c := range []struct {
		name, path, rows string
		max              int
	}{
		{"audit-log-phone", "/backoffice/audit?resource_token=" + card.Token, `[data-testid="audit-table"] tbody tr`, auditRowMaxHeight},
		{"card-audit-phone", "/backoffice/cards/" + card.Token, `[data-testid="card-audit-row"]`, auditRowMaxHeight},
		// The reveal row measures 219 px stacked, 430 px in the old table.
		{"card-reveals-phone", "/backoffice/cards/" + card.Token, `[data-testid="reveal-row"]`, 300},
	} {
		b.do("viewport", chromedp.EmulateViewport(1440, 900))
		b.open(c.path)
		if n := b.count(c.rows); n == 0 {
			t.Fatalf("%s: no audit rows", c.path)
		}
		wide := tallest(c.rows)
		shootAt(b, c.name, 390)
		h := tallest(c.rows)
		t.Logf("%s: tallest audit row %d px at 390 px, %d px at 1440 px", c.path, h, wide)
		if h > c.max {
			t.Errorf("%s: a row of %s is %d px tall at 390 px, want at most %d", c.path, c.rows, h, c.max)
		}
		noPageScroll(b, c.path)
	}
}
