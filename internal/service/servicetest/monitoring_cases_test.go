package servicetest_test

// Cases, information requests, compliance holds, held transfers and
// suspicious transaction reports against PostgreSQL, with the attacks
// the controls must stop: one officer filing alone, a partner or customer
// service reading a case, the initiator of a held transfer releasing it,
// a question that tips the customer off.

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"emi/internal/emi"
	"emi/internal/goaml"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/transfers"
)

// identifiedPerson creates a person with everything a goAML report needs
// of them (birth date, national number, nationality, residence,
// occupation, phone, passport) and a EUR account.
func (m *monitoringApp) identifiedPerson(t *testing.T) (user, account string) {
	t.Helper()
	in := emi.UserCreate{Email: kernel.NewToken() + "@example.com"}
	in.FirstName, in.LastName = "Ivana", "Petrova"
	in.Birthday, in.UniqueIdentifier, in.Nationality, in.Country = "1985-03-14", "8503146523", "BG", "BG"
	in.Occupation, in.MobilePhone, in.IDPassportNumber, in.CountryIssuingIDCard = "Engineer", "+359888123456", "382914756", "BG"
	in.Address1, in.City, in.Zip = "1 Vitosha Blvd", "Sofia", "1000"
	u, err := m.env.App.Users.Create(m.partner(), in)
	if err != nil {
		t.Fatalf("create person: %v %v", err, emi.AsError(err).Fields)
	}
	a, err := m.env.App.Accounts.Create(m.partner(), emi.AccountCreate{Program: "account_eur", User: u.Token})
	if err != nil {
		t.Fatalf("open the person's account: %v", err)
	}
	return u.Token, a.Token
}

// complianceOfficer creates an enabled compliance officer (set up by the
// system, linked to nobody) and returns its context.
func (m *monitoringApp) complianceOfficer(t *testing.T) context.Context {
	t.Helper()
	email := fmt.Sprintf("o-%s@example.com", kernel.NewToken()[24:])
	out, err := m.env.App.Staff.Create(sys(), emi.StaffCreate{Email: email, Name: "Officer " + email[2:8], Roles: []emi.Role{emi.RoleCompliance},
		Password: "Correct-Horse-Battery-9"})
	if err != nil {
		t.Fatalf("create officer: %v", err)
	}
	return as(out.User)
}

// alertedPerson has a person whose imported history raised an alert, and
// returns the person, the account and the alert.
func (m *monitoringApp) alertedPerson(t *testing.T) (user, account, alert string) {
	t.Helper()
	u, a := m.identifiedPerson(t)
	m.load(t, incoming("big-"+u[24:], m.at(2*day), a, "15000.00", iban(7)), outgoing("out-"+u[24:], m.at(3*day), a, "14000.00", iban(8)))
	al := m.alertOf(t, u)
	if al.Token == "" {
		t.Fatal("the history raised no alert")
	}
	return u, a, al.Token
}

