package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"emi/internal/app"
	"emi/internal/emi"
)

// flow is what one client does once: a single request, or a business flow
// of several (onboarding, people, issue, card_ops). Its latency runs from
// its (intended) start to the end of its last step.
type flow struct {
	name string
	run  func(ctx context.Context, c *caller, n int64) error
}

// harness is what the flows share: the service layer (for the
// underwriter's decision), the partner's fixtures and per-process unique
// names.
type harness struct {
	app *app.App
	fx  fixtures
	// underwriter is the context of a staff user with the underwriter
	// role: approving an application is a back-office decision (no
	// partner API exists for it), so the onboarding flow takes it through
	// the service layer, as an underwriter's click in the back office does.
	underwriter context.Context
	// cards are leased by card_ops, so two flows never change one card's
	// status at once.
	cards chan string
	free  atomic.Int64
	tag   string
	// seq numbers the people and applications of every run of the
	// process: e-mails stay unique from one run to the next.
	seq atomic.Int64
}

// scenarios names every scenario: the single operations first, then the
// flows and the mixed run.
var scenarios = []string{"partner_details", "account_details", "accounts_list", "account_create", "card_details", "card_create",
	"transfer", "transfer_hot_out", "transfer_hot_in", "onboarding", "people", "issue", "card_ops", "mixed"}

// mixedRatio is the mix of the mixed scenario, in percent of flow starts:
// reads dominate (60), then transfers (15), card status changes (10),
// account + card issue (10) and the slow people and onboarding flows (5).
// The first nine starts of a run take each flow once (pickWithRound).
var mixedRatio = []struct {
	Flow   string
	Weight int
}{
	{"partner_details", 10}, {"account_details", 20}, {"card_details", 20}, {"accounts_list", 10},
	{"transfer", 15}, {"card_ops", 10}, {"issue", 10}, {"people", 3}, {"onboarding", 2},
}

// picker chooses among weighted choices deterministically from a sequence
// number: over many starts each choice gets its weight's share.
type picker struct {
	cum   []int
	total int
}

func newPicker(weights []int) picker {
	var p picker
	for _, w := range weights {
		p.total += w
		p.cum = append(p.cum, p.total)
	}
	return p
}

func (p picker) pick(n int64) int {
	u := mix(n, 11) % p.total
	i, _ := slices.BinarySearch(p.cum, u+1)
	return i
}

// mix spreads n over non-negative ints (a cheap deterministic shuffle of
// transfer pairs and amounts): Fibonacci hashing, bits from shift on.
func mix(n int64, shift uint) int {
	h := uint64(n) * 0x9E3779B97F4A7C15   // #nosec G115 -- a hash input: wrapping is the point
	return int((h >> shift) & 0x3fffffff) // #nosec G115 -- masked to 30 bits
}

// pickFlow returns the chooser of a scenario's flows and the flow names.
func (h *harness) pickFlow(scenario string) (func(int64) flow, []string, error) {
	if scenario != "mixed" {
		f, err := h.flow(scenario)
		if err != nil {
			return nil, nil, err
		}
		return func(int64) flow { return f }, []string{f.name}, nil
	}
	var fs []flow
	var ws []int
	var names []string
	for _, m := range mixedRatio {
		f, err := h.flow(m.Flow)
		if err != nil {
			return nil, nil, fmt.Errorf("mixed: %w", err)
		}
		fs, ws, names = append(fs, f), append(ws, m.Weight), append(names, f.name)
	}
	p := newPicker(ws)
	return func(n int64) flow { return fs[p.pickWithRound(n)] }, names, nil
}

// pickWithRound is the n-th choice: the first len(weights) starts take each choice
// once, in order (so every flow of a mix appears in a short run's report),
// the rest follow the weights.
func (p picker) pickWithRound(n int64) int {
	if n < int64(len(p.cum)) {
		return int(n)
	}
	return p.pick(n)
}

