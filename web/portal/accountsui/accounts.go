package accountsui

import (
	"emi/web/portal/frame"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/partners"
	"emi/internal/service/staff"
	"emi/views/accountsview"
	"emi/views/components"
	"emi/views/fragments"
)

// Customer service's account screens: the accounts search, an account's
// page (owner, program, balances and identifiers, virtual accounts, status
// history, audit trail) with block, unblock and four-eyes termination. Its
// statement is accounts_statement.go, its money section accounts_money.go,
// the programs screen accounts_programs.go. Rules (reasons, four-eyes,
// balances) live in service accounts; this file lays them out.

// accountsPerPage is service.Accounts.Search's page size.
const accountsPerPage = 50

// maxIdentifierLookups bounds the accounts of one list whose identifiers
// are looked up (the list query does not carry balances).
const maxIdentifierLookups = 50

// accountList (GET /accounts) searches accounts: token, IBAN, account
// number with or without sort code, owner name or e-mail; newest first,
// 50 a page.
func (p *Pages) accountList(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = min(max(page, 1), frame.MaxPage)
	sort := frame.ReadSort(r, "created", "desc", "program", "status", "created")
	v := accountsview.AccountsView{Q: q, Sort: sort.View(r)}
	list, total, err := p.accounts.Search(r.Context(), q, page, sort.Order())
	if err != nil {
		if emi.AsError(err).Kind != emi.KindInvalid {
			p.frame.RenderError(w, r, err)
			return
		}
		v.Errs, _ = frame.FieldErrors(err)
		p.frame.Render(w, r, http.StatusUnprocessableEntity, "Accounts", accountsview.Accounts(v))
		return
	}
	if v.Rows, err = p.accountRows(r, list); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	pagesN := max((total+accountsPerPage-1)/accountsPerPage, 1)
	v.Total, v.Page, v.Pages = strconv.FormatInt(total, 10)+" accounts", strconv.Itoa(page), strconv.FormatInt(pagesN, 10)
	if total == 1 {
		v.Total = "1 account"
	}
	link := func(n int) string {
		lq := url.Values{}
		if q != "" {
			lq.Set("q", q)
		}
		if r.URL.Query().Get("sort") != "" && sort.Err == "" {
			lq.Set("sort", sort.Key)
			lq.Set("dir", sort.Dir)
		}
		if n > 1 {
			lq.Set("page", strconv.Itoa(n))
		}
		if len(lq) == 0 {
			return "/backoffice/accounts"
		}
		return "/backoffice/accounts?" + lq.Encode()
	}
	if page > 1 {
		v.Prev = link(min(page-1, int(pagesN)))
	}
	if int64(page) < pagesN {
		v.Next = link(page + 1)
	}
	p.frame.RenderPrivate(w, r, sort.Status(), "Accounts", accountsview.Accounts(v))
}

// accountRows makes list rows; the identifiers and balances of the first
// maxIdentifierLookups accounts are read in one round trip.
func (p *Pages) accountRows(r *http.Request, list []emi.Account) ([]accountsview.AccountRow, error) {
	owners := p.frame.OwnerLinks(r)
	looked := make([]string, 0, min(len(list), maxIdentifierLookups))
	for _, a := range list[:min(len(list), maxIdentifierLookups)] {
		looked = append(looked, a.Token)
	}
	full, err := p.accounts.WithBalances(r.Context(), looked)
	if err != nil {
		return nil, err
	}
	rows := make([]accountsview.AccountRow, len(list))
	for i, a := range list {
		row := accountsview.AccountRow{Token: a.Token, Href: frame.AccountHref(a.Token), Owner: frame.FirstNonEmpty(a.OwnerName, "(no name)"),
			Program: a.Program, ProgramHref: frame.ProgramHref(a.Program), Status: a.Status, StatusTone: frame.AccountTone(a.Status),
			Alias: a.Alias, Created: frame.FmtTime(a.CreatedAt), Virtual: a.Virtual}
		var err error
		if row.OwnerKind, row.OwnerHref, err = owners.Of(a); err != nil {
			return nil, err
		}
		if f, ok := full[a.Token]; ok && i < maxIdentifierLookups {
			row.Identifiers = identifiersOf(f)
			row.Looked = true
			for _, b := range f.Balances {
				row.Balances = append(row.Balances, emi.FormatMinor(b.Available)+" "+b.Currency)
			}
		}
		rows[i] = row
	}
	return rows, nil
}