func TestMonitoringCaseToReport(t *testing.T) {
	m := newMonitoringApp(t)
	u, acc, alert := m.alertedPerson(t)
	first, second := m.complianceOfficer(t), m.complianceOfficer(t)
	cs := as(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleCustomerService}})
	cases := m.env.App.Cases

	if _, err := cases.OpenCase(cs, []string{alert}, ""); !errors.Is(err, emi.ErrForbidden) {
		t.Fatalf("customer service opens a case: %v", err)
	}
	c, err := cases.OpenCase(first, []string{alert}, "pass-through right after a large credit")
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := cases.OpenCase(second, []string{alert}, ""); !errors.Is(err, emi.ErrCaseConflict) {
		t.Fatalf("the same alert in a second case: %v", err)
	}
	if a := m.alertOf(t, u); a.Status != "in_case" {
		t.Fatalf("the alert is %q, want in_case (out of the queue)", a.Status)
	}
	if _, err := cases.AddNote(first, c.Token, "called the partner's support line"); err != nil {
		t.Fatal(err)
	}
	if _, err := cases.Assign(first, c.Token, staffOf(second)); err != nil {
		t.Fatalf("assign: %v", err)
	}
	if _, err := cases.Assign(first, c.Token, kernel.NewToken()); !errors.Is(err, emi.ErrReviewValidation) {
		t.Fatalf("assign to a stranger: %v", err)
	}

	// The question must read as a routine review.
	for _, q := range []string{"We suspect money laundering: explain.", "Our monitoring raised an alert, why?",
		"This case is being investigated.", "We may file a report with the FIU."} {
		if _, err := cases.RequestInformation(second, c.Token, "source_of_funds", q); !errors.Is(err, emi.ErrReviewValidation) {
			t.Errorf("question %q: %v, want refused as tipping off", q, err)
		}
	}
	ir, err := cases.RequestInformation(second, c.Token, "source_of_funds", "Please describe where the 15,000 EUR received on 3 days ago came from.")
	if err != nil {
		t.Fatalf("request information: %v", err)
	}
	var body string
	if err := m.env.App.DB.Get(&body, `SELECT convert_from(body, 'UTF8') FROM events WHERE resource_token = $1`, ir.Token); err != nil {
		t.Fatalf("information_request.created: %v", err)
	}
	for _, leak := range []string{c.Token, alert, "case", "alert", "monitoring", "suspic", "report"} {
		if strings.Contains(strings.ToLower(body), leak) {
			t.Errorf("the partner's event says %q: %s", leak, body)
		}
	}
	partner := m.partner()
	list, _, err := cases.PartnerInformationRequests(partner, monitoring.RequestList{Status: "open", Limit: 10})
	if err != nil || len(list) != 1 || list[0].Token != ir.Token {
		t.Fatalf("the partner's open requests: %+v %v", list, err)
	}
	other := m.env.NewPartner(t, emi.PartnerCreate{Name: "Other"})
	otherCtx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: other.KeyID, PartnerID: other.ID})
	if _, err := cases.AnswerInformationRequest(otherCtx, ir.Token, "not mine"); !errors.Is(err, emi.ErrInformationRequestNotFound) {
		t.Fatalf("another partner answers: %v", err)
	}
	if _, err := cases.AnswerInformationRequest(partner, ir.Token, "The sale of a flat; contract attached by e-mail."); err != nil {
		t.Fatalf("answer: %v", err)
	}
	if _, err := cases.AnswerInformationRequest(partner, ir.Token, "again"); !errors.Is(err, emi.ErrInformationRequestAnswered) {
		t.Fatalf("a second answer: %v", err)
	}
	for _, who := range []context.Context{partner, cs} {
		if _, err := cases.View(who, c.Token); !errors.Is(err, emi.ErrForbidden) {
			t.Errorf("a case read by a partner or customer service: %v, want forbidden", err)
		}
	}

	// A compliance hold stops money leaving; the case cannot close while
	// it holds the money.
	if _, err := cases.PlaceHold(second, c.Token, "until the source of funds is documented"); err != nil {
		t.Fatalf("place hold: %v", err)
	}
	if _, err := m.env.App.Transfers.CreateExternal(partner, emi.TransferExternalCreate{Source: emi.TransferParty{Account: acc},
		Destination: emi.ExternalParty{Name: "Payee", IBAN: "DE89370400440532013000"}, Amount: 100, Currency: "EUR"}); !errors.Is(err, emi.ErrTransferComplianceHold) {
		t.Fatalf("a payment under a compliance hold: %v", err)
	}
	if _, err := cases.Close(second, c.Token, "explained"); !errors.Is(err, emi.ErrCaseConflict) {
		t.Fatalf("closing a case that holds money: %v", err)
	}
	if _, err := cases.LiftHold(second, c.Token, "documents received"); err != nil {
		t.Fatalf("lift: %v", err)
	}
	if _, err := m.env.App.Transfers.CreateExternal(partner, emi.TransferExternalCreate{Source: emi.TransferParty{Account: acc},
		Destination: emi.ExternalParty{Name: "Payee", IBAN: "DE89370400440532013000"}, Amount: 100, Currency: "EUR"}); err != nil {
		t.Fatalf("a payment once the hold is lifted: %v", err)
	}

	// The report: drafted by one officer, approved by another.
	rep, err := cases.SubmitReport(second, c.Token, "The customer received 15,000.00 EUR and sent 14,000.00 EUR on within a day.", "Account monitored; no hold.")
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if len(rep.Transactions) != 2 {
		t.Fatalf("the report's transactions %v, want the two of the alert", rep.Transactions)
	}
	v, err := cases.View(first, c.Token)
	if err != nil || v.ReportRequest == nil {
		t.Fatalf("view: %+v %v", v.ReportRequest, err)
	}
	if _, err := cases.ApproveReport(second, c.Token, v.ReportRequest.ID); !errors.Is(err, emi.ErrFourEyes) {
		t.Fatalf("the drafter approves: %v, want four-eyes", err)
	}
	if _, err := cases.ApproveReport(as(emi.StaffUser{ID: staffOf(second), Roles: []emi.Role{emi.RoleCompliance}}), c.Token, v.ReportRequest.ID); !errors.Is(err, emi.ErrFourEyes) {
		t.Fatalf("the drafter approves from another session: %v, want four-eyes", err)
	}
	if _, err := cases.ApproveReport(cs, c.Token, v.ReportRequest.ID); !errors.Is(err, emi.ErrForbidden) {
		t.Fatalf("customer service approves: %v", err)
	}
	if _, err := cases.ApproveReport(first, c.Token, v.ReportRequest.ID); err != nil {
		t.Fatalf("the second officer approves: %v (%s)", err, emi.AsError(err).Public)
	}
	v, err = cases.View(first, c.Token)
	if err != nil || v.Status != monitoring.CaseReported || v.Report == nil || !v.Report.HasFile {
		t.Fatalf("after approval: %s %+v %v", v.Status, v.Report, err)
	}
	if _, err := cases.AddNote(first, c.Token, "one more thing"); !errors.Is(err, emi.ErrCaseConflict) {
		t.Fatalf("a note on a reported case: %v", err)
	}
	_, file, err := cases.ReportFile(first, c.Token)
	if err != nil {
		t.Fatal(err)
	}
	validateGoAML(t, file)
	for _, want := range []string{"<report_code>STR</report_code>", "Petrova", "382914756", "15000.00", "14000.00"} {
		if !strings.Contains(string(file), want) {
			t.Errorf("the goAML file lacks %q", want)
		}
	}
	kinds := map[string]bool{}
	for _, e := range v.Events {
		kinds[e.Kind] = true
	}
	for _, k := range []string{"opened", "note", "assigned", "information_requested", "information_answered", "hold_placed",
		"hold_lifted", "report_submitted", "reported"} {
		if !kinds[k] {
			t.Errorf("the timeline has no %s step: %v", k, kinds)
		}
	}
	var sealed []byte
	if err := m.env.App.DB.Get(&sealed, `SELECT xml_enc FROM monitoring_reports WHERE case_token = $1`, c.Token); err != nil || strings.Contains(string(sealed), "Petrova") {
		t.Fatalf("the stored report is not sealed (%v)", err)
	}
}

