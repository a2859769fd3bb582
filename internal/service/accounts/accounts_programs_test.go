package accounts_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/servicetest"
)

// programEnv is the accounts service on a fresh database with the sandbox
// programs, and an administrator.
type programEnv struct {
	db    *postgres.DB
	svc   *accounts.Accounts
	admin context.Context
}

func newProgramEnv(t *testing.T) *programEnv {
	t.Helper()
	// The application's own accounts service (built with all it needs),
	// on a fresh database.
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	db, svc := env.App.DB, env.App.Accounts
	if _, err := svc.SeedSandbox(servicetest.Sys()); err != nil {
		t.Fatal(err)
	}
	return &programEnv{db: db, svc: svc, admin: programStaff("11111111-1111-4111-8111-111111111111", emi.RoleAdmin)}
}

// programStaff is a context with a staff principal holding role.
func programStaff(id string, role emi.Role) context.Context {
	return servicetest.As(emi.StaffUser{ID: id, Roles: []emi.Role{role}})
}

// program reads a program as the administrator sees it.
func (e *programEnv) program(t *testing.T, code string) emi.Program {
	t.Helper()
	list, err := e.svc.Programs(e.admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		if p.Code == code {
			return p
		}
	}
	t.Fatalf("no program %s", code)
	return emi.Program{}
}

// programAudit is a program audit row with its changes decoded.
type programAudit struct {
	Action, ResourceType, ResourceToken, ActorID string
	Changes                                      map[string]any
}

