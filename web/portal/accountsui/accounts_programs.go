package accountsui

import (
	"emi/web/portal/frame"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/partners"
	"emi/views/accountsview"
	"emi/views/components"
)

// The programs screen: every program's settings for the roles that see
// accounts, and for administrators (accounts.ManagePrograms) a form per
// program and one for a new program. The rules (what may change, the
// version check, the audit row) live in service.Accounts' CreateProgram
// and UpdateProgram.

// programState is a refused save: which form ("new" or the program's
// code), what was sent, and the service's messages. saved shows the
// program as saved instead of what was sent (a stale edit).
type programState struct {
	which   string
	in      emi.ProgramInput
	errs    map[string]string
	general []string
	saved   bool
}

// programAction is where a program's edit form posts.
func programAction(code string) string { return "/backoffice/programs/" + url.PathEscape(code) }

// renderPrograms renders the programs screen; st is a refused form, shown
// open with its input and errors.
func (p *Pages) renderPrograms(w http.ResponseWriter, r *http.Request, status int, st *programState) {
	ctx := r.Context()
	list, err := p.accounts.Programs(ctx)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := accountsview.ProgramsView{CanManage: frame.CanDo(r, accounts.ManagePrograms)}
	var inUse map[string]bool
	var partnerList []emi.Partner
	if v.CanManage {
		if inUse, err = p.accounts.ProgramsInUse(ctx); err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		if frame.CanDo(r, partners.View) {
			if partnerList, err = p.partners.List(ctx); err != nil {
				p.frame.RenderError(w, r, err)
				return
			}
		}
		form := programForm(emi.ProgramInput{CardValidityMonths: 36}, true, false, partnerList)
		if st != nil && st.which == "new" {
			form = programForm(st.in, true, false, partnerList)
			form.Open, form.Errors, form.General = true, st.errs, st.general
		}
		v.New = &form
	}
	names := p.frame.PartnerNames(r)
	pending, err := p.accounts.ProgramChanges(ctx)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	for _, pr := range list {
		row := programView(pr, names)
		if c, ok := pending[pr.Code]; ok {
			row.Pending = p.pendingProgramChange(r, pr, c, names)
		}
		if frame.CanDo(r, kernel.ViewAudit) {
			row.AuditHref = "/backoffice/audit?resource_type=program&resource_token=" + url.QueryEscape(pr.Code)
		}
		if v.CanManage {
			in := pr.Input()
			refused := st != nil && st.which == pr.Code
			if refused && !st.saved {
				in = st.in // with the version it was loaded at
			}
			form := programForm(in, false, inUse[pr.Code], partnerList)
			form.Action = programAction(pr.Code)
			form.TestID = "edit-program-form-" + pr.Code
			if inUse[pr.Code] {
				form.LockedCurrencies = pr.Currencies
			}
			if refused {
				form.Open, form.Errors, form.General = true, st.errs, st.general
			}
			row.Edit = &form
		}
		v.Rows = append(v.Rows, row)
	}
	p.frame.Render(w, r, status, "Programs", accountsview.Programs(v))
}