// validateGoAML checks a report against the shipped goAML schema with
// xmllint (skipped without it, unless CI requires it).
func validateGoAML(t *testing.T, file []byte) {
	t.Helper()
	if err := xml.Unmarshal(file, new(struct{})); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if _, err := exec.LookPath("xmllint"); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("EMI_REQUIRE_XMLLINT") == "1" {
			t.Fatal("xmllint is required (apt-get install libxml2-utils)")
		}
		t.Log("xmllint not installed: the schema validation is skipped")
		return
	}
	dir := t.TempDir()
	xsd, doc := filepath.Join(dir, "goAMLSchema.xsd"), filepath.Join(dir, "report.xml")
	if err := os.WriteFile(xsd, goaml.Schema, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, file, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("xmllint", "--noout", "--schema", xsd, doc).CombinedOutput(); err != nil {
		t.Fatalf("the report does not validate against goAML %s: %v\n%s\n%s", goaml.SchemaVersion, err, out, file)
	}
}

// TestMonitoringCaseClosedWithoutSuspicion: a case closes with a reason,
// and the rules' precision counts it.
func TestMonitoringCaseClosedWithoutSuspicion(t *testing.T) {
	m := newMonitoringApp(t)
	_, _, alert := m.alertedPerson(t)
	o := m.complianceOfficer(t)
	c, err := m.env.App.Cases.OpenCase(o, []string{alert}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.env.App.Cases.Close(o, c.Token, ""); !errors.Is(err, emi.ErrReviewValidation) {
		t.Fatalf("closing without a reason: %v", err)
	}
	if _, err := m.env.App.Cases.Investigate(o, c.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := m.env.App.Cases.Close(o, c.Token, "salary and rent: documented"); err != nil {
		t.Fatalf("close: %v", err)
	}
	stats, err := m.env.App.Cases.RuleStats(o)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range stats {
		if s.Rule == monitoring.RuleLargeAmount {
			found = true
			if p, ok := s.Precision(); s.Alerts != 1 || s.Cases != 1 || s.ClosedNoSuspicion != 1 || !ok || p != 0 {
				t.Errorf("large_amount stats %+v (precision %v %v)", s, p, ok)
			}
		}
	}
	if !found {
		t.Fatalf("no large_amount stats: %+v", stats)
	}
}

// TestHeldTransferCannotBeReleasedByItsInitiator: an administrator creates
// a partner (so holds its API key's secret), sends money with the key and
// sets up a compliance officer; the transfer is held, and the officer the
// administrator set up cannot release it: to the decision engine they are
// one person. An officer linked to nobody can. Customer service cannot.
func TestHeldTransferCannotBeReleasedByItsInitiator(t *testing.T) {
	m := newMonitoringApp(t)
	admin := newAdmin(t, m)
	creds, err := m.env.App.Partners.Create(admin, emi.PartnerCreate{Name: "Insider Ltd"})
	if err != nil {
		t.Fatalf("the admin creates a partner: %v", err)
	}
	key := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: creds.KeyID, PartnerID: creds.Partner.ID,
		MasterMerchant: creds.Merchant})
	u, err := m.env.App.Users.Create(key, emi.UserCreate{Email: kernel.NewToken() + "@example.com", UserFields: emi.UserFields{FirstName: "Ines", LastName: "Ider"}})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := m.env.App.Accounts.Create(key, emi.AccountCreate{Program: "account_eur", User: u.Token})
	if err != nil {
		t.Fatal(err)
	}
	m.env.Fund(t, acc.Token, acc.Balances[0].Token, "EUR", 100_000)
	tr, err := m.env.App.Transfers.CreateExternal(key, emi.TransferExternalCreate{Source: emi.TransferParty{Account: acc.Token},
		Destination: emi.ExternalParty{Name: "Beirut Trading", IBAN: "LB62099900000001001901229114"}, Amount: 50_000, Currency: "EUR"})
	if err != nil || tr.Status != emi.TransferHeldForReview {
		t.Fatalf("the payment to Lebanon: %+v %v", tr.Status, err)
	}
	linked := newStaffBy(t, m, admin, emi.RoleCompliance)
	if _, err := m.env.App.Transfers.DecideHeld(linked, tr.Token, transfers.HeldRelease, "looks fine"); !errors.Is(err, emi.ErrFourEyes) {
		t.Fatalf("the officer the initiator set up releases it: %v, want four-eyes", err)
	}
	cs := as(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleCustomerService}})
	if _, err := m.env.App.Transfers.DecideHeld(cs, tr.Token, transfers.HeldRelease, "looks fine"); !errors.Is(err, emi.ErrForbidden) {
		t.Fatalf("customer service releases it: %v", err)
	}
	out, err := m.env.App.Transfers.DecideHeld(m.complianceOfficer(t), tr.Token, transfers.HeldRelease, "invoice checked")
	if err != nil || out.Status != emi.TransferPending {
		t.Fatalf("an unrelated officer releases it: %+v %v", out.Status, err)
	}
	if _, err := m.env.App.Transfers.DecideHeld(m.complianceOfficer(t), tr.Token, transfers.HeldReturn, "again"); !errors.Is(err, emi.ErrTransferInvalidTransition) {
		t.Fatalf("deciding a released transfer: %v", err)
	}
}

