package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
)

// lebanonIBAN is a valid Lebanese IBAN: Lebanon is on the EU's list of
// high-risk third countries, so the shipped high_risk_country_hold rule
// holds a payment to it. (Iran, under the FATF call for action, is not in
// the IBAN registry: a payment there is refused as an invalid IBAN.)
const lebanonIBAN = "LB62099900000001001901229114"

func toLebanon(src, amount string) map[string]any {
	return map[string]any{"source": map[string]any{"account": src},
		"destination": map[string]any{"name": "Beirut Trading", "iban": lebanonIBAN},
		"amount":      amount, "currency": "EUR", "reference": "Invoice 9"}
}

func reviewHeld(t *testing.T, env *apptest.Env, p *apptest.Partner, tok, decision string) apptest.Response {
	t.Helper()
	return call(t, env, p, http.MethodPost, "/v2/sandbox/transfers/"+tok+"/review", "sandbox_transfer_review", map[string]any{"decision": decision})
}

// TestHeldForReviewLifecycle: a payment to a jurisdiction on the EU's
// high-risk list is held before it leaves: the partner reads its own
// status (held_for_review), the money sits on the review hold account, the
// receiving bank's settlement cannot touch it, and the sandbox's stand-in
// for compliance releases one (pending, as any payment sent) and returns
// another (the money back, with a reason that says nothing of the review).
func TestHeldForReviewLifecycle(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, _, _ := openFunded(t, env, p, "account_eur", 100_000)

	r := payOut(t, env, p, toLebanon(acc, "100.00"))
	apptest.Expect(t, "pay to Lebanon", r, 0, http.StatusCreated)
	if r.Data["status"] != emi.TransferHeldForReview {
		t.Fatalf("status %v, want held_for_review", r.Data["status"])
	}
	held := r.Data["token"].(string)
	if got := available(t, env, p, acc); got != "900.00" {
		t.Fatalf("available %s: the held money left the balance", got)
	}
	if got := internalPosition(t, env, emi.LedgerReviewHold, "EUR"); got != 10_000 {
		t.Fatalf("review hold %d, want the 100.00 EUR", got)
	}
	if n := countRows(t, env, `SELECT count(*) FROM events WHERE resource_token = $1 AND type = 'transfer.held_for_review'`, held); n != 1 {
		t.Fatalf("%d transfer.held_for_review events", n)
	}
	d := call(t, env, p, http.MethodGet, "/v2/transfers/"+held, "transfer_details", nil)
	apptest.Expect(t, "details", d, 0, http.StatusOK)
	if d.Data["status"] != emi.TransferHeldForReview {
		t.Fatalf("details status %v", d.Data["status"])
	}
	apptest.Expect(t, "the bank completes a held payment", complete(t, env, p, held), 14007, http.StatusConflict)
	apptest.Expect(t, "the bank returns a held payment", returnPayment(t, env, p, held, "closed"), 14007, http.StatusConflict)
	apptest.Expect(t, "an unknown decision", reviewHeld(t, env, p, held, "approve"), 14001, http.StatusBadRequest)

	rel := reviewHeld(t, env, p, held, "release")
	apptest.Expect(t, "release", rel, 0, http.StatusOK)
	if rel.Data["status"] != emi.TransferPending {
		t.Fatalf("released: %v, want pending", rel.Data["status"])
	}
	apptest.Expect(t, "release twice", reviewHeld(t, env, p, held, "release"), 14007, http.StatusConflict)
	apptest.Expect(t, "the bank completes it now", complete(t, env, p, held), 0, http.StatusOK)

	r = payOut(t, env, p, toLebanon(acc, "50.00"))
	apptest.Expect(t, "pay to Lebanon again", r, 0, http.StatusCreated)
	second := r.Data["token"].(string)
	ret := reviewHeld(t, env, p, second, "return")
	apptest.Expect(t, "return", ret, 0, http.StatusOK)
	if ret.Data["status"] != emi.TransferReturned || ret.Data["return_reason"] != "returned after review" {
		t.Fatalf("returned: %s", ret)
	}
	if got := available(t, env, p, acc); got != "900.00" {
		t.Fatalf("available %s after the return, want the 50.00 back", got)
	}
	if got := internalPosition(t, env, emi.LedgerReviewHold, "EUR"); got != 0 {
		t.Fatalf("review hold %d after both decisions, want 0", got)
	}
	// Another partner's held transfer is not found (contract §2).
	other := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	r = payOut(t, env, p, toLebanon(acc, "10.00"))
	apptest.Expect(t, "a third", r, 0, http.StatusCreated)
	apptest.Expect(t, "another partner decides it", reviewHeld(t, env, other, r.Data["token"].(string), "release"), 14002, http.StatusNotFound)
	var declined int
	if err := env.App.DB.Get(&declined, `SELECT count(*) FROM monitoring_movements WHERE source = $1 AND declined`, second); err != nil || declined != 1 {
		t.Fatalf("the returned transfer's movement counts as declined: %d %v", declined, err)
	}
}

// TestHeldForReviewSandboxDecisionIsHiddenInProduction: outside the
// sandbox only compliance releases a held transfer; the partner that sent
// it (its initiator) has no route to it.
func TestHeldForReviewSandboxDecisionIsHiddenInProduction(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.Mode = config.ModeProduction }})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, _, _ := openFunded(t, env, p, "account_eur", 100_000)
	r := payOut(t, env, p, toLebanon(acc, "100.00"))
	apptest.Expect(t, "pay to Lebanon", r, 0, http.StatusCreated)
	apptest.Expect(t, "the initiator releases it", reviewHeld(t, env, p, r.Data["token"].(string), "release"), 10004, http.StatusNotFound)
	if got := available(t, env, p, acc); got != "900.00" {
		t.Fatalf("available %s", got)
	}
}