// pickOf is the fixture of the n-th start: the lists are in random order
// (prepare), and consecutive starts take consecutive entries, so one
// resource is read again only after every other one was, as a partner
// walking its customers would; a random pick would read one account twice
// in a second now and then, which one key may not do without re-signing.
func pickOf(xs []string, n int64) string { return xs[n%int64(len(xs))] }

// single is a flow of one request.
func single(name string, req func(n int64) (method, path, op string, body []byte)) flow {
	return flow{name: name, run: func(ctx context.Context, c *caller, n int64) error {
		m, p, op, b := req(n)
		_, err := c.do(ctx, m, p, op, b)
		return err
	}}
}

func (h *harness) flow(name string) (flow, error) {
	fx := h.fx
	need := func(xs []string, what string) error {
		if len(xs) == 0 {
			return fmt.Errorf("%s needs -partner with %s (emi generate cards --count N --free M)", name, what)
		}
		return nil
	}
	switch name {
	case "partner_details":
		return single(name, func(int64) (string, string, string, []byte) { return http.MethodGet, "/v2/partner", name, nil }), nil
	case "account_details":
		return single(name, func(n int64) (string, string, string, []byte) {
			return http.MethodGet, "/v2/accounts/" + pickOf(fx.accounts, n), name, nil
		}), need(fx.accounts, "accounts")
	case "accounts_list":
		return single(name, func(n int64) (string, string, string, []byte) {
			return http.MethodGet, "/v2/accounts/1/10?user=" + pickOf(fx.users, n), name, nil
		}), need(fx.users, "users")
	case "card_details":
		return single(name, func(n int64) (string, string, string, []byte) {
			return http.MethodGet, "/v2/cards/" + pickOf(fx.cards, n), name, nil
		}), need(fx.cards, "cards")
	case "card_create":
		return single(name, func(int64) (string, string, string, []byte) {
			// Out of free accounts, the answer is 12004, which the report
			// shows: give --free more accounts.
			i := (h.free.Add(1) - 1) % int64(len(fx.free))
			return http.MethodPost, "/v2/cards", name, fmt.Appendf(nil, `{"account":"%s","type":"virtual","pin":"4821"}`, fx.free[i])
		}), need(fx.free, "accounts without a card")
	case "account_create":
		return single(name, func(n int64) (string, string, string, []byte) {
			return http.MethodPost, "/v2/accounts", name, fmt.Appendf(nil, `{"program":"account_eur","user":"%s","alias":"load %d"}`, pickOf(fx.users, n), n)
		}), need(fx.users, "users")
	case "transfer", "transfer_hot_out", "transfer_hot_in":
		if len(fx.balances) < 2 {
			return flow{}, fmt.Errorf("%s needs funded balances", name)
		}
		return single(name, func(n int64) (string, string, string, []byte) {
			var from, to string
			switch cold := fx.balances[1:min(len(fx.balances), fx.cold+1)]; name {
			case "transfer":
				bs := fx.balances[:min(len(fx.balances), fx.pairs)]
				f := mix(n, 0) % len(bs)
				t := (f + 1 + mix(n, 20)%(len(bs)-1)) % len(bs)
				from, to = bs[f], bs[t]
			case "transfer_hot_out":
				from, to = fx.balances[0], cold[mix(n, 0)%len(cold)]
			default:
				from, to = cold[mix(n, 0)%len(cold)], fx.balances[0]
			}
			return http.MethodPost, "/v2/transfers", "transfer_create", fmt.Appendf(nil,
				`{"source":{"balance":"%s"},"destination":{"balance":"%s"},"amount":"%s","currency":"EUR","reference":"load %d"}`,
				from, to, emi.FormatMinor(1+int64(mix(n, 34)%100)), n)
		}), nil
	case "issue":
		return flow{name: name, run: h.issue}, need(fx.users, "users")
	case "card_ops":
		return flow{name: name, run: h.cardOps}, need(fx.cards, "cards")
	case "people":
		return flow{name: name, run: h.people}, nil
	case "onboarding":
		if h.underwriter == nil {
			return flow{}, fmt.Errorf("onboarding needs the service layer (DATABASE_URL)")
		}
		return flow{name: name, run: h.onboarding}, nil
	}
	return flow{}, fmt.Errorf("unknown scenario %q (one of %s)", name, strings.Join(scenarios, ", "))
}

