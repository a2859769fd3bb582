package browser_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/goaml"
	"emi/internal/service/kernel"
)

// alertedCustomer books a history for a fully identified person (a large
// credit sent on within a day) and returns the person and the alert the
// rules raised.
func alertedCustomer(t *testing.T, env *apptest.Env) (user, alert string) {
	t.Helper()
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Monitored Partner"})
	ctx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: p.KeyID, PartnerID: p.ID,
		MasterMerchant: p.Merchant})
	in := emi.UserCreate{Email: kernel.NewToken() + "@example.com"}
	in.FirstName, in.LastName = "Ivana", "Petrova"
	in.Birthday, in.UniqueIdentifier, in.Nationality, in.Country = "1985-03-14", "8503146523", "BG", "BG"
	in.Occupation, in.MobilePhone, in.IDPassportNumber, in.CountryIssuingIDCard = "Engineer", "+359888123456", "382914756", "BG"
	u, err := env.App.Users.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	a, err := env.App.Accounts.Create(ctx, emi.AccountCreate{Program: "account_eur", User: u.Token})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-48 * time.Hour).Format(time.RFC3339)
	history := `{"ref":"in","at":"` + at + `","kind":"incoming","account":"` + a.Token + `","amount":"20000.00","currency":"EUR","counterparty":{"iban":"DE89370400440532013000","name":"Payer"}}` + "\n" +
		`{"ref":"out","at":"` + at + `","kind":"transfer_out","account":"` + a.Token + `","amount":"19000.00","currency":"EUR","counterparty":{"iban":"DE89370400440532013000","name":"Payee"}}` + "\n"
	if res, err := env.App.HistoryImport.Import(context.Background(), p.ID, strings.NewReader(history)); err != nil || res.Booked != 2 {
		t.Fatalf("import: %+v %v", res, err)
	}
	if _, err := env.App.Monitor.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := env.App.DB.Get(&alert, `SELECT token FROM monitoring_alerts WHERE subject_token = $1 AND status = 'open'`, u.Token); err != nil {
		t.Fatalf("no alert: %v", err)
	}
	return u.Token, alert
}

// TestKeyboardOnlyComplianceCaseToReport: a compliance officer, with the
// keyboard only, opens a case from a monitoring alert, asks the partner
// for information and writes the report's narrative; a second officer
// approves the report; the goAML file validates against the shipped
// schema.
func TestKeyboardOnlyComplianceCaseToReport(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const second = "second.officer@sandbox.emi.test"
	newStaffMember(t, env, second, "Second Officer", emi.RoleCompliance)
	_, alert := alertedCustomer(t, env)

	b := newTab(t, env)
	b.signIn(env, apptest.ComplianceEmail)
	b.open("/backoffice/monitoring/" + alert)
	b.tabTo(`[data-testid="case-open"] textarea[name="note"]`, 60)
	b.typeKeys("Large credit sent on within a day")
	b.do("Tab", chromedp.KeyEvent("\t"))
	b.keyNav("\r")
	if !strings.HasPrefix(b.path(), "/backoffice/monitoring/cases/") {
		t.Fatalf("opening a case landed on %s (flash %q)", b.path(), flashText(b))
	}
	caseToken := strings.TrimPrefix(b.path(), "/backoffice/monitoring/cases/")

	b.tabTo(`[data-testid="case-request-form"] textarea[name="question"]`, 120)
	b.typeKeys("Please describe where the 20,000.00 EUR received two days ago came from.")
	b.do("Tab", chromedp.KeyEvent("\t"))
	b.keyNav("\r")
	if f := flashText(b); !strings.Contains(f, "The partner was asked") {
		t.Fatalf("asking the partner: flash %q", f)
	}

	b.tabTo(`[data-testid="case-report-form"] textarea[name="narrative"]`, 150)
	b.typeKeys("The customer received 20,000.00 EUR and paid 19,000.00 EUR out the same day to one payee.")
	b.do("Tab", chromedp.KeyEvent("\t"))
	b.typeKeys("Relationship under review.")
	b.do("Tab", chromedp.KeyEvent("\t"))
	b.keyNav("\r")
	if f := flashText(b); !strings.Contains(f, "Report submitted") {
		t.Fatalf("submitting the report: flash %q", f)
	}
	if b.count(`[data-testid="case-report-approve"]`) != 0 {
		t.Fatal("the drafter is offered to approve their own report")
	}

	o := newTab(t, env)
	o.signIn(env, second)
	o.open("/backoffice/monitoring/cases/" + caseToken)
	o.tabTo(`[data-testid="case-report-approve"]`, 150)
	o.keyNav("\r")
	if f := flashText(o); !strings.Contains(f, "Report approved") {
		t.Fatalf("approving: flash %q", f)
	}
	if o.count(`[data-testid="case-report-download"]`) != 1 {
		t.Fatal("no download link for the approved report")
	}
	var xmlEnc int
	if err := env.App.DB.Get(&xmlEnc, `SELECT count(*) FROM monitoring_reports WHERE case_token = $1 AND status = 'approved'`, caseToken); err != nil || xmlEnc != 1 {
		t.Fatalf("approved reports: %d %v", xmlEnc, err)
	}
	officer := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: kernel.NewToken(),
		StaffRoles: []string{string(emi.RoleCompliance)}})
	_, file, err := env.App.Cases.ReportFile(officer, caseToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("xmllint"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint is required in CI (apt-get install libxml2-utils)")
		}
		t.Skip("xmllint not installed: the goAML schema validation is skipped")
	}
	dir := t.TempDir()
	xsd, doc := filepath.Join(dir, "goAMLSchema.xsd"), filepath.Join(dir, "report.xml")
	_ = os.WriteFile(xsd, goaml.Schema, 0o600)
	_ = os.WriteFile(doc, file, 0o600)
	if out, err := exec.Command("xmllint", "--noout", "--schema", xsd, doc).CombinedOutput(); err != nil {
		t.Fatalf("the report does not validate against goAML %s: %v\n%s", goaml.SchemaVersion, err, out)
	}
}