// programView lays out a program's settings.
func programView(pr emi.Program, names frame.PartnerNameMap) accountsview.ProgramView {
	yes := map[bool]string{true: "yes", false: "no"}
	v := accountsview.ProgramView{Code: pr.Code, Name: pr.Name}
	for j, c := range pr.Currencies {
		scheme := ""
		if j < len(pr.Schemes) {
			scheme = frame.FirstNonEmpty(schemeLabels[pr.Schemes[j]], pr.Schemes[j])
		}
		v.Currencies = append(v.Currencies, accountsview.Ident{Label: c, Value: scheme})
	}
	cards := yes[pr.CardsAllowed]
	if pr.CardsAllowed && len(pr.CardTypes) > 0 {
		cards += ": " + strings.Join(pr.CardTypes, ", ")
	}
	partners := "every partner"
	if pr.AllowedPartners != nil {
		var ns []string
		for _, id := range pr.AllowedPartners {
			ns = append(ns, names.Name(id))
		}
		partners = frame.FirstNonEmpty(strings.Join(ns, ", "), "none")
	}
	validity := ""
	if pr.CardsAllowed && pr.CardValidityMonths > 0 {
		validity = strconv.Itoa(pr.CardValidityMonths) + " months"
	}
	v.Details = []components.KV{
		{Label: "Cards", Value: cards},
		{Label: "BIN prefix", Value: pr.BINPrefix, Mono: true},
		{Label: "Card validity", Value: validity},
		{Label: "AML check required for cards", Value: yes[pr.AMLRequired]},
		{Label: "Overdraft", Value: yes[pr.Overdraft]},
		{Label: "PIN by SMS", Value: yes[pr.PINBySMS]},
		{Label: "Mobile wallets (push provisioning)", Value: yes[pr.WalletProvisioning]},
		{Label: "Partners", Value: partners},
	}
	for _, kind := range emi.GroupKinds {
		g := accountsview.GroupKind{Kind: strings.ReplaceAll(kind, "_", " ")}
		for _, c := range pr.Groups[kind] {
			g.Codes = append(g.Codes, accountsview.GroupCode{Code: c, Default: pr.Defaults[kind] == c})
		}
		v.Groups = append(v.Groups, g)
	}
	return v
}

// programForm fills a program form from in; partners are the partners
// to choose from (every partner named by in is offered).
func programForm(in emi.ProgramInput, isNew, locked bool, partners []emi.Partner) accountsview.ProgramForm {
	f := accountsview.ProgramForm{Action: "/backoffice/programs", New: isNew, TestID: "new-program-form", Code: in.Code, Name: in.Name,
		Locked: locked, CardsAllowed: in.CardsAllowed, BINPrefix: in.BINPrefix, AMLRequired: in.AMLRequired,
		Overdraft: in.Overdraft, PINBySMS: in.PINBySMS, WalletProvisioning: in.WalletProvisioning, AllPartners: in.AllowedPartners == nil}
	if in.CardValidityMonths != 0 {
		f.Validity = strconv.Itoa(in.CardValidityMonths)
	}
	if !in.Version.IsZero() {
		f.Version = in.Version.UTC().Format(time.RFC3339Nano)
	}
	for _, c := range emi.ProgramCurrencies {
		f.Currencies = append(f.Currencies, components.Option{Value: c, Label: c, Selected: slices.Contains(in.Currencies, c)})
	}
	for _, t := range emi.ProgramCardTypes {
		f.CardTypes = append(f.CardTypes, components.Option{Value: t, Label: t, Selected: slices.Contains(in.CardTypes, t)})
	}
	offered := map[string]bool{}
	for _, pt := range partners {
		offered[pt.ID] = true
		f.Partners = append(f.Partners, components.Option{Value: pt.ID, Label: pt.Name, Selected: slices.Contains(in.AllowedPartners, pt.ID)})
	}
	for _, id := range in.AllowedPartners {
		if !offered[id] {
			f.Partners = append(f.Partners, components.Option{Value: id, Label: id, Selected: true})
		}
	}
	for _, kind := range emi.GroupKinds {
		label := strings.ToUpper(kind[:1]) + strings.ReplaceAll(kind[1:], "_", " ")
		if kind == "mcc" {
			label = "MCC"
		}
		f.Groups = append(f.Groups, accountsview.GroupInput{Kind: kind, Label: label, Codes: strings.Join(in.Groups[kind], ", "),
			Default: in.Defaults[kind]})
	}
	return f
}