func token(a answer) string {
	var d struct {
		Token  string `json:"token"`
		Status string `json:"status"`
	}
	_ = json.Unmarshal(a.data, &d)
	return d.Token
}

// issue opens an account for an existing user and issues a virtual card on
// it.
func (h *harness) issue(ctx context.Context, c *caller, n int64) error {
	a, err := c.do(ctx, http.MethodPost, "/v2/accounts", "account_create",
		fmt.Appendf(nil, `{"program":"account_eur","user":"%s","alias":"issue %d"}`, pickOf(h.fx.users, n), n))
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPost, "/v2/cards", "card_create",
		fmt.Appendf(nil, `{"account":"%s","type":"virtual","pin":"4821"}`, token(a)))
	return err
}

// cardOps reads a card, makes it inactive, reads it again and makes it
// active: the status changes a partner's customer support does.
func (h *harness) cardOps(ctx context.Context, c *caller, n int64) error {
	var card string
	select {
	case card = <-h.cards:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { h.cards <- card }()
	for _, step := range []struct{ m, op, path, body string }{
		{http.MethodGet, "card_details", "", ""},
		{http.MethodPut, "card_status", "/status", `{"status":"inactive"}`},
		{http.MethodGet, "card_details", "", ""},
		{http.MethodPut, "card_status", "/status", `{"status":"active"}`},
	} {
		var body []byte
		if step.body != "" {
			body = []byte(step.body)
		}
		if _, err := c.do(ctx, step.m, "/v2/cards/"+card+step.path, step.op, body); err != nil {
			return err
		}
	}
	return nil
}

// letters spells n in lowercase letters (names may not carry digits).
func letters(n int64) string {
	var b []byte
	for {
		b = append(b, byte('a'+n%26))
		n /= 26
		if n == 0 {
			return string(b)
		}
	}
}

// people creates a user, screens the person (aml_check) and starts KYC.
func (h *harness) people(ctx context.Context, c *caller, _ int64) error {
	n := h.seq.Add(1)
	first, last := "Lorna", "Quist"+letters(n)
	u, err := c.do(ctx, http.MethodPost, "/v2/users", "user_create", fmt.Appendf(nil,
		`{"first_name":"%s","last_name":"%s","email":"load.%s.%d@people.example","birthday":"1990-04-12","nationality":"BG"}`, first, last, h.tag, n))
	if err != nil {
		return err
	}
	// A match (409 / 18001) is a legitimate answer of aml_check.
	if _, err := c.do(ctx, http.MethodPost, "/v1/aml", "aml_check", fmt.Appendf(nil,
		`{"first_name":"%s","last_name":"%s","birthday":"1990-04-12","nationality":"BG"}`, first, last), http.StatusCreated, http.StatusConflict); err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPost, "/v1/kyc", "kyc_init", fmt.Appendf(nil, `{"user":"%s"}`, token(u)))
	return err
}

var pdfDoc = base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Count 0/Kids[]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"))

