package browser_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// staffPrincipal acts as a sandbox staff member in a service call, as the
// back office does for them.
func staffPrincipal(t *testing.T, env *apptest.Env, email string) context.Context {
	t.Helper()
	var u struct {
		ID    string `db:"id"`
		Roles string `db:"roles"`
	}
	if err := env.App.DB.Get(&u, `SELECT id, array_to_string(roles, ',') AS roles FROM staff_users WHERE email = $1`, email); err != nil {
		t.Fatal(err)
	}
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: u.ID, StaffRoles: strings.Split(u.Roles, ",")})
}

// everyPage is an app with something behind every back-office page: an
// application in review claimed by an underwriter with a note on it, a
// person with a submitted KYC session, a card holder with a funded account,
// an outgoing payment, an adjustment and a termination waiting for a
// second person, an AML check with a decided hit and a claimed alert on
// a company whose owner is a sanctions match, a watch-list name, a partner whose webhook deliveries fail. fill turns a route
// pattern into a path with those tokens.
type everyPage struct {
	env     *apptest.Env
	partner *apptest.Partner
	tokens  map[string]string
}

func newEveryPage(t *testing.T) *everyPage {
	t.Helper()
	env, p := workingEnv(t, emi.PartnerCreate{Name: "Every Page Partner", Processing: emi.ProcessingSemiAutomatic,
		WebhookURL: "http://127.0.0.1:9/hooks"})
	f := &everyPage{env: env, partner: p, tokens: map[string]string{"{id}": p.ID}}
	app := queueApplication(t, env, p, nil)
	f.tokens["{application}"] = app
	uw := staffPrincipal(t, env, apptest.UnderwriterEmail)
	if err := env.App.Review.Claim(uw, app); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Review.AddNote(uw, app, 0, "Register extract asked for; @"+apptest.ComplianceEmail+" please look at the owner"); err != nil {
		t.Fatal(err)
	}
	card, _ := cardHolder(t, env, p)
	f.tokens["{card}"], f.tokens["{account}"], f.tokens["{user}"] = card.Token, card.Account, card.User
	var bal string
	if err := env.App.DB.Get(&bal, `SELECT token FROM balances WHERE account = $1`, card.Account); err != nil {
		t.Fatal(err)
	}
	env.Fund(t, card.Account, bal, "EUR", 25000)
	r := partnerCall(t, env, p, "/v2/transfers/external", "transfer_external_create", map[string]any{
		"source": map[string]any{"account": card.Account}, "destination": map[string]any{"name": "Acme GmbH", "iban": "DE89370400440532013000"},
		"amount": "12.50", "currency": "EUR", "reference": "Invoice 7"})
	if r.Status != http.StatusCreated {
		t.Fatalf("transfer_external_create: %s", r)
	}
	f.tokens["{transfer}"] = r.Data["token"].(string)

	docPath, selfiePath := photoFiles(t)
	_, session, secret := newPersonWithKYC(t, env, p, "Ada", "Everypage")
	if _, err := env.App.KYC.Submit(systemCtx(), secret, emi.KYCUpload{Kind: "passport", Consent: true,
		Front: readFile(t, docPath), Selfie: readFile(t, selfiePath)}); err != nil {
		t.Fatal(err)
	}
	f.tokens["{session}"] = session

	r = partnerCall(t, env, p, "/v1/aml", "aml_check", map[string]any{"first_name": "Kim", "last_name": "Jong Un", "nationality": "KP", "birthday": "1984-01-08"})
	if r.Code != emi.ErrAMLMatchFound.Code {
		t.Fatalf("aml_check: %s", r)
	}
	check := r.Data["token"].(string)
	f.tokens["{check}"] = check
	if _, err := env.App.AML.Decide(staffPrincipal(t, env, apptest.ComplianceEmail), check,
		emi.HitDecision{N: 1, Decision: "true_match", Reason: "Same birthday and nationality"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Watchlist.Add(staffPrincipal(t, env, apptest.ComplianceEmail),
		emi.WatchlistEntry{Name: "Every Page Watch Name", Category: "fraud", Note: "press report", Source: "https://news.example/every-page"}); err != nil {
		t.Fatal(err)
	}
	// Staff at work: a claimed alert, an adjustment and an account
	// termination waiting for a second person.
	queueApplication(t, env, p, func(b map[string]any) {
		c := b["company"].(map[string]any)
		c["uic"], c["legal_name"], c["trade_name"] = "100000003", "Pyongyang Trading Ltd", "Pyongyang Trading"
		m := b["members"].([]map[string]any)[0]
		m["first_name"], m["last_name"], m["birthday"], m["nationality"], m["unique_identifier"] = "Kim", "Jong Un", "1984-01-08", "KP", "KP1"
	})
	co := staffPrincipal(t, env, apptest.ComplianceEmail)
	alerts, err := env.App.Alerts.Queue(co)
	if err != nil || len(alerts) == 0 {
		t.Fatalf("alert queue: %v, %d alerts", err, len(alerts))
	}
	if err := env.App.Alerts.Claim(co, alerts[0].Kind, alerts[0].Subject); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Adjustments.Request(staffPrincipal(t, env, apptest.CSEmail), emi.AdjustmentRequest{Account: card.Account,
		Currency: "EUR", Direction: "credit", Amount: 500, Reason: "Goodwill for the card fee"}); err != nil {
		t.Fatal(err)
	}
	spare := openAccountVia(t, env, p, map[string]any{"program": "account_eur", "user": card.User})["token"].(string)
	if err := env.App.Accounts.RequestTermination(staffPrincipal(t, env, apptest.CSEmail), spare, "The customer moves abroad"); err != nil {
		t.Fatal(err)
	}
	// A monitoring alert about the card holder: a large credit and its
	// payment out, imported as of yesterday.
	at := time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339)
	history := `{"ref":"in","at":"` + at + `","kind":"incoming","account":"` + card.Account + `","amount":"20000.00","currency":"EUR","counterparty":{"iban":"DE89370400440532013000","name":"Payer"}}` + "\n" +
		`{"ref":"out","at":"` + at + `","kind":"transfer_out","account":"` + card.Account + `","amount":"20000.00","currency":"EUR","counterparty":{"iban":"DE89370400440532013000","name":"Payer"}}` + "\n"
	if res, err := env.App.HistoryImport.Import(context.Background(), p.ID, strings.NewReader(history)); err != nil || res.Booked != 2 {
		t.Fatalf("import a history: %+v %v", res, err)
	}
	for k, q := range map[string]string{
		"{alert}":  `SELECT token::text FROM monitoring_alerts WHERE subject_token = '` + card.User + `'`,
		"{member}": `SELECT token::text FROM company_members WHERE application = '` + app + `'`,
		"{staff}":  `SELECT id::text FROM staff_users WHERE email = '` + apptest.CSEmail + `'`,
	} {
		var v string
		if err := env.App.DB.Get(&v, q); err != nil {
			t.Fatal(err)
		}
		f.tokens[k] = v
	}
	// A case opened from that alert, with a note and a document.
	c, err := env.App.Cases.OpenCase(staffPrincipal(t, env, apptest.ComplianceEmail), []string{f.tokens["{alert}"]}, "Large credit sent on the same day")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Cases.AttachDocument(staffPrincipal(t, env, apptest.ComplianceEmail), c.Token, "call-notes.txt", []byte("Called the partner.")); err != nil {
		t.Fatal(err)
	}
	f.tokens["{case}"] = c.Token
	return f
}

// paths lists every back-office page to open: each GET route with the
// fixture's tokens (files, CSV downloads and sign-in steps left out), and
// the searches and filters a person uses most.
func (f *everyPage) paths(t *testing.T) []string {
	t.Helper()
	var out []string
	if err := f.env.App.Portal().Walk(func(method, route string) error {
		if method != http.MethodGet || strings.HasSuffix(route, ".csv") || strings.HasSuffix(route, ".xml") || strings.HasPrefix(route, "/signin") ||
			strings.HasPrefix(route, "/documents/") || strings.Contains(route, "/documents/{") {
			return nil
		}
		path := route
		if strings.HasPrefix(route, "/staff/{id}") {
			path = strings.Replace(path, "{id}", f.tokens["{staff}"], 1)
		}
		for k, v := range f.tokens {
			path = strings.ReplaceAll(path, k, v)
		}
		if strings.Contains(path, "{") {
			t.Errorf("route %s has no fixture token", route)
			return nil
		}
		out = append(out, "/backoffice"+path)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return append(out, "/backoffice/search?q=Dimova", "/backoffice/users?q=Dimova", "/backoffice/cards?q=Dimova",
		"/backoffice/accounts?q=Dimova", "/backoffice/review?tab=information_requested", "/backoffice/no-such-page")
}

// shortIDs finds "01a217a1…" in what the page shows (every section
// unfolded): for each, the 8 characters and the whole id found on the
// element or its parents (title, href, data-*), "" when there is none.
const shortIDs = `(() => {
	const out = [];
	const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let n = w.nextNode(); n; n = w.nextNode()) {
		const el = n.parentElement;
		if (!el || el.closest('script, style, template') || !el.getClientRects().length) continue;
		for (const m of n.textContent.matchAll(/\b([0-9a-f]{8})(?:…|\.\.\.)/g)) {
			let full = '';
			for (let e = el; e && !full && e !== document.body; e = e.parentElement) {
				for (const a of e.attributes) {
					const u = a.value.match(new RegExp(m[1] + '-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'));
					if (u) { full = u[0]; break; }
				}
			}
			out.push([m[1], full]);
		}
	}
	return out; })()`

// lowContrast is axe's color-contrast rule over the text of the page: for
// every visible text, its colour against the background it is drawn on
// (the nearest ancestor backgrounds, blended), 4.5:1 for normal text and
// 3:1 for large (24 px, or 18.66 px bold), WCAG 1.4.3. Text on a
// background image, SVG text and disabled controls are left out, as axe
// does. Each failing colour pair is reported once, with an example.
const lowContrast = `(() => {
	const parse = c => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null;
		const p = m[1].split(',').map(parseFloat); return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
	const over = (c, under) => ({r: c.r * c.a + under.r * (1 - c.a), g: c.g * c.a + under.g * (1 - c.a), b: c.b * c.a + under.b * (1 - c.a), a: 1});
	const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
		return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
	const background = el => {
		const layers = [];
		for (let e = el; e; e = e.parentElement) {
			const s = getComputedStyle(e);
			if (s.backgroundImage !== 'none') return null;
			const c = parse(s.backgroundColor);
			if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
		}
		let out = {r: 255, g: 255, b: 255, a: 1};
		for (let i = layers.length - 1; i >= 0; i--) out = over(layers[i], out);
		return out;
	};
	const hex = c => '#' + [c.r, c.g, c.b].map(v => Math.round(v).toString(16).padStart(2, '0')).join('');
	const seen = new Set(), out = [];
	const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let n = w.nextNode(); n; n = w.nextNode()) {
		const el = n.parentElement;
		if (!n.textContent.trim() || !el || !el.getClientRects().length || el.closest('svg, .skip, [disabled], [aria-hidden="true"]')) continue;
		const s = getComputedStyle(el);
		if (s.visibility === 'hidden') continue;
		let opacity = 1;
		for (let e = el; e; e = e.parentElement) opacity *= parseFloat(getComputedStyle(e).opacity);
		if (opacity === 0) continue;
		const bg = background(el), fg = parse(s.color);
		if (!bg || !fg) continue;
		const f = over(fg, bg), l1 = lum(f), l2 = lum(bg);
		const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
		const size = parseFloat(s.fontSize), large = size >= 24 || (parseInt(s.fontWeight, 10) >= 700 && size >= 18.66);
		if (ratio >= (large ? 3 : 4.5) - 0.005) continue;
		const key = hex(f) + ' on ' + hex(bg);
		if (seen.has(key)) continue;
		seen.add(key);
		out.push(key + ' ' + ratio.toFixed(2) + ':1 at ' + size + 'px (' + el.tagName.toLowerCase() + '.' + el.className + ' "' + n.textContent.trim().slice(0, 30) + '")');
	}
	return out; })()`

// widest names the elements that stick out of a 390 px page.
const widest = `Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > 391)
	.slice(-5).map(e => e.tagName + '.' + e.className + '#' + (e.getAttribute('data-testid') || '')).join(', ')`

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestEveryPageInTheBrowser opens every back-office page as each role
// (admin, underwriter, compliance, customer service, auditor) on an app
// with something behind every page, and for each:
//
//   - at 390 px, with every folded section opened, the page has no
//     horizontal scroll (document.documentElement.scrollWidth <= 390);
//   - no partner or staff member is shown by id where their name exists.
//     The rule: partners and staff members have names, so their ids,
//     whole or shortened ("01a217a1…"), may appear only in attributes (a
//     title on hover, a copy button's data, a link's href), never in the
//     text a person reads; the partner's and staff member's own page may
//     show their own id (it is what the page is about). Ids of things
//     without a name (applications, accounts, cards, transfers, checks,
//     KYC sessions, ledger entries, webhook deliveries, request ids) are
//     fine as text: they are what support reads out and searches for. A
//     shortened id is a partner's or staff member's when the whole id on
//     it (title, href, data-*) is one, or when there is no whole id on it
//     and its 8 characters are those of a partner or staff id (they are
//     UUIDv7, time first, so that cannot be told apart and is refused);
//   - the first role that may open the page saves it at 1440 and 390 px
//     as test-artifacts/screens/<page>-1440.png and -390.png, and checks
//     the contrast of every text on it as axe does (lowContrast).
//
// It replaces TestPhoneLayoutInTheBrowser (queues, a person, an account and
// a card at 390 px) and the 1280/768 px screenshots of a dozen admin pages.
// The old pages laid out at 711 to 1,021 px at 390 px and showed partners
// as "01a217a1…" to customer service; on this branch's starting point it
// still failed: the audit trail printed the staff ids of a note's mentions
// ({"mentions":["01a21959-…"]}), the transfer page and the search shortened
// ledger, balance and account tokens with no way to see them whole, and the
// review metrics laid out at 534 px.
func TestEveryPageInTheBrowser(t *testing.T) {
	t.Parallel()
	f := newEveryPage(t)
	named := map[string]bool{}
	var ids []string
	if err := f.env.App.DB.Select(&ids, `SELECT id::text FROM partners UNION ALL SELECT id::text FROM staff_users`); err != nil {
		t.Fatal(err)
	}
	prefixes := map[string]bool{}
	for _, id := range ids {
		named[id], prefixes[id[:8]] = true, true
	}
	paths := f.paths(t)
	if len(paths) < 40 {
		t.Fatalf("only %d pages: the route walk is broken", len(paths))
	}
	shot := map[string]bool{}
	opened := 0
	for _, email := range []string{apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.CSEmail, apptest.AuditorEmail} {
		b := newTab(t, f.env)
		b.signIn(f.env, email)
		for _, path := range paths {
			b.do("viewport", chromedp.EmulateViewport(390, 900))
			status := b.open(path)
			if status == http.StatusForbidden {
				if !shot["403"] {
					shot["403"] = true
					shootAt(b, "every-403", 390)
					shootAt(b, "every-403", 1440)
				}
				continue
			}
			if want := int64(http.StatusOK); path == "/backoffice/no-such-page" {
				want = http.StatusNotFound
				if status != want {
					t.Errorf("%s as %s: HTTP %d, want %d", path, email, status, want)
				}
			} else if status != want {
				t.Errorf("%s as %s: HTTP %d, want %d", path, email, status, want)
				continue
			}
			opened++
			if strings.TrimSpace(b.text("h1")) == "" {
				t.Errorf("%s: no heading", path)
			}
			name := pageName(path)
			if !shot[name] {
				shot[name] = true
				shootAt(b, name, 390)
				shootAt(b, name, 1440)
				for _, c := range eval[[]string](b, lowContrast) {
					t.Errorf("%s: contrast %s", path, c)
				}
				b.do("viewport", chromedp.EmulateViewport(390, 900))
			}
			b.script("open every section", `document.querySelectorAll('details').forEach(d => { d.open = true; })`)
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
				t.Errorf("%s as %s lays out at %d px at 390 px (sticking out: %s)", path, email, w, eval[string](b, widest))
			}
			own := strings.HasPrefix(path, "/backoffice/partners/"+f.partner.ID) || strings.HasPrefix(path, "/backoffice/staff/")
			text := eval[string](b, `document.body.innerText`)
			for _, id := range uuidRE.FindAllString(text, -1) {
				if named[id] && !(own && strings.Contains(path, id)) {
					at := strings.Index(text, id)
					t.Errorf("%s as %s shows the id %s as text: …%s…", path, email, id, oneLine(text[max(at-60, 0):min(at+60, len(text))]))
				}
			}
			for _, m := range eval[[][2]string](b, shortIDs) {
				if (m[1] != "" && named[m[1]]) || (m[1] == "" && prefixes[m[0]]) {
					t.Errorf("%s as %s shows %s… (whole id %q) where a name exists", path, email, m[0], m[1])
				}
			}
		}
		noCSPViolations(t, b)
	}
	if opened < 120 {
		t.Errorf("only %d pages opened over five roles", opened)
	}
	t.Logf("%d pages opened, %d saved at 1440 and 390 px in test-artifacts/screens", opened, len(shot))
}

// pageName names a page's screenshot after its path, tokens dropped:
// /backoffice/applications/<token>/members/<token> is
// "every-applications-x-members-x".
func pageName(path string) string {
	path, query, _ := strings.Cut(strings.TrimPrefix(path, "/backoffice"), "?")
	var parts []string
	for _, s := range strings.Split(strings.Trim(path, "/"), "/") {
		if uuidRE.MatchString(s) {
			s = "x"
		}
		parts = append(parts, s)
	}
	name := "every-" + strings.Join(parts, "-")
	if name == "every-" {
		name = "every-dashboard"
	}
	if query != "" {
		name += "-" + regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(query), "-")
	}
	return name
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestSignInPageAtPhoneWidth: the sign-in page, the only page before
// signing in, lays out within 390 px and is saved at 1440 and 390 px.
func TestSignInPageAtPhoneWidth(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	b := newTab(t, env)
	b.open("/backoffice/signin")
	shootAt(b, "signin", 1440)
	shootAt(b, "signin", 390)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the sign-in page lays out at %d px at 390 px", w)
	}
}