// programFromForm reads a program form.
func programFromForm(r *http.Request) emi.ProgramInput {
	_ = r.ParseForm()
	f := r.PostForm
	in := emi.ProgramInput{Code: f.Get("code"), Name: f.Get("name"), Currencies: f["currencies"],
		CardsAllowed: f.Get("cards_allowed") == "true", CardTypes: f["card_types"], BINPrefix: f.Get("bin_prefix"),
		AMLRequired: f.Get("aml_required") == "true", Overdraft: f.Get("overdraft") == "true",
		PINBySMS: f.Get("pin_by_sms") == "true", WalletProvisioning: f.Get("wallet_provisioning") == "true",
		Groups: map[string][]string{}, Defaults: map[string]string{}}
	in.CardValidityMonths, _ = strconv.Atoi(strings.TrimSpace(f.Get("card_validity_months")))
	if f.Get("partner_scope") == "listed" {
		in.AllowedPartners = append([]string{}, f["allowed_partners"]...)
	}
	for _, kind := range emi.GroupKinds {
		if codes := frame.FieldList(f.Get("groups." + kind)); len(codes) > 0 {
			in.Groups[kind] = codes
		}
		if d := strings.TrimSpace(f.Get("defaults." + kind)); d != "" {
			in.Defaults[kind] = d
		}
	}
	in.Version, _ = time.Parse(time.RFC3339Nano, f.Get("version"))
	return in
}

// programInputs are the names of a program form's inputs that show
// messages.
func programInputs() map[string]bool {
	m := map[string]bool{"code": true, "name": true, "currencies": true, "cards_allowed": true, "card_types": true,
		"bin_prefix": true, "card_validity_months": true, "allowed_partners": true, "groups": true, "defaults": true}
	for _, kind := range emi.GroupKinds {
		m["groups."+kind], m["defaults."+kind] = true, true
	}
	return m
}

// programErrors puts the service's field messages beside their inputs
// (currencies[1] beside currencies); the others are listed above the form.
func programErrors(e *emi.Error) (map[string]string, []string) {
	inputs := programInputs()
	errs, general := map[string]string{}, []string{}
	for _, f := range e.Fields {
		name := f.Field
		if i := strings.IndexByte(name, '['); i > 0 {
			name = name[:i]
		}
		switch {
		case inputs[name]:
			if prev, ok := errs[name]; ok {
				if !strings.Contains(prev, f.Message) {
					errs[name] = prev + "; " + f.Message
				}
			} else {
				errs[name] = f.Message
			}
		case name == "":
			general = append(general, f.Message)
		default:
			general = append(general, f.Field+": "+f.Message)
		}
	}
	if len(errs) == 0 && len(general) == 0 {
		general = append(general, frame.Message(e))
	}
	return errs, general
}

// programRefused answers a refused save: the form again, open, with the
// messages (422), or with the program as saved now when a colleague saved
// it meanwhile (409).
func (p *Pages) programRefused(w http.ResponseWriter, r *http.Request, err error, which string, in emi.ProgramInput) {
	e := emi.AsError(err)
	switch {
	case frame.ErrorIs(err, emi.ErrProgramStale):
		p.frame.Flash(r.Context(), "bad", frame.Message(e))
		p.renderPrograms(w, r, http.StatusConflict, &programState{which: which, saved: true, general: []string{frame.Message(e)}})
	case e.Kind == emi.KindInvalid:
		errs, general := programErrors(e)
		p.frame.Flash(r.Context(), "bad", frame.Message(e))
		p.renderPrograms(w, r, http.StatusUnprocessableEntity, &programState{which: which, in: in, errs: errs, general: general})
	default:
		p.frame.RenderError(w, r, err)
	}
}