// identifiersOf is what a list shows of an account's identifiers: its
// first IBAN (a virtual account's own), and a UK balance's sort code and
// account number.
func identifiersOf(a emi.Account) []string {
	if a.Virtual {
		for _, b := range a.Balances {
			if iban := a.VirtualIBANs[b.Currency]; iban != "" {
				return []string{iban}
			}
		}
		return nil
	}
	for _, b := range a.Balances {
		var out []string
		if s := deref(b.IBAN); s != "" {
			out = append(out, s)
		}
		if deref(b.AccountNumber) != "" {
			out = append(out, frame.FmtSortCode(deref(b.SortCode))+" "+deref(b.AccountNumber))
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// accountForm keeps a refused action's input for the re-rendered page.
type accountForm struct {
	which, reason string
	errs          map[string]string
	// kept is a refused adjustment request or simulated payment, shown
	// again in its open form (which is "adjust" or "simulate").
	kept *components.Form
}

// accountDetail (GET /accounts/{account}).
func (p *Pages) accountDetail(w http.ResponseWriter, r *http.Request) {
	p.renderAccountPage(w, r, http.StatusOK, nil)
}

// renderAccountPage renders an account's page; f is a refused action's
// form, shown open with its errors.
func (p *Pages) renderAccountPage(w http.ResponseWriter, r *http.Request, status int, f *accountForm) {
	ctx := r.Context()
	token := frame.Param(r, "account")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrAccountNotFound)
		return
	}
	a, err := p.accounts.Get(ctx, token)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	owners := p.frame.OwnerLinks(r)
	kind, ownerHref, err := owners.Of(a.Account)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	keys := map[string]string{}
	if frame.CanDo(r, partners.View) {
		if _, ks, err := p.partners.Get(ctx, a.PartnerID); err == nil {
			for _, k := range ks {
				keys[k.ID] = frame.ShortID(k.APIKey)
			}
		}
	}
	v := accountsview.AccountView{Token: a.Token, Status: a.Status, StatusTone: frame.AccountTone(a.Status), Alias: a.Alias, Virtual: a.Virtual}
	partner := p.frame.PartnerNames(r).KV(r, "Partner", a.PartnerID)
	owner := components.KV{Label: "Owner", Value: frame.FirstNonEmpty(a.OwnerName, "(no name)"), Href: ownerHref}
	ownerToken := components.KV{Label: "Owner token", Value: frame.FirstNonEmpty(a.User, a.Merchant), Mono: true}
	v.Details = []components.KV{owner, {Label: "Owner type", Value: kind}, ownerToken, partner,
		{Label: "Program", Value: a.Program, Href: frame.ProgramHref(a.Program), Mono: true},
		{Label: "Status", Value: a.Status, Tone: frame.ToneOrNeutral(frame.AccountTone(a.Status))},
		{Label: "Alias", Value: a.Alias}}
	if a.Virtual {
		v.Details = append(v.Details, components.KV{Label: "Main account", Value: a.Main, Href: frame.AccountHref(a.Main), Mono: true})
	}
	terminated := ""
	if a.TerminatedAt != nil {
		terminated = frame.FmtTime(*a.TerminatedAt)
	}
	v.Details = append(v.Details, components.KV{Label: "Account token", Value: a.Token, Mono: true},
		components.KV{Label: "Opened (UTC)", Value: frame.FmtTime(a.CreatedAt), Mono: true},
		components.KV{Label: "Updated (UTC)", Value: frame.FmtTime(a.UpdatedAt), Mono: true},
		components.KV{Label: "Terminated (UTC)", Value: terminated, Mono: true})

	v.Balances = balanceViews(a.Account)
	if a.Virtual {
		v.BalancesNote = "A virtual account has no balance of its own: these are its main account's balances. The IBANs are the virtual account's own, routed to them."
	}
	for i := len(a.History) - 1; i >= 0; i-- {
		h := a.History[i]
		row := accountsview.StatusChangeRow{From: h.From, To: h.To, ToTone: frame.AccountTone(h.To), Reason: h.Reason, At: frame.FmtTime(h.At)}
		row.Actor, row.ActorHref = historyActor(r, h.Actor, h.ActorName, keys)
		v.History = append(v.History, row)
	}
	if v.Virtuals, err = p.accountRows(r, a.Virtuals); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	if t := a.PendingTermination; t != nil {
		by := frame.StaffName(r, t.ProposedBy, frame.FirstNonEmpty(t.ProposedByName, "a colleague (staff "+frame.ShortID(t.ProposedBy)+")"))
		v.Pending = &accountsview.PendingTermination{By: by, Reason: t.Reason, Mine: a.TerminationCan.Withdraw,
			WhyNot: a.TerminationCan.WhyNotApprove}
	}
	if caps := p.accounts.Capabilities(r.Context(), a); caps.Manages {
		v.Actions = accountActions(a, caps, f)
	}
	if v.Money, err = p.accountMoney(r, a, f); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	if !a.Virtual {
		if v.ShowCards, v.Cards, err = p.cardPages.OwnerCards(r, "", "", a.Token); err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
	}
	st, invalid, err := p.accountStatement(r, a)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	if invalid && status == http.StatusOK {
		status = http.StatusUnprocessableEntity
	}
	v.Statement = st
	if frame.CanDo(r, accounts.View) {
		entries, err := p.accounts.AuditTrail(ctx, a.Token)
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		v.ShowAudit = true
		if frame.CanDo(r, kernel.ViewAudit) {
			v.AuditHref = "/backoffice/audit?resource_type=account&resource_token=" + url.QueryEscape(a.Token)
		}
		for _, e := range entries {
			v.Audit = append(v.Audit, frame.AuditRow(r, e))
		}
	}
	p.frame.NameAuditIDs(r, v.Audit)
	title := "Account · " + frame.FirstNonEmpty(a.OwnerName, frame.ShortID(a.Token))
	p.frame.RenderPrivate(w, r, status, title, accountsview.AccountDetail(v))
}

// balanceViews lays out the balances with their identifiers; a virtual
// account shows its own IBAN beside its main account's balance.
func balanceViews(a emi.Account) []accountsview.BalanceView {
	out := make([]accountsview.BalanceView, 0, len(a.Balances))
	for _, b := range a.Balances {
		bv := accountsview.BalanceView{Currency: b.Currency, Available: emi.FormatMinor(b.Available), Posted: emi.FormatMinor(b.Posted),
			Held: emi.FormatMinor(b.Held)}
		add := func(label, value string) {
			if value != "" {
				bv.Idents = append(bv.Idents, accountsview.Ident{Label: label, Value: value})
			}
		}
		if a.Virtual {
			add("IBAN", a.VirtualIBANs[b.Currency])
			if len(bv.Idents) > 0 {
				add("BIC", b.BIC)
			}
		} else {
			add("IBAN", deref(b.IBAN))
			add("BIC", b.BIC)
			add("Account number", deref(b.AccountNumber))
			add("Sort code", deref(b.SortCode))
		}
		out = append(out, bv)
	}
	return out
}

// accountActions lays out the actions the signed-in user may take on the
// account, as the service answers (accounts.Capabilities).
func accountActions(a accounts.AccountView, caps accounts.AccountCapabilities, f *accountForm) *accountsview.AccountActions {
	act := &accountsview.AccountActions{Base: frame.AccountHref(a.Token), Virtuals: len(a.Virtuals), Final: caps.Final,
		CanBlock: caps.Block.Allowed, CanUnblock: caps.Unblock.Allowed, CanRequest: caps.RequestTermination.Allowed,
		BalanceNotZero: caps.BalanceNotZero && a.PendingTermination == nil && !caps.Final}
	if a.PendingTermination != nil {
		act.Seen = "?request=" + url.QueryEscape(a.PendingTermination.ID)
		act.CanApprove = caps.Termination.Approve
		act.CanWithdraw = caps.Termination.Withdraw
		act.CanReject = caps.Termination.Reject
	}
	if f != nil {
		act.Open, act.Reason, act.Errs = f.which, f.reason, f.errs
	}
	return act
}

// accountToken is the account of an action, or "" after answering 404.
func (p *Pages) accountToken(w http.ResponseWriter, r *http.Request) string {
	token := frame.Param(r, "account")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrAccountNotFound)
		return ""
	}
	return token
}