// applicationBody is a company application of the sandbox register with
// one clean UBO and a passport: complete, so it goes to submission.
func applicationBody(tag string, n int64) []byte {
	b, _ := json.Marshal(map[string]any{
		"products": []string{"account-opening", "card-issuing"}, "due_diligence": "CDD",
		"ip_address": "203.0.113.7", "fingerprint": fmt.Sprintf("load-%s-%d", tag, n),
		"company": map[string]any{
			"uic": "100000001", "legal_name": "Sandbox Trading Ltd", "trade_name": "Sandbox Trading",
			"country": "GB", "city": "London", "zip": "EC1A 1BB", "address1": "1 Long Lane",
			"contact_email": "ops@sandbox-trading.example", "phone": "+442079460000",
			"website": "https://sandbox-trading.example", "description_of_activity": "Software consultancy", "is_sie": false,
		},
		"members": []map[string]any{{
			"first_name": "Elin", "last_name": "Sandqvist", "type": []string{"ubo"},
			"ownership": true, "ownership_percentage": 100, "country": "SE", "country_of_residence": "GB",
			"birthday": "1987-03-02", "nationality": "SE", "place_of_birth": "SE", "unique_identifier": "8703021234",
			"pep_declaration": false, "pep_related_declaration": false, "is_sip": false,
			"contact_email": "elin@sandbox-trading.example",
			"documents":     []map[string]any{{"file": pdfDoc, "file_type": "pdf", "document_type": "passport"}},
		}},
	})
	return b
}

// onboardingPoll is how often the flow asks for its application's status
// while the automatic checks run.
const onboardingPoll = 50 * time.Millisecond

// onboarding submits a company application through the partner API,
// follows it with application_details until the automatic checks put it in
// the underwriters' queue, then an underwriter claims and approves it
// (service layer) and the partner sees it approved.
func (h *harness) onboarding(ctx context.Context, c *caller, n int64) error {
	a, err := c.do(ctx, http.MethodPost, "/v3/applications", "application_create", applicationBody(h.tag, h.seq.Add(1)))
	if err != nil {
		return err
	}
	tok := token(a)
	for {
		status, err := applicationStatus(ctx, c, tok)
		if err != nil {
			return err
		}
		switch status {
		case emi.AppApproved:
			return nil // an automatic partner: nobody has to decide
		case emi.AppInReview:
			return h.approve(ctx, c, tok)
		case emi.AppChecking:
		default:
			c.rec.add("underwriter_approve", 0, false, "application "+string(status), true)
			return fmt.Errorf("application %s is %s", tok, status)
		}
		if !sleepUntil(ctx, time.Now().Add(onboardingPoll)) {
			return ctx.Err()
		}
	}
}

func (h *harness) approve(ctx context.Context, c *caller, tok string) error {
	t0 := time.Now()
	err := func() error {
		if err := h.app.Review.Claim(h.underwriter, tok); err != nil {
			return err
		}
		_, stamp, _, _, err := h.app.Review.Evidence(h.underwriter, tok)
		if err != nil {
			return err
		}
		got, err := h.app.Review.Decide(h.underwriter, tok, emi.ReviewDecision{Action: "approve", Stamp: stamp})
		if err == nil && got.Status != emi.AppApproved {
			err = fmt.Errorf("application %s is %s after the approval (four-eyes?)", tok, got.Status)
		}
		return err
	}()
	if err != nil {
		c.rec.add("underwriter_approve", 0, false, err.Error(), true)
		return errUnexpected{op: "underwriter_approve", a: answer{status: 0}}
	}
	c.rec.add("underwriter_approve", time.Since(t0), true, "approved", false)
	status, err := applicationStatus(ctx, c, tok)
	if err != nil {
		return err
	}
	if status != emi.AppApproved {
		return fmt.Errorf("application %s: partner sees %s after the approval", tok, status)
	}
	return nil
}

// applicationStatus reads an application's status as its partner sees it
// (application_details).
func applicationStatus(ctx context.Context, c *caller, tok string) (emi.ApplicationStatus, error) {
	a, err := c.do(ctx, http.MethodGet, "/v3/applications/"+tok, "application_details", nil)
	if err != nil {
		return "", err
	}
	var d struct {
		Status emi.ApplicationStatus `json:"status"`
	}
	if err := json.Unmarshal(a.data, &d); err != nil {
		return "", fmt.Errorf("application_details of %s: %w", tok, err)
	}
	return d.Status, nil
}