// programCreate (POST /programs) adds a program.
func (p *Pages) programCreate(w http.ResponseWriter, r *http.Request) {
	in := programFromForm(r)
	pr, err := p.accounts.CreateProgram(r.Context(), in)
	if err != nil {
		p.programRefused(w, r, err, "new", in)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Program “"+pr.Name+"” ("+pr.Code+") created: partners allowed to use it can open accounts on it now.")
	frame.Redirect(w, r, frame.ProgramHref(pr.Code))
}

// programUpdate (POST /programs/{program}) saves a program's settings.
func (p *Pages) programUpdate(w http.ResponseWriter, r *http.Request) {
	code := frame.Param(r, "program")
	in := programFromForm(r)
	pr, err := p.accounts.UpdateProgram(r.Context(), code, in)
	if err != nil {
		p.programRefused(w, r, err, code, in)
		return
	}
	if pr.Pending != nil {
		p.frame.Flash(r.Context(), "info", "The change moves risk ("+pr.Pending.Risk+"): it is proposed, not applied. A second administrator approves or rejects it on this page.")
	} else if pr.UpdatedAt.Equal(in.Version) {
		p.frame.Flash(r.Context(), "info", "No setting of “"+pr.Name+"” changed: nothing was saved.")
	} else {
		p.frame.Flash(r.Context(), "ok", "Program “"+pr.Name+"” saved. The change is in the audit log.")
	}
	frame.Redirect(w, r, frame.ProgramHref(pr.Code))
}

// pendingProgramChange lays out a proposal: what it changes and what the
// reader may do with it, as the decision engine answers (another
// administrator approves or rejects; the proposer withdraws).
func (p *Pages) pendingProgramChange(r *http.Request, cur emi.Program, c accounts.PendingProgramChange, names frame.PartnerNameMap) *accountsview.PendingProgramChange {
	v := &accountsview.PendingProgramChange{Risk: c.Risk, ProposedBy: frame.Who(r, c.ProposedBy, p.frame.StaffNames(r)[c.ProposedBy]), ProposedAt: frame.FmtTime(c.ProposedAt),
		Action: programAction(cur.Code) + "/change"}
	after := programView(accounts.ProgramAfter(cur, c.Input), names)
	before := programView(cur, names)
	for i, kv := range after.Details {
		if i < len(before.Details) && before.Details[i].Value != kv.Value {
			v.Changes = append(v.Changes, components.KV{Label: kv.Label, Value: before.Details[i].Value + " → " + kv.Value})
		}
	}
	v.CanApprove, v.CanReject, v.WhyNot = c.Can.Approve, c.Can.Reject || c.Can.Withdraw, c.Can.WhyNotApprove
	v.Seen = "?request=" + url.QueryEscape(c.Request)
	return v
}

// programChangeApprove (POST /programs/{program}/change/approve) applies
// a proposal as its second administrator.
func (p *Pages) programChangeApprove(w http.ResponseWriter, r *http.Request) {
	code := frame.Param(r, "program")
	pr, err := p.accounts.ApproveProgramChange(r.Context(), code, r.URL.Query().Get("request"))
	if err != nil {
		p.programDecisionRefused(w, r, code, err)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Change of “"+pr.Name+"” approved and applied. Both administrators are in the audit log.")
	frame.Redirect(w, r, frame.ProgramHref(pr.Code))
}

// programChangeReject (POST /programs/{program}/change/reject) drops a
// proposal.
func (p *Pages) programChangeReject(w http.ResponseWriter, r *http.Request) {
	code := frame.Param(r, "program")
	if err := p.accounts.RejectProgramChange(r.Context(), code, r.URL.Query().Get("request")); err != nil {
		p.programDecisionRefused(w, r, code, err)
		return
	}
	p.frame.Flash(r.Context(), "ok", "The proposed change was rejected; the program is unchanged.")
	frame.Redirect(w, r, frame.ProgramHref(code))
}

// programDecisionRefused shows a refused approval or rejection as a flash
// on the programs page (rule errors), the error page otherwise: both are
// buttons, nothing typed (a refused program form keeps what was typed:
// programRefused).
func (p *Pages) programDecisionRefused(w http.ResponseWriter, r *http.Request, code string, err error) {
	e := emi.AsError(err)
	switch e.Kind {
	case emi.KindConflict, emi.KindInvalid:
		p.frame.Flash(r.Context(), "error", frame.Message(e))
		frame.Redirect(w, r, frame.ProgramHref(code))
	default:
		p.frame.RenderError(w, r, err)
	}
}

// schemeLabels name the identifier schemes of a program's balances.
var schemeLabels = map[string]string{
	emi.SchemeIBANBG: "Bulgarian IBAN and BIC",
	emi.SchemeUK:     "UK sort code and account number, GB IBAN and BIC",
}

// programs (GET /programs) lists the programs, with the forms that
// create and edit them for administrators (accounts_programs.go).
func (p *Pages) programs(w http.ResponseWriter, r *http.Request) {
	p.renderPrograms(w, r, http.StatusOK, nil)
}