// accountRefused answers a refused action: a missing reason goes back to
// the page with the form open (422); rule errors are a flash on the page.
func (p *Pages) accountRefused(w http.ResponseWriter, r *http.Request, err error, f *accountForm, token string) {
	back := frame.AccountHref(token)
	switch {
	case frame.ErrorIs(err, emi.ErrFourEyes), frame.ErrorIs(err, emi.ErrReviewClosed):
		// The service says why in the error's public sentence: who may not
		// take this step, or that a request already waits or none does
		// any more.
		p.frame.Flash(r.Context(), "bad", frame.Message(emi.AsError(err)))
		frame.Redirect(w, r, back)
	case emi.AsError(err).Kind == emi.KindInvalid && f != nil:
		errs, banner := frame.FieldErrors(err)
		if len(errs) == 0 {
			errs = map[string]string{"reason": banner}
		}
		f.errs = errs
		p.frame.Flash(r.Context(), "bad", banner)
		p.renderAccountPage(w, r, http.StatusUnprocessableEntity, f)
	default:
		p.frame.FlashError(w, r, err, back)
	}
}

// accountBlock (POST /accounts/{account}/block).
func (p *Pages) accountBlock(w http.ResponseWriter, r *http.Request) {
	p.accountSetStatus(w, r, emi.AccountBlocked, "block",
		"Account blocked: payments stop and its cards are frozen until it is unblocked. The partner is told.")
}