// newAdmin is an administrator set up by the system.
func newAdmin(t *testing.T, m *monitoringApp) context.Context {
	t.Helper()
	email := fmt.Sprintf("a-%s@example.com", kernel.NewToken()[24:])
	out, err := m.env.App.Staff.Create(sys(), emi.StaffCreate{Email: email, Name: email, Roles: []emi.Role{emi.RoleAdmin},
		Password: "Correct-Horse-Battery-9"})
	if err != nil {
		t.Fatal(err)
	}
	return as(out.User)
}

// newStaffBy has the administrator by create a staff user (a second,
// unrelated administrator approving the privileged change).
func newStaffBy(t *testing.T, m *monitoringApp, by context.Context, roles ...emi.Role) context.Context {
	t.Helper()
	email := fmt.Sprintf("s-%s@example.com", kernel.NewToken()[24:])
	out, err := m.env.App.Staff.Create(by, emi.StaffCreate{Email: email, Name: email, Roles: roles})
	if err != nil {
		t.Fatalf("create staff: %v", err)
	}
	if out.Change.Status == emi.StaffChangePending {
		if out, err = m.env.App.Staff.ApproveChange(newAdmin(t, m), out.Change.ID); err != nil {
			t.Fatalf("approve the staff change: %v", err)
		}
	}
	return as(out.User)
}