func (e *programEnv) audits(t *testing.T) []programAudit {
	t.Helper()
	var rows []struct {
		Action        string `db:"action"`
		ResourceType  string `db:"resource_type"`
		ResourceToken string `db:"resource_token"`
		ActorID       string `db:"actor_id"`
		Changes       []byte `db:"changes"`
	}
	if err := e.db.Select(&rows, `SELECT action, resource_type, resource_token, actor_id, changes FROM audit_log
		WHERE action LIKE 'program.%' ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	out := make([]programAudit, len(rows))
	for i, r := range rows {
		out[i] = programAudit{Action: r.Action, ResourceType: r.ResourceType, ResourceToken: r.ResourceToken, ActorID: r.ActorID}
		if err := json.Unmarshal(r.Changes, &out[i].Changes); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// openAccountOn inserts an account of a new partner on the program.
func (e *programEnv) openAccountOn(t *testing.T, program string) {
	t.Helper()
	partner, merchant, account := kernel.NewToken(), kernel.NewToken(), kernel.NewToken()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO partners (id, name, master_merchant) VALUES ($1, 'Lock Partner', $2)`, []any{partner, merchant}},
		{`INSERT INTO merchants (token, partner_id, kind) VALUES ($1, $2, 'master')`, []any{merchant, partner}},
		{`INSERT INTO accounts (token, partner_id, program, merchant) VALUES ($1, $2, $3, $4)`, []any{account, partner, program, merchant}},
	} {
		if _, err := e.db.Exec(q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
}

// newPartner inserts a partner and returns its id.
func (e *programEnv) newPartner(t *testing.T, name string) string {
	t.Helper()
	id := kernel.NewToken()
	if _, err := e.db.Exec(`INSERT INTO partners (id, name, master_merchant) VALUES ($1, $2, $3)`, id, name, kernel.NewToken()); err != nil {
		t.Fatal(err)
	}
	return id
}

func newProgramInput() emi.ProgramInput {
	return emi.ProgramInput{Code: "gold_eur", Name: "Gold EUR", Currencies: []string{"EUR", "GBP"}, CardsAllowed: true,
		CardTypes: []string{"virtual"}, BINPrefix: "539994", CardValidityMonths: 24, AMLRequired: true,
		Groups:   map[string][]string{"usage": {"usage_gold"}, "limits": {"limits_gold", "limits_std"}},
		Defaults: map[string]string{"limits": "limits_gold"}}
}

func TestProgramManagementIsForAdministrators(t *testing.T) {
	t.Parallel()
	e := newProgramEnv(t)
	eur := e.program(t, "account_eur")
	for _, role := range []emi.Role{emi.RoleCustomerService, emi.RoleAuditor, emi.RoleUnderwriter, emi.RoleCompliance} {
		t.Run(string(role)+" may not create or edit a program", func(t *testing.T) {
			ctx := programStaff("22222222-2222-4222-8222-222222222222", role)
			if _, err := e.svc.CreateProgram(ctx, newProgramInput()); !errors.Is(err, emi.ErrForbidden) {
				t.Fatalf("create: %v, want %v", err, emi.ErrForbidden)
			}
			in := eur.Input()
			in.Name = "Taken over"
			if _, err := e.svc.UpdateProgram(ctx, eur.Code, in); !errors.Is(err, emi.ErrForbidden) {
				t.Fatalf("update: %v, want %v", err, emi.ErrForbidden)
			}
		})
	}
	if got := e.program(t, "account_eur"); got.Name != eur.Name || !got.UpdatedAt.Equal(eur.UpdatedAt) {
		t.Fatalf("the program changed: %+v", got)
	}
	if n := len(e.audits(t)); n != 0 {
		t.Fatalf("%d audit rows", n)
	}
	if !emi.Can([]emi.Role{emi.RoleAdmin}, emi.PermManagePrograms) {
		t.Fatal("administrators may not manage programs")
	}
}

func TestCreateProgramStoresItAndAuditsEverySetting(t *testing.T) {
	t.Parallel()
	e := newProgramEnv(t)
	pt := e.newPartner(t, "Gold Partner")
	in := newProgramInput()
	in.Code, in.Name, in.AllowedPartners = " gold_eur ", "  Gold EUR ", []string{strings.ToUpper(pt)}
	p, err := e.svc.CreateProgram(e.admin, in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Code != "gold_eur" || p.Name != "Gold EUR" || !slices.Equal(p.Currencies, []string{"EUR", "GBP"}) ||
		!slices.Equal(p.Schemes, []string{emi.SchemeIBANBG, emi.SchemeUK}) || !p.CardsAllowed || p.BINPrefix != "539994" ||
		p.CardValidityMonths != 24 || !p.AMLRequired || p.Overdraft || !slices.Equal(p.AllowedPartners, []string{pt}) ||
		p.Defaults["limits"] != "limits_gold" || len(p.Groups["limits"]) != 2 || p.UpdatedAt.IsZero() {
		t.Fatalf("created %+v", p)
	}
	if !p.UsableBy(pt) || p.UsableBy(kernel.NewToken()) {
		t.Fatal("allowed partners not applied")
	}
	rows := e.audits(t)
	if len(rows) != 1 {
		t.Fatalf("%d audit rows, want 1", len(rows))
	}
	r := rows[0]
	if r.Action != "program.create" || r.ResourceType != "program" || r.ResourceToken != "gold_eur" || r.ActorID != "11111111-1111-4111-8111-111111111111" {
		t.Fatalf("audit row %+v", r)
	}
	for field, want := range map[string]any{"name": "Gold EUR", "bin_prefix": "539994", "card_validity_months": 24.0,
		"defaults.limits": "limits_gold", "currencies": []any{"EUR", "GBP"}, "allowed_partners": []any{pt}} {
		c, _ := r.Changes[field].(map[string]any)
		if c == nil || c["from"] != nil || !reflect.DeepEqual(c["to"], want) {
			t.Errorf("changes[%s] = %v, want from null to %v", field, r.Changes[field], want)
		}
	}
	if _, ok := r.Changes["overdraft"]; ok {
		t.Error("an unset setting is recorded")
	}

	t.Run("the code of an existing program is refused", func(t *testing.T) {
		_, err := e.svc.CreateProgram(e.admin, newProgramInput())
		if !errors.Is(err, emi.ErrProgramValidation) || !servicetest.HasField(err, "code") {
			t.Fatalf("%v, want a field error on code", err)
		}
	})
}

func TestProgramSettingsAreValidated(t *testing.T) {
	t.Parallel()
	e := newProgramEnv(t)
	cases := []struct {
		name   string
		change func(*emi.ProgramInput)
		field  string
	}{
		{"an empty name", func(in *emi.ProgramInput) { in.Name = "  " }, "name"},
		{"a name over 200 characters", func(in *emi.ProgramInput) { in.Name = strings.Repeat("n", 201) }, "name"},
		{"no currency", func(in *emi.ProgramInput) { in.Currencies = nil }, "currencies"},
		{"a currency emi does not hold", func(in *emi.ProgramInput) { in.Currencies = []string{"USD"} }, "currencies[0]"},
		{"a currency twice", func(in *emi.ProgramInput) { in.Currencies = []string{"EUR", "EUR"} }, "currencies"},
		{"an unknown card type", func(in *emi.ProgramInput) { in.CardTypes = []string{"metal"} }, "card_types[0]"},
		{"a card type twice", func(in *emi.ProgramInput) { in.CardTypes = []string{"virtual", "virtual"} }, "card_types"},
		{"cards allowed without a card type", func(in *emi.ProgramInput) { in.CardsAllowed, in.CardTypes = true, nil }, "card_types"},
		{"cards allowed without a BIN prefix", func(in *emi.ProgramInput) { in.CardsAllowed, in.BINPrefix = true, "" }, "bin_prefix"},
		{"a BIN prefix of 5 digits", func(in *emi.ProgramInput) { in.BINPrefix = "53999" }, "bin_prefix"},
		{"a BIN prefix of 9 digits", func(in *emi.ProgramInput) { in.BINPrefix = "539994011" }, "bin_prefix"},
		{"a BIN prefix with letters", func(in *emi.ProgramInput) { in.BINPrefix = "53999A" }, "bin_prefix"},
		{"a card validity of 0 months", func(in *emi.ProgramInput) { in.CardValidityMonths = 0 }, "card_validity_months"},
		{"a card validity of 121 months", func(in *emi.ProgramInput) { in.CardValidityMonths = 121 }, "card_validity_months"},
		{"a partner that does not exist", func(in *emi.ProgramInput) { in.AllowedPartners = []string{kernel.NewToken()} }, "allowed_partners"},
		{"a partner that is not a token", func(in *emi.ProgramInput) { in.AllowedPartners = []string{"acme"} }, "allowed_partners[0]"},
		{"an unknown group kind", func(in *emi.ProgramInput) { in.Groups = map[string][]string{"colour": {"red"}} }, "groups"},
		{"a malformed group code", func(in *emi.ProgramInput) { in.Groups = map[string][]string{"usage": {"Usage-Std"}} }, "groups.usage"},
		{"a group code over 40 characters", func(in *emi.ProgramInput) {
			in.Groups = map[string][]string{"usage": {strings.Repeat("u", 41)}}
		}, "groups.usage"},
		{"a group code twice", func(in *emi.ProgramInput) { in.Groups = map[string][]string{"mcc": {"mcc_std", "mcc_std"}} }, "groups.mcc"},
		{"a default that is not one of its kind's codes", func(in *emi.ProgramInput) { in.Defaults = map[string]string{"limits": "limits_vip"} }, "defaults.limits"},
		{"a default of a kind without codes", func(in *emi.ProgramInput) { in.Defaults = map[string]string{"linkage": "link_std"} }, "defaults.linkage"},
		{"a default of an unknown kind", func(in *emi.ProgramInput) { in.Defaults = map[string]string{"colour": "red"} }, "defaults"},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			cur := e.program(t, "account_eur")
			in := cur.Input()
			tc.change(&in)
			_, err := e.svc.UpdateProgram(e.admin, "account_eur", in)
			if !errors.Is(err, emi.ErrProgramValidation) || !servicetest.HasField(err, tc.field) {
				t.Fatalf("update: %v, want %v with a field error on %s", err, emi.ErrProgramValidation, tc.field)
			}
			create := newProgramInput()
			tc.change(&create)
			if _, err := e.svc.CreateProgram(e.admin, create); !errors.Is(err, emi.ErrProgramValidation) || !servicetest.HasField(err, tc.field) {
				t.Fatalf("create: %v, want %v with a field error on %s", err, emi.ErrProgramValidation, tc.field)
			}
			if got := e.program(t, "account_eur"); !got.UpdatedAt.Equal(cur.UpdatedAt) {
				t.Fatal("the refused update changed the program")
			}
		})
	}
	for _, code := range []string{"", "x", "Gold", "gold-eur", strings.Repeat("g", 41)} {
		t.Run("the code "+code+" is refused", func(t *testing.T) {
			in := newProgramInput()
			in.Code = code
			if _, err := e.svc.CreateProgram(e.admin, in); !errors.Is(err, emi.ErrProgramValidation) || !servicetest.HasField(err, "code") {
				t.Fatalf("%v, want a field error on code", err)
			}
		})
	}
	if n := len(e.audits(t)); n != 0 {
		t.Fatalf("refused changes wrote %d audit rows", n)
	}
	var n int
	if err := e.db.Get(&n, `SELECT count(*) FROM programs`); err != nil || n != len(accounts.SandboxPrograms()) {
		t.Fatalf("%d programs (%v), want only the sandbox ones", n, err)
	}
}