// accountUnblock (POST /accounts/{account}/unblock).
func (p *Pages) accountUnblock(w http.ResponseWriter, r *http.Request) {
	p.accountSetStatus(w, r, emi.AccountActive, "unblock", "Account unblocked: it is active again. The partner is told.")
}

func (p *Pages) accountSetStatus(w http.ResponseWriter, r *http.Request, status, which, done string) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	reason := r.PostFormValue("reason")
	if _, err := p.accounts.StaffSetStatus(r.Context(), token, status, reason); err != nil {
		p.accountRefused(w, r, err, &accountForm{which: which, reason: reason}, token)
		return
	}
	p.frame.Flash(r.Context(), "ok", done)
	frame.Redirect(w, r, frame.AccountHref(token))
}

// accountTerminate (POST /accounts/{account}/terminate) asks for the
// account's termination; another staff member approves it.
func (p *Pages) accountTerminate(w http.ResponseWriter, r *http.Request) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	reason := r.PostFormValue("reason")
	if err := p.accounts.RequestTermination(r.Context(), token, reason); err != nil {
		p.accountRefused(w, r, err, &accountForm{which: "terminate", reason: reason}, token)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Termination requested. Awaiting a second staff member: someone other than you must approve it.")
	frame.Redirect(w, r, frame.AccountHref(token))
}

