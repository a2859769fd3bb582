package portal

import (
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
	"emi/views/components"
	"emi/views/pages"
)

// Customer service's account screens: the accounts search, an account's
// page (owner, program, balances and identifiers, virtual accounts, status
// history, audit trail) with block, unblock and four-eyes termination. Its
// statement is accounts_statement.go, its money section accounts_money.go,
// the programs screen accounts_programs.go. Rules (reasons, four-eyes,
// balances) live in service accounts; this file lays them out.

// accountsPerPage is service.Accounts.Search's page size.
const accountsPerPage = 50

// maxAccountPage bounds the page number a hand-edited link may ask for.
const maxAccountPage = 100000

// maxIdentifierLookups bounds the accounts of one list whose identifiers
// are looked up (the list query does not carry balances).
const maxIdentifierLookups = 50

// accountList (GET /accounts) searches accounts: token, IBAN, account
// number with or without sort code, owner name or e-mail; newest first,
// 50 a page.
func (p *Portal) accountList(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = min(max(page, 1), maxAccountPage)
	sort := ReadSort(r, "created", "desc", "program", "status", "created")
	v := pages.AccountsView{Q: q, Sort: sort.View(r)}
	list, total, err := p.d.Accounts.Search(r.Context(), q, page, sort.Order())
	if err != nil {
		if emi.AsError(err).Kind != emi.KindInvalid {
			p.RenderError(w, r, err)
			return
		}
		v.Errs, _ = FieldErrors(err)
		p.Render(w, r, http.StatusUnprocessableEntity, "Accounts", pages.Accounts(v))
		return
	}
	if v.Rows, err = p.accountRows(r, list); err != nil {
		p.RenderError(w, r, err)
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
	p.RenderPrivate(w, r, sort.Status(), "Accounts", pages.Accounts(v))
}

// accountRows makes list rows; the identifiers and balances of the first
// maxIdentifierLookups accounts are read in one round trip.
func (p *Portal) accountRows(r *http.Request, list []emi.Account) ([]pages.AccountRow, error) {
	owners := p.ownerLinks(r)
	looked := make([]string, 0, min(len(list), maxIdentifierLookups))
	for _, a := range list[:min(len(list), maxIdentifierLookups)] {
		looked = append(looked, a.Token)
	}
	full, err := p.d.Accounts.WithBalances(r.Context(), looked)
	if err != nil {
		return nil, err
	}
	rows := make([]pages.AccountRow, len(list))
	for i, a := range list {
		row := pages.AccountRow{Token: a.Token, Href: AccountHref(a.Token), Owner: FirstNonEmpty(a.OwnerName, "(no name)"),
			Program: a.Program, ProgramHref: ProgramHref(a.Program), Status: a.Status, StatusTone: AccountTone(a.Status),
			Alias: a.Alias, Created: FmtTime(a.CreatedAt), Virtual: a.Virtual}
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
			out = append(out, FmtSortCode(deref(b.SortCode))+" "+deref(b.AccountNumber))
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
func (p *Portal) accountDetail(w http.ResponseWriter, r *http.Request) {
	p.renderAccountPage(w, r, http.StatusOK, nil)
}

// renderAccountPage renders an account's page; f is a refused action's
// form, shown open with its errors.
func (p *Portal) renderAccountPage(w http.ResponseWriter, r *http.Request, status int, f *accountForm) {
	ctx := r.Context()
	token := Param(r, "account")
	if !LooksLikeToken(token) {
		p.RenderError(w, r, emi.ErrAccountNotFound)
		return
	}
	a, err := p.d.Accounts.Get(ctx, token)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	owners := p.ownerLinks(r)
	kind, ownerHref, err := owners.Of(a.Account)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	keys := map[string]string{}
	if CanDo(r, partners.View) {
		if _, ks, err := p.d.Partners.Get(ctx, a.PartnerID); err == nil {
			for _, k := range ks {
				keys[k.ID] = ShortID(k.APIKey)
			}
		}
	}
	v := pages.AccountView{Token: a.Token, Status: a.Status, StatusTone: AccountTone(a.Status), Alias: a.Alias, Virtual: a.Virtual}
	partner := p.PartnerNames(r).KV(r, "Partner", a.PartnerID)
	owner := pages.KV{Label: "Owner", Value: FirstNonEmpty(a.OwnerName, "(no name)"), Href: ownerHref}
	ownerToken := pages.KV{Label: "Owner token", Value: FirstNonEmpty(a.User, a.Merchant), Mono: true}
	v.Details = []pages.KV{owner, {Label: "Owner type", Value: kind}, ownerToken, partner,
		{Label: "Program", Value: a.Program, Href: ProgramHref(a.Program), Mono: true},
		{Label: "Status", Value: a.Status, Tone: ToneOrNeutral(AccountTone(a.Status))},
		{Label: "Alias", Value: a.Alias}}
	if a.Virtual {
		v.Details = append(v.Details, pages.KV{Label: "Main account", Value: a.Main, Href: AccountHref(a.Main), Mono: true})
	}
	terminated := ""
	if a.TerminatedAt != nil {
		terminated = FmtTime(*a.TerminatedAt)
	}
	v.Details = append(v.Details, pages.KV{Label: "Account token", Value: a.Token, Mono: true},
		pages.KV{Label: "Opened (UTC)", Value: FmtTime(a.CreatedAt), Mono: true},
		pages.KV{Label: "Updated (UTC)", Value: FmtTime(a.UpdatedAt), Mono: true},
		pages.KV{Label: "Terminated (UTC)", Value: terminated, Mono: true})

	v.Balances = balanceViews(a.Account)
	if a.Virtual {
		v.BalancesNote = "A virtual account has no balance of its own: these are its main account's balances. The IBANs are the virtual account's own, routed to them."
	}
	for i := len(a.History) - 1; i >= 0; i-- {
		h := a.History[i]
		row := pages.StatusChangeRow{From: h.From, To: h.To, ToTone: AccountTone(h.To), Reason: h.Reason, At: FmtTime(h.At)}
		row.Actor, row.ActorHref = historyActor(r, h.Actor, h.ActorName, keys)
		v.History = append(v.History, row)
	}
	if v.Virtuals, err = p.accountRows(r, a.Virtuals); err != nil {
		p.RenderError(w, r, err)
		return
	}
	if t := a.PendingTermination; t != nil {
		by := StaffName(r, t.ProposedBy, FirstNonEmpty(t.ProposedByName, "a colleague (staff "+ShortID(t.ProposedBy)+")"))
		v.Pending = &pages.PendingTermination{By: by, Reason: t.Reason, Mine: a.TerminationCan.Withdraw,
			WhyNot: a.TerminationCan.WhyNotApprove}
	}
	if caps := p.d.Accounts.Capabilities(r.Context(), a); caps.Manages {
		v.Actions = accountActions(a, caps, f)
	}
	if v.Money, err = p.accountMoney(r, a, f); err != nil {
		p.RenderError(w, r, err)
		return
	}
	if !a.Virtual {
		if v.ShowCards, v.Cards, err = p.ownerCards(r, "", "", a.Token); err != nil {
			p.RenderError(w, r, err)
			return
		}
	}
	st, invalid, err := p.accountStatement(r, a)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	if invalid && status == http.StatusOK {
		status = http.StatusUnprocessableEntity
	}
	v.Statement = st
	if CanDo(r, accounts.View) {
		entries, err := p.d.Accounts.AuditTrail(ctx, a.Token)
		if err != nil {
			p.RenderError(w, r, err)
			return
		}
		v.ShowAudit = true
		if CanDo(r, kernel.ViewAudit) {
			v.AuditHref = "/backoffice/audit?resource_type=account&resource_token=" + url.QueryEscape(a.Token)
		}
		for _, e := range entries {
			v.Audit = append(v.Audit, AuditRow(r, e))
		}
	}
	p.NameAuditIDs(r, v.Audit)
	title := "Account · " + FirstNonEmpty(a.OwnerName, ShortID(a.Token))
	p.RenderPrivate(w, r, status, title, pages.AccountDetail(v))
}

// balanceViews lays out the balances with their identifiers; a virtual
// account shows its own IBAN beside its main account's balance.
func balanceViews(a emi.Account) []pages.BalanceView {
	out := make([]pages.BalanceView, 0, len(a.Balances))
	for _, b := range a.Balances {
		bv := pages.BalanceView{Currency: b.Currency, Available: emi.FormatMinor(b.Available), Posted: emi.FormatMinor(b.Posted),
			Held: emi.FormatMinor(b.Held)}
		add := func(label, value string) {
			if value != "" {
				bv.Idents = append(bv.Idents, pages.Ident{Label: label, Value: value})
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
func accountActions(a accounts.AccountView, caps accounts.AccountCapabilities, f *accountForm) *pages.AccountActions {
	act := &pages.AccountActions{Base: AccountHref(a.Token), Virtuals: len(a.Virtuals), Final: caps.Final,
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
func (p *Portal) accountToken(w http.ResponseWriter, r *http.Request) string {
	token := Param(r, "account")
	if !LooksLikeToken(token) {
		p.RenderError(w, r, emi.ErrAccountNotFound)
		return ""
	}
	return token
}

// accountRefused answers a refused action: a missing reason goes back to
// the page with the form open (422); rule errors are a flash on the page.
func (p *Portal) accountRefused(w http.ResponseWriter, r *http.Request, err error, f *accountForm, token string) {
	back := AccountHref(token)
	switch {
	case ErrorIs(err, emi.ErrFourEyes), ErrorIs(err, emi.ErrReviewClosed):
		// The service says why in the error's public sentence: who may not
		// take this step, or that a request already waits or none does
		// any more.
		p.Flash(r.Context(), "bad", Message(emi.AsError(err)))
		Redirect(w, r, back)
	case emi.AsError(err).Kind == emi.KindInvalid && f != nil:
		errs, banner := FieldErrors(err)
		if len(errs) == 0 {
			errs = map[string]string{"reason": banner}
		}
		f.errs = errs
		p.Flash(r.Context(), "bad", banner)
		p.renderAccountPage(w, r, http.StatusUnprocessableEntity, f)
	default:
		p.FlashError(w, r, err, back)
	}
}

// accountBlock (POST /accounts/{account}/block).
func (p *Portal) accountBlock(w http.ResponseWriter, r *http.Request) {
	p.accountSetStatus(w, r, emi.AccountBlocked, "block",
		"Account blocked: payments stop and its cards are frozen until it is unblocked. The partner is told.")
}

// accountUnblock (POST /accounts/{account}/unblock).
func (p *Portal) accountUnblock(w http.ResponseWriter, r *http.Request) {
	p.accountSetStatus(w, r, emi.AccountActive, "unblock", "Account unblocked: it is active again. The partner is told.")
}

func (p *Portal) accountSetStatus(w http.ResponseWriter, r *http.Request, status, which, done string) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	reason := r.PostFormValue("reason")
	if _, err := p.d.Accounts.StaffSetStatus(r.Context(), token, status, reason); err != nil {
		p.accountRefused(w, r, err, &accountForm{which: which, reason: reason}, token)
		return
	}
	p.Flash(r.Context(), "ok", done)
	Redirect(w, r, AccountHref(token))
}

// accountTerminate (POST /accounts/{account}/terminate) asks for the
// account's termination; another staff member approves it.
func (p *Portal) accountTerminate(w http.ResponseWriter, r *http.Request) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	reason := r.PostFormValue("reason")
	if err := p.d.Accounts.RequestTermination(r.Context(), token, reason); err != nil {
		p.accountRefused(w, r, err, &accountForm{which: "terminate", reason: reason}, token)
		return
	}
	p.Flash(r.Context(), "ok", "Termination requested. Awaiting a second staff member: someone other than you must approve it.")
	Redirect(w, r, AccountHref(token))
}

// accountTerminateApprove (POST /accounts/{account}/terminate/approve)
// terminates the account a colleague asked to terminate.
func (p *Portal) accountTerminateApprove(w http.ResponseWriter, r *http.Request) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	if _, err := p.d.Accounts.ApproveTermination(r.Context(), token, r.URL.Query().Get("request")); err != nil {
		p.accountRefused(w, r, err, &accountForm{which: "approve"}, token)
		return
	}
	p.Flash(r.Context(), "ok", "Account terminated, with its virtual accounts: this is final. The partner is told.")
	Redirect(w, r, AccountHref(token))
}

// accountTerminateWithdraw (POST /accounts/{account}/terminate/withdraw)
// ends a pending termination request: the service withdraws the proposer's
// own and rejects a colleague's.
func (p *Portal) accountTerminateWithdraw(w http.ResponseWriter, r *http.Request) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	req, err := p.d.Accounts.DeclineTermination(r.Context(), token, r.URL.Query().Get("request"))
	if err != nil {
		p.accountRefused(w, r, err, &accountForm{which: "withdraw"}, token)
		return
	}
	p.Flash(r.Context(), "ok", "Termination request "+req.Status+": the account stays as it is.")
	Redirect(w, r, AccountHref(token))
}

// ownerAccounts lists the accounts of a person or a merchant for the
// user and company pages; show is false for roles that may not see
// accounts.
func (p *Portal) ownerAccounts(r *http.Request, user, merchant string) (bool, []pages.AccountRow, error) {
	if p.d.Accounts == nil || !CanDo(r, accounts.View) {
		return false, nil, nil
	}
	if user == "" && merchant == "" {
		return true, nil, nil
	}
	list, err := p.d.Accounts.ForOwner(r.Context(), user, merchant)
	if err != nil {
		return false, nil, err
	}
	rows, err := p.accountRows(r, list)
	return true, rows, err
}

// searchAccounts adds accounts to the global search for roles that see
// them (Accounts.Search: token, IBAN, account number, owner name or
// e-mail).
func (p *Portal) searchAccounts(r *http.Request, q string) ([]pages.Hit, error) {
	if q == "" || p.d.Accounts == nil || !CanDo(r, accounts.View) {
		return nil, nil
	}
	if len(q) > MaxQuery {
		q = q[:MaxQuery]
	}
	list, _, err := p.d.Accounts.Search(r.Context(), q, 1)
	if err != nil {
		return nil, err
	}
	hits := make([]pages.Hit, 0, min(len(list), 20))
	for _, a := range list[:min(len(list), 20)] {
		detail := strings.Join(slices.DeleteFunc([]string{a.Program, a.Status, a.Alias, ShortID(a.Token)},
			func(s string) bool { return s == "" }), " · ")
		kind := "account"
		if a.Virtual {
			kind = "virtual account"
		}
		hits = append(hits, pages.Hit{Kind: kind, Title: FirstNonEmpty(a.OwnerName, "(no name)"), Detail: detail, Href: AccountHref(a.Token), Token: a.Token})
	}
	return hits, nil
}

// historyActor names who changed an account's status from the name the
// store joined (a staff user's, or "partner API" for a key): the
// signed-in user as "(you)", a partner's key (keys, for roles that see
// partners' keys) by its key, a staff user linked for roles that see
// staff.
func historyActor(r *http.Request, id, name string, keys map[string]string) (string, string) {
	if u := Me(r); id != "" && u.ID == id {
		return u.Name + " (you)", ""
	}
	if k, ok := keys[id]; ok {
		return "partner API (key " + k + ")", ""
	}
	switch {
	case id == "":
		return "—", ""
	case name == "":
		return "staff or API key " + ShortID(id), ""
	case name != "partner API" && CanDo(r, staff.ViewStaff):
		return name, "/backoffice/staff/" + id
	}
	return name, ""
}