func TestUpdateProgramAuditsTheChangedSettingsFromOldToNew(t *testing.T) {
	t.Parallel()
	e := newProgramEnv(t)
	cur := e.program(t, "account_eur")
	pt := e.newPartner(t, "Only Partner")
	in := cur.Input()
	in.Name = "EUR account (2026)"
	in.Defaults["limits"] = "limits_high"
	in.Groups["mcc"] = nil // removed: cards keep their codes
	delete(in.Defaults, "mcc")
	in.Groups["whitelist"] = []string{"wl_travel"}
	in.CardTypes = []string{"plastic"}
	in.AllowedPartners = []string{pt}
	in.CardValidityMonths = 24
	p, err := e.svc.UpdateProgram(e.admin, "account_eur", in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "EUR account (2026)" || p.Defaults["limits"] != "limits_high" || len(p.Groups["mcc"]) != 0 ||
		p.Defaults["mcc"] != "" || !slices.Equal(p.Groups["whitelist"], []string{"wl_travel"}) || p.CardValidityMonths != 24 ||
		!slices.Equal(p.CardTypes, []string{"plastic"}) || !slices.Equal(p.AllowedPartners, []string{pt}) || !p.UpdatedAt.After(cur.UpdatedAt) {
		t.Fatalf("updated %+v", p)
	}
	if got := e.program(t, "account_eur"); !reflect.DeepEqual(got, p) {
		t.Fatalf("stored %+v, returned %+v", got, p)
	}
	rows := e.audits(t)
	if len(rows) != 1 || rows[0].Action != "program.update" || rows[0].ResourceType != "program" || rows[0].ResourceToken != "account_eur" {
		t.Fatalf("audit rows %+v", rows)
	}
	want := map[string]any{
		"name":                 map[string]any{"from": "EUR account", "to": "EUR account (2026)"},
		"defaults.limits":      map[string]any{"from": "limits_std", "to": "limits_high"},
		"groups.mcc":           map[string]any{"from": []any{"mcc_std"}, "to": []any{}},
		"defaults.mcc":         map[string]any{"from": "mcc_std", "to": ""},
		"groups.whitelist":     map[string]any{"from": []any{}, "to": []any{"wl_travel"}},
		"card_types":           map[string]any{"from": []any{"plastic", "virtual"}, "to": []any{"plastic"}},
		"allowed_partners":     map[string]any{"from": "all", "to": []any{pt}},
		"card_validity_months": map[string]any{"from": float64(cur.CardValidityMonths), "to": float64(24)},
	}
	if !reflect.DeepEqual(rows[0].Changes, want) {
		t.Fatalf("changes\n%v\nwant\n%v", rows[0].Changes, want)
	}

	t.Run("saving unchanged settings changes and records nothing", func(t *testing.T) {
		again, err := e.svc.UpdateProgram(e.admin, "account_eur", p.Input())
		if err != nil {
			t.Fatal(err)
		}
		if !again.UpdatedAt.Equal(p.UpdatedAt) || len(e.audits(t)) != 1 {
			t.Fatalf("an unchanged save moved the version (%v -> %v) or was audited", p.UpdatedAt, again.UpdatedAt)
		}
	})
	t.Run("an unknown program is not found", func(t *testing.T) {
		if _, err := e.svc.UpdateProgram(e.admin, "no_such_program", p.Input()); !errors.Is(err, emi.ErrProgramNotFound) {
			t.Fatalf("%v, want %v", err, emi.ErrProgramNotFound)
		}
	})
}

func TestProgramCurrenciesAreLockedOnceAnAccountUsesIt(t *testing.T) {
	t.Parallel()
	e := newProgramEnv(t)

	// Unused: the currencies change, and the schemes follow them.
	in := e.program(t, "account_bgn").Input()
	in.Currencies = []string{"GBP", "BGN"}
	p, err := e.svc.UpdateProgram(e.admin, "account_bgn", in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Schemes, []string{emi.SchemeUK, emi.SchemeIBANBG}) {
		t.Fatalf("schemes %v", p.Schemes)
	}
	if inUse, err := e.svc.ProgramsInUse(e.admin); err != nil || inUse["account_bgn"] {
		t.Fatalf("in use %v %v", inUse, err)
	}

	e.openAccountOn(t, "account_bgn")
	if inUse, err := e.svc.ProgramsInUse(e.admin); err != nil || !inUse["account_bgn"] || inUse["account_eur"] {
		t.Fatalf("in use %v %v", inUse, err)
	}
	for _, cur := range [][]string{{"BGN"}, {"BGN", "GBP"}, {"GBP", "BGN", "EUR"}} {
		t.Run("changing them to "+strings.Join(cur, ",")+" is refused", func(t *testing.T) {
			in := p.Input()
			in.Currencies = cur
			_, err := e.svc.UpdateProgram(e.admin, "account_bgn", in)
			if !errors.Is(err, emi.ErrProgramValidation) || !servicetest.HasField(err, "currencies") {
				t.Fatalf("%v, want a field error on currencies", err)
			}
			if !strings.Contains(emi.AsError(err).Fields[0].Message, "accounts use this program") {
				t.Fatalf("message %q", emi.AsError(err).Fields[0].Message)
			}
		})
	}
	t.Run("the other settings still change", func(t *testing.T) {
		in := p.Input()
		in.Name = "GBP and BGN account"
		got, err := e.svc.UpdateProgram(e.admin, "account_bgn", in)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "GBP and BGN account" || !slices.Equal(got.Currencies, []string{"GBP", "BGN"}) || !slices.Equal(got.Schemes, p.Schemes) {
			t.Fatalf("updated %+v", got)
		}
	})
}

func TestStaleProgramUpdateIsRefused(t *testing.T) {
	t.Parallel()
	e := newProgramEnv(t)
	other := programStaff("33333333-3333-4333-8333-333333333333", emi.RoleAdmin)
	loaded := e.program(t, "account_gbp")

	mine := loaded.Input()
	mine.Name = "GBP account (mine)"
	if _, err := e.svc.UpdateProgram(e.admin, "account_gbp", mine); err != nil {
		t.Fatal(err)
	}
	theirs := loaded.Input()
	theirs.Defaults["limits"] = "limits_high"
	if _, err := e.svc.UpdateProgram(other, "account_gbp", theirs); !errors.Is(err, emi.ErrProgramStale) {
		t.Fatalf("%v, want %v", err, emi.ErrProgramStale)
	}
	got := e.program(t, "account_gbp")
	if got.Name != "GBP account (mine)" || got.Defaults["limits"] != "limits_std" {
		t.Fatalf("stored %+v", got)
	}
	if n := len(e.audits(t)); n != 1 {
		t.Fatalf("%d audit rows, want 1", n)
	}
	t.Run("an edit without a version is stale", func(t *testing.T) {
		in := got.Input()
		in.Version = time.Time{}
		in.Name = "No version"
		if _, err := e.svc.UpdateProgram(e.admin, "account_gbp", in); !errors.Is(err, emi.ErrProgramStale) {
			t.Fatalf("%v, want %v", err, emi.ErrProgramStale)
		}
	})

	t.Run("of two saves at once on the same version, one wins", func(t *testing.T) {
		base := e.program(t, "account_gbp")
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := base.Input()
				in.Name = "Racer " + string(rune('A'+i))
				_, errs[i] = e.svc.UpdateProgram(e.admin, "account_gbp", in)
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, emi.ErrProgramStale):
				t.Fatalf("unexpected %v", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d saves succeeded, want 1", ok)
		}
		if n := len(e.audits(t)); n != 2 {
			t.Fatalf("%d audit rows, want 2", n)
		}
	})
}

// PIN by SMS and mobile wallets are saved like the other settings. Before,
// the store's update left both columns as they were: the page said
// "saved", the audit log recorded the change, and nothing changed.
func TestUpdateProgramSavesPINBySMSAndWallets(t *testing.T) {
	t.Parallel()
	e := newProgramEnv(t)
	cur := e.program(t, "account_eur")
	in := cur.Input()
	in.PINBySMS, in.WalletProvisioning = !cur.PINBySMS, !cur.WalletProvisioning
	if _, err := e.svc.UpdateProgram(e.admin, "account_eur", in); err != nil {
		t.Fatal(err)
	}
	if got := e.program(t, "account_eur"); got.PINBySMS == cur.PINBySMS || got.WalletProvisioning == cur.WalletProvisioning {
		t.Fatalf("stored pin_by_sms %v wallet %v, from %v %v", got.PINBySMS, got.WalletProvisioning, cur.PINBySMS, cur.WalletProvisioning)
	}
}