// TestCardPaymentAtAHighRiskMerchantIsDeclined: a card payment cannot
// wait for a review, so the rule that holds a payment declines it, with
// the issuer's generic code (05), and holds nothing.
func TestCardPaymentAtAHighRiskMerchantIsDeclined(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	c := newPayCard(t, env, p, "account_eur", 10_000, nil)
	c.decide(t, "at a merchant in Iran", with(pos("12.00"), "merchant_country", "IR"), emi.ReasonDoNotHonour)
	c.decide(t, "at home", pos("12.00"), emi.ReasonApproved)
	var declined int
	if err := env.App.DB.Get(&declined, `SELECT count(*) FROM monitoring_movements WHERE account = $1 AND declined`, c.acc); err != nil || declined != 1 {
		t.Fatalf("%d declined movements (%v), want the Iranian one", declined, err)
	}
}

// informationRequest has compliance ask partner p about user (an alert
// planted for the user, a case opened from it by a compliance officer)
// and returns the request's token.
func informationRequest(t *testing.T, env *apptest.Env, p *apptest.Partner, user string) string {
	t.Helper()
	alert := kernel.NewToken()
	if _, err := env.App.DB.Exec(`INSERT INTO monitoring_alerts (token, partner_id, subject_kind, subject_token, status, score, hits,
		raised_at, updated_at) VALUES ($1, $2, 'user', $3, 'open', 0, '[]', now(), now())`, alert, p.ID, user); err != nil {
		t.Fatal(err)
	}
	email := "officer-" + kernel.NewToken()[24:] + "@example.com"
	out, err := env.App.Staff.Create(emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test")),
		emi.StaffCreate{Email: email, Name: email, Roles: []emi.Role{emi.RoleCompliance}, Password: "Correct-Horse-Battery-9"})
	if err != nil {
		t.Fatal(err)
	}
	officer := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: out.User.ID,
		StaffRoles: []string{string(emi.RoleCompliance)}})
	c, err := env.App.Cases.OpenCase(officer, []string{alert}, "")
	if err != nil {
		t.Fatal(err)
	}
	ir, err := env.App.Cases.RequestInformation(officer, c.Token, "source_of_funds", "Where do the customer's funds come from?")
	if err != nil {
		t.Fatal(err)
	}
	return ir.Token
}

// TestInformationRequestsThroughTheAPI: the partner reads a request about
// its customer and answers it once; nothing it reads names a case, an
// alert or a report.
func TestInformationRequestsThroughTheAPI(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	user := createUser(t, env, p, validUser(p))
	tok := informationRequest(t, env, p, user)
	list := call(t, env, p, http.MethodGet, "/v2/information_requests?status=open", "information_requests_list", nil)
	apptest.Expect(t, "list", list, 0, http.StatusOK)
	d := call(t, env, p, http.MethodGet, "/v2/information_requests/"+tok, "information_request_details", nil)
	apptest.Expect(t, "details", d, 0, http.StatusOK)
	if d.Data["user"] != user || d.Data["topic"] != "source_of_funds" || d.Data["status"] != "open" {
		t.Fatalf("details: %s", d)
	}
	for _, leak := range []string{"case", "alert", "report", "suspic", "monitoring"} {
		if strings.Contains(strings.ToLower(string(d.Raw)+string(list.Raw)), leak) {
			t.Errorf("the partner reads %q: %s", leak, d.Raw)
		}
	}
	apptest.Expect(t, "an empty answer", call(t, env, p, http.MethodPost, "/v2/information_requests/"+tok+"/answer",
		"information_request_answer", map[string]any{"answer": " "}), 11001, http.StatusBadRequest)
	a := call(t, env, p, http.MethodPost, "/v2/information_requests/"+tok+"/answer", "information_request_answer",
		map[string]any{"answer": "Salary from Acme Ltd; payslips available."})
	apptest.Expect(t, "answer", a, 0, http.StatusOK)
	if a.Data["status"] != "answered" {
		t.Fatalf("answered: %s", a)
	}
	apptest.Expect(t, "a second answer", call(t, env, p, http.MethodPost, "/v2/information_requests/"+tok+"/answer",
		"information_request_answer", map[string]any{"answer": "again"}), 14041, http.StatusConflict)
}

// sealedCase opens a case about user with a document and an approved
// report, so that every sealed table of compliance's holds a value (the
// key rotation test re-seals them).
func sealedCase(t *testing.T, env *apptest.Env, p *apptest.Partner, user string) {
	t.Helper()
	informationRequest(t, env, p, user)
	var caseToken, officer string
	if err := env.App.DB.QueryRow(`SELECT token::text, opened_by::text FROM monitoring_cases WHERE subject_token = $1`, user).Scan(&caseToken, &officer); err != nil {
		t.Fatal(err)
	}
	ctx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: officer,
		StaffRoles: []string{string(emi.RoleCompliance)}})
	if _, err := env.App.Cases.AttachDocument(ctx, caseToken, "notes.txt", []byte("call notes")); err != nil {
		t.Fatal(err)
	}
	rep := kernel.NewToken()
	enc, err := env.App.Keys.Seal([]byte(`<?xml version="1.0" encoding="UTF-8"?><report/>`), monitoring.ReportContext(rep))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.DB.Exec(`INSERT INTO monitoring_reports (token, case_token, status, narrative, drafted_by, drafted_at,
		approved_by, approved_at, xml_enc) VALUES ($1, $2, 'approved', 'fixture', $3, now(), $3, now(), $4)`, rep, caseToken, officer, enc); err != nil {
		t.Fatal(err)
	}
}