// accountTerminateApprove (POST /accounts/{account}/terminate/approve)
// terminates the account a colleague asked to terminate.
func (p *Pages) accountTerminateApprove(w http.ResponseWriter, r *http.Request) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	if _, err := p.accounts.ApproveTermination(r.Context(), token, r.URL.Query().Get("request")); err != nil {
		p.accountRefused(w, r, err, &accountForm{which: "approve"}, token)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Account terminated, with its virtual accounts: this is final. The partner is told.")
	frame.Redirect(w, r, frame.AccountHref(token))
}

// accountTerminateWithdraw (POST /accounts/{account}/terminate/withdraw)
// ends a pending termination request: the service withdraws the proposer's
// own and rejects a colleague's.
func (p *Pages) accountTerminateWithdraw(w http.ResponseWriter, r *http.Request) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	req, err := p.accounts.DeclineTermination(r.Context(), token, r.URL.Query().Get("request"))
	if err != nil {
		p.accountRefused(w, r, err, &accountForm{which: "withdraw"}, token)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Termination request "+req.Status+": the account stays as it is.")
	frame.Redirect(w, r, frame.AccountHref(token))
}

// OwnerAccounts lists the accounts of a person or a merchant for the
// user and company pages; show is false for roles that may not see
// accounts.
func (p *Pages) OwnerAccounts(r *http.Request, user, merchant string) (bool, []accountsview.AccountRow, error) {
	if p.accounts == nil || !frame.CanDo(r, accounts.View) {
		return false, nil, nil
	}
	if user == "" && merchant == "" {
		return true, nil, nil
	}
	list, err := p.accounts.ForOwner(r.Context(), user, merchant)
	if err != nil {
		return false, nil, err
	}
	rows, err := p.accountRows(r, list)
	return true, rows, err
}

// SearchAccounts adds accounts to the global search for roles that see
// them (Accounts.Search: token, IBAN, account number, owner name or
// e-mail).
func (p *Pages) SearchAccounts(r *http.Request, q string) ([]fragments.Hit, error) {
	if q == "" || p.accounts == nil || !frame.CanDo(r, accounts.View) {
		return nil, nil
	}
	if len(q) > frame.MaxQuery {
		q = q[:frame.MaxQuery]
	}
	list, _, err := p.accounts.Search(r.Context(), q, 1)
	if err != nil {
		return nil, err
	}
	hits := make([]fragments.Hit, 0, min(len(list), 20))
	for _, a := range list[:min(len(list), 20)] {
		detail := strings.Join(slices.DeleteFunc([]string{a.Program, a.Status, a.Alias, frame.ShortID(a.Token)},
			func(s string) bool { return s == "" }), " · ")
		kind := "account"
		if a.Virtual {
			kind = "virtual account"
		}
		hits = append(hits, fragments.Hit{Kind: kind, Title: frame.FirstNonEmpty(a.OwnerName, "(no name)"), Detail: detail, Href: frame.AccountHref(a.Token), Token: a.Token})
	}
	return hits, nil
}

// historyActor names who changed an account's status from the name the
// store joined (a staff user's, or "partner API" for a key): the
// signed-in user as "(you)", a partner's key (keys, for roles that see
// partners' keys) by its key, a staff user linked for roles that see
// staff.
func historyActor(r *http.Request, id, name string, keys map[string]string) (string, string) {
	if u := frame.Me(r); id != "" && u.ID == id {
		return u.Name + " (you)", ""
	}
	if k, ok := keys[id]; ok {
		return "partner API (key " + k + ")", ""
	}
	switch {
	case id == "":
		return "—", ""
	case name == "":
		return "staff or API key " + frame.ShortID(id), ""
	case name != "partner API" && frame.CanDo(r, staff.ViewStaff):
		return name, "/backoffice/staff/" + id
	}
	return name, ""
}