// TestHoldRuleRaceAtAWindowThreshold: with the outgoing-volume rule
// switched to hold (two officers), two transfers racing past the declared
// band are both counted: exactly one of them (the one that crosses the
// band) is held, whatever their order. Without the subject's screening
// lock each would see only itself and neither would be held.
func TestHoldRuleRaceAtAWindowThreshold(t *testing.T) {
	m := newMonitoringApp(t)
	first, second := officer(), officer()
	params := map[string]float64{"factor_low": 1.5, "factor_medium": 1.25, "factor_high": 1}
	p, err := m.env.App.Monitor.ProposeRuleChange(first, monitoring.RuleChange{Code: monitoring.RuleProfileOutgoing, Score: 40,
		Enabled: true, Params: params, Outcome: monitoring.OutcomeHold, Reason: "hold what leaves beyond the band"})
	if err != nil {
		t.Fatalf("propose: %v", err)
	}
	if _, err := m.env.App.Monitor.ApproveRuleChange(second, monitoring.RuleProfileOutgoing, "", p.Request.ID); err != nil {
		t.Fatalf("approve: %v", err)
	}
	for round := range 8 {
		// Two accounts of one person paying two people: the transfers lock
		// different balances, so only the subject's screening lock orders
		// them.
		u, src1 := m.person(t, "", "Less than 1000 EUR", "", "High")
		a2, err := m.env.App.Accounts.Create(m.partner(), emi.AccountCreate{Program: "account_eur", User: u})
		if err != nil {
			t.Fatal(err)
		}
		_, dst1 := m.person(t, "", "", "", "")
		_, dst2 := m.person(t, "", "", "", "")
		sources, dests := []string{src1, a2.Token}, []string{dst1, dst2}
		for _, src := range sources {
			var bal string
			if err := m.env.App.DB.Get(&bal, `SELECT token FROM balances WHERE account = $1`, src); err != nil {
				t.Fatal(err)
			}
			m.env.Fund(t, src, bal, "EUR", 500_000)
		}
		transfers := make(chan emi.Transfer, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				tr, err := m.env.App.Transfers.Create(m.partner(), emi.TransferCreate{Amount: 60_000, Currency: "EUR",
					Source: emi.TransferParty{Account: sources[i]}, Destination: emi.TransferParty{Account: dests[i]}})
				if err != nil {
					t.Error(err)
					return
				}
				transfers <- tr
			})
		}
		wg.Wait()
		close(transfers)
		held := 0
		for tr := range transfers {
			// The paying side is recorded either way; the receiving side
			// only when the money reached it.
			wantIn := 1
			if tr.Status == emi.TransferHeldForReview {
				held++
				wantIn = 0
			}
			for dir, want := range map[string]int{"out": 1, "in": wantIn} {
				var n int
				if err := m.env.App.DB.Get(&n, `SELECT count(*) FROM monitoring_movements WHERE source = $1 AND direction = $2`,
					tr.Token, dir); err != nil {
					t.Fatal(err)
				}
				if n != want {
					t.Errorf("round %d: transfer %s (%s): %d %q movements recorded, want %d", round, tr.Token, tr.Status, n, dir, want)
				}
			}
		}
		if held != 1 {
			t.Fatalf("round %d: %d of the two racing transfers held, want exactly one", round, held)
		}
	}
}

// TestMonitoringCaseRefusals: what a case refuses changes nothing: a file
// that is not a document, a document read through another case, lifting a
// hold that is not there, and a rejected report leaves the case open to
// close (the rejection needs the reporting permission, never the
// drafter's own).
func TestMonitoringCaseRefusals(t *testing.T) {
	m := newMonitoringApp(t)
	_, _, alert := m.alertedPerson(t)
	drafter, reviewer := m.complianceOfficer(t), m.complianceOfficer(t)
	cases := m.env.App.Cases
	c, err := cases.OpenCase(drafter, []string{alert}, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"an executable": []byte("MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff"), "empty": nil} {
		if _, err := cases.AttachDocument(drafter, c.Token, "x.bin", content); !errors.Is(err, emi.ErrReviewValidation) {
			t.Errorf("%s file: %v, want refused", name, err)
		}
	}
	d, err := cases.AttachDocument(drafter, c.Token, "notes.txt", []byte("call notes"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cases.Document(drafter, kernel.NewToken(), d.Token); !errors.Is(err, emi.ErrDocumentNotFound) {
		t.Fatalf("a document read through another case: %v", err)
	}
	if _, body, err := cases.Document(drafter, c.Token, d.Token); err != nil || string(body) != "call notes" {
		t.Fatalf("the document: %q %v", body, err)
	}
	if _, err := cases.LiftHold(drafter, c.Token, "nothing to lift"); !errors.Is(err, emi.ErrCaseConflict) {
		t.Fatalf("lifting no hold: %v", err)
	}
	if _, err := cases.SubmitReport(drafter, c.Token, "A narrative worth a second look.", ""); err != nil {
		t.Fatal(err)
	}
	v, err := cases.View(reviewer, c.Token)
	if err != nil || v.ReportRequest == nil {
		t.Fatalf("view: %v", err)
	}
	if _, err := cases.Close(drafter, c.Token, "no suspicion after all"); !errors.Is(err, emi.ErrCaseConflict) {
		t.Fatalf("closing while a report waits: %v", err)
	}
	if err := cases.RejectReport(reviewer, c.Token, v.ReportRequest.ID, "the narrative does not support a suspicion"); err != nil {
		t.Fatalf("reject: %v", err)
	}
	if _, err := cases.Close(drafter, c.Token, "no suspicion after all"); err != nil {
		t.Fatalf("close after the rejection: %v", err)
	}
	var n int
	if err := m.env.App.DB.Get(&n, `SELECT count(*) FROM monitoring_reports WHERE case_token = $1 AND status = 'approved'`, c.Token); err != nil || n != 0 {
		t.Fatalf("%d approved reports (%v)", n, err)
	}
}
