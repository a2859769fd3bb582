package portal

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/transfers"
	"emi/views/pages"
)

// Money screens: an account's statement (on the account page) with its CSV
// export, and a transfer's page with, in the sandbox, the receiving bank's
// Complete and Return of an outgoing payment. Rules (ranges, scoping,
// settlement, audit of exports) live in service.Accounts and
// service.Transfers.

// statementPerPage is the account page's statement page size.
const statementPerPage = 50

func transferHref(token string) string { return "/backoffice/transfers/" + token }

// txnKindLabels name ledger transaction kinds on statements.
var txnKindLabels = map[string]string{
	emi.TxnTransfer:       "internal transfer",
	emi.TxnIncoming:       "incoming payment",
	emi.TxnOutgoing:       "outgoing payment",
	emi.TxnOutgoingReturn: "returned payment",
	emi.TxnSuspenseAssign: "assigned from suspense",
	emi.TxnSuspenseReturn: "returned from suspense",
	emi.TxnAdjustment:     "adjustment",
	emi.TxnCardClearing:   "card payment",
	emi.TxnReversal:       "reversal",
	"opening":             "opening balance",
}

func txnKindLabel(k string) string { return firstNonEmpty(txnKindLabels[k], k) }

// counterpartyIdents lists what is known of a side besides its name: its
// IBAN, its sort code and account number, the last four digits of the card
// of a card top-up (a statement's other side, a suspense item's payer).
func counterpartyIdents(c emi.Counterparty) []string {
	var out []string
	if c.IBAN != "" {
		out = append(out, "IBAN "+c.IBAN)
	}
	if c.AccountNumber != "" {
		out = append(out, fmtSortCode(c.SortCode)+" "+c.AccountNumber)
	}
	if c.CardLast4 != "" {
		out = append(out, cardLast4(c.CardLast4))
	}
	return out
}

// cardLast4 shows the last four digits of a card.
func cardLast4(last4 string) string { return "card •••• " + last4 }

// statementLink is the account page showing the statement's page n of
// the range.
func statementLink(account, from, to string, n int) string {
	q := url.Values{}
	if from != "" {
		q.Set("from", from)
	}
	if to != "" {
		q.Set("to", to)
	}
	if n > 1 {
		q.Set("page", strconv.Itoa(n))
	}
	if len(q) == 0 {
		return accountHref(account) + "#statement"
	}
	return accountHref(account) + "?" + q.Encode() + "#statement"
}

// accountStatement lays out the statement section of an account's page
// from the query (from, to, page). invalid is true when the range was
// refused (its errors are in the view).
func (p *Portal) accountStatement(r *http.Request, a accounts.AccountView) (v *pages.StatementView, invalid bool, err error) {
	q := r.URL.Query()
	from, to := q.Get("from"), q.Get("to") // the service trims them
	page, _ := strconv.Atoi(q.Get("page"))
	page = min(max(page, 1), maxAccountPage)
	v = &pages.StatementView{Action: accountHref(a.Token), From: from, To: to, OnMain: !a.Virtual}
	st, err := p.d.Accounts.StaffStatementOf(r.Context(), a, accounts.StatementQuery{From: from, To: to, Page: page, Limit: statementPerPage})
	if err != nil {
		if emi.AsError(err).Kind != emi.KindInvalid {
			return nil, false, err
		}
		v.Errs, _ = fieldErrors(err)
		return v, true, nil
	}
	csvQ := url.Values{}
	if from != "" {
		csvQ.Set("from", from)
	}
	if to != "" {
		csvQ.Set("to", to)
	}
	v.CSV = accountHref(a.Token) + "/statement.csv"
	if len(csvQ) > 0 {
		v.CSV += "?" + csvQ.Encode()
	}
	for _, b := range st.Balances {
		v.Balances = append(v.Balances, pages.StatementBalance{Currency: b.Currency, Opening: emi.FormatMinor(b.Opening),
			Closing: emi.FormatMinor(b.Closing)})
	}
	for _, l := range st.Lines {
		line := pages.StatementLine{At: fmtTime(l.CreatedAt), Type: txnKindLabel(l.Kind), Reference: l.Reference,
			Counterparty: l.Counterparty.Name, CounterpartyIdent: strings.Join(counterpartyIdents(l.Counterparty), " · "), Amount: emi.FormatMinor(l.Amount),
			BalanceAfter: emi.FormatMinor(l.BalanceAfter), Currency: l.Currency, Credit: l.Amount > 0}
		if l.Transfer != "" {
			line.Transfer, line.TransferHref = shortID(l.Transfer), transferHref(l.Transfer)
		}
		if l.Account != a.Token {
			line.Account, line.AccountHref = shortID(l.Account)+" (virtual)", accountHref(l.Account)
		}
		v.Lines = append(v.Lines, line)
	}
	pagesN := max((st.Total+statementPerPage-1)/statementPerPage, 1)
	v.Total = strconv.FormatInt(st.Total, 10) + " movements · page " + strconv.Itoa(page) + " of " + strconv.FormatInt(pagesN, 10)
	if st.Total == 1 {
		v.Total = "1 movement · page " + strconv.Itoa(page) + " of 1"
	}
	if page > 1 {
		v.Prev = statementLink(a.Token, from, to, min(page-1, int(pagesN)))
	}
	if int64(page) < pagesN {
		v.Next = statementLink(a.Token, from, to, page+1)
	}
	return v, false, nil
}

// accountStatementCSV (GET /accounts/{account}/statement.csv?from=&to=)
// exports the statement's lines in the range, audited by the service,
// through writeCSV (every text cell defused; emi's own amounts stay
// numbers). An export cut short at service.MaxStatementExport lines ends
// with a line saying so.
func (p *Portal) accountStatementCSV(w http.ResponseWriter, r *http.Request) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	q := r.URL.Query()
	from, to := q.Get("from"), q.Get("to")
	st, err := p.d.Accounts.StaffStatementExport(r.Context(), token, from, to)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	rows := [][]string{{"time_utc", "type", "transaction", "transfer", "account", "balance", "reference", "counterparty_name",
		"counterparty_iban", "counterparty_account_number", "counterparty_sort_code", "currency", "amount", "balance_after"}}
	for _, l := range st.Lines {
		rows = append(rows, []string{l.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), l.Kind, l.Transaction, l.Transfer, l.Account,
			l.Balance, l.Reference, l.Counterparty.Name, l.Counterparty.IBAN, l.Counterparty.AccountNumber, l.Counterparty.SortCode,
			l.Currency, emi.FormatMinor(l.Amount), emi.FormatMinor(l.BalanceAfter)})
	}
	if st.Truncated {
		last := make([]string, len(rows[0]))
		last[0], last[1] = "truncated", "The export stops at the newest "+strconv.Itoa(len(st.Lines))+
			" lines; export a shorter date range for the older ones."
		rows = append(rows, last)
	}
	name := "statement-" + token[:8] + "-" + firstNonEmpty(strings.TrimSpace(from), "start") + "-" + firstNonEmpty(strings.TrimSpace(to), "now")
	writeCSV(w, name, rows)
}

// transferForm keeps a refused return's input.
type transferForm struct {
	reason string
	errs   map[string]string
	// reversal: the form is the reversal request's (else the sandbox
	// return's).
	reversal bool
}

// transferDetail (GET /transfers/{transfer}).
func (p *Portal) transferDetail(w http.ResponseWriter, r *http.Request) {
	p.renderTransferPage(w, r, http.StatusOK, nil)
}

// renderTransferPage renders a transfer: both sides, status, the journal
// entries of its transactions and its audit rows, with the sandbox's
// settlement buttons for an outgoing payment.
func (p *Portal) renderTransferPage(w http.ResponseWriter, r *http.Request, status int, f *transferForm) {
	token := param(r, "transfer")
	if !looksLikeToken(token) {
		p.renderError(w, r, emi.ErrTransferNotFound)
		return
	}
	t, err := p.d.Transfers.StaffGet(r.Context(), token)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	v := pages.TransferView{Token: t.Token, Status: t.Status, StatusTone: transferTone(t.Status)}
	partner := p.partnerNames(r).kv(r, "Partner (sender)", firstNonEmpty(t.PartnerID, t.DestinationPartner))
	if t.PartnerID == "" {
		partner.Label = "Partner (receiver)"
	}
	v.Details = []pages.KV{{Label: "Type", Value: t.Type}, {Label: "Status", Value: t.Status, Tone: toneOrNeutral(transferTone(t.Status))},
		{Label: "Amount", Value: emi.FormatMinor(t.Amount) + " " + t.Currency, Mono: true}, {Label: "Reference", Value: t.Reference},
		partner, {Label: "Created (UTC)", Value: fmtTime(t.CreatedAt), Mono: true}, {Label: "Updated (UTC)", Value: fmtTime(t.UpdatedAt), Mono: true}}
	if t.Status == emi.TransferReturned {
		v.Details = append(v.Details, pages.KV{Label: "Return reason", Value: t.ReturnReason})
	}
	v.Details = append(v.Details, pages.KV{Label: "Transfer token", Value: t.Token, Mono: true})
	src, err := p.transferSide(r, "Source", t.SourceAccount, t.SourceBalance, t.SourceIBAN, t.Type == emi.TransferIncoming, t.Counterparty)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	dst, err := p.transferSide(r, "Destination", t.DestinationAccount, t.DestinationBalance, t.DestinationIBAN, t.Type == emi.TransferOutgoing, t.Counterparty)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	v.Sides = []pages.TransferSideView{src, dst}
	for _, e := range t.Entries {
		row := pages.LedgerEntryRow{Txn: shortID(e.TxnToken), TxnID: e.TxnToken, Kind: txnKindLabel(e.Kind), Entry: strconv.FormatInt(e.ID, 10),
			Internal: e.Internal, Amount: emi.FormatMinor(e.Amount) + " " + e.Currency, At: fmtTime(e.CreatedAt)}
		if e.Account != "" {
			row.Account, row.AccountHref, row.Balance, row.BalanceID = e.Account, accountHref(e.Account), shortID(e.Balance), e.Balance
			row.BalanceAfter = emi.FormatMinor(e.BalanceAfter)
		}
		v.Entries = append(v.Entries, row)
	}
	for _, e := range t.Audit {
		v.Audit = append(v.Audit, auditRow(r, e))
	}
	p.nameAuditIDs(r, v.Audit)
	if canDo(r, emi.PermViewAudit) {
		v.AuditHref = "/backoffice/audit?resource_type=transfer&resource_token=" + url.QueryEscape(t.Token)
	}
	if t.Type == emi.TransferInternal && canDo(r, emi.PermManageMoney) {
		rv, err := p.transferReversal(r, t, f)
		if err != nil {
			p.renderError(w, r, err)
			return
		}
		v.Reversal = rv
	}
	if p.d.Sandbox && t.Type == emi.TransferOutgoing && canDo(r, emi.PermManageAccounts) {
		act := &pages.TransferActions{Base: transferHref(t.Token), CanComplete: t.CanComplete(),
			CanReturn: t.CanReturn()}
		if f != nil && !f.reversal {
			act.Reason, act.Errs = f.reason, f.errs
		}
		v.Actions = act
	}
	p.renderPrivate(w, r, status, "Transfer · "+emi.FormatMinor(t.Amount)+" "+t.Currency, pages.TransferDetail(v))
}

// transferSide lays out one side: an account of emi (linked, with its
// owner), or the external party of an outgoing or incoming payment.
func (p *Portal) transferSide(r *http.Request, title, account, balance, ibanOf string, external bool, c emi.Counterparty) (pages.TransferSideView, error) {
	s := pages.TransferSideView{Title: title}
	if external || account == "" {
		s.Title += " (external)"
		add := func(label, value string, mono bool) {
			if value != "" {
				s.Details = append(s.Details, pages.KV{Label: label, Value: value, Mono: mono})
			}
		}
		add("Name", c.Name, false)
		add("IBAN", c.IBAN, true)
		add("BIC", c.BIC, true)
		add("Sort code", fmtSortCode(c.SortCode), true)
		add("Account number", c.AccountNumber, true)
		if c.CardLast4 != "" {
			add("Card", cardLast4(c.CardLast4), true)
		}
		add("Scheme", c.Scheme, false)
		return s, nil
	}
	a, err := p.d.Accounts.Get(r.Context(), account)
	if err != nil {
		return s, err
	}
	kind, ownerHref, err := p.ownerLinks(r).of(a.Account)
	if err != nil {
		return s, err
	}
	s.Details = []pages.KV{{Label: "Account", Value: account, Href: accountHref(account), Mono: true},
		{Label: "Owner", Value: firstNonEmpty(a.OwnerName, "(no name)"), Href: ownerHref}, {Label: "Owner type", Value: kind},
		{Label: "Account status", Value: a.Status, Tone: toneOrNeutral(accountTone(a.Status))},
		p.partnerNames(r).kv(r, "Partner", a.PartnerID)}
	if ibanOf != "" {
		s.Details = append(s.Details, pages.KV{Label: "IBAN", Value: ibanOf, Mono: true})
	}
	s.Details = append(s.Details, pages.KV{Label: "Balance", Value: balance, Mono: true})
	if a.Virtual {
		s.Details = append(s.Details, pages.KV{Label: "Main account", Value: a.Main, Href: accountHref(a.Main), Mono: true})
	}
	return s, nil
}

// transferToken is the transfer of an action, or "" after answering 404.
func (p *Portal) transferToken(w http.ResponseWriter, r *http.Request) string {
	token := param(r, "transfer")
	if !looksLikeToken(token) {
		p.renderError(w, r, emi.ErrTransferNotFound)
		return ""
	}
	return token
}

// transferComplete (POST /transfers/{transfer}/complete, sandbox only)
// plays the receiving bank accepting an outgoing payment.
func (p *Portal) transferComplete(w http.ResponseWriter, r *http.Request) {
	token := p.transferToken(w, r)
	if token == "" {
		return
	}
	if _, err := p.d.Transfers.StaffComplete(r.Context(), token); err != nil {
		p.flashError(w, r, err, transferHref(token))
		return
	}
	p.flash(r.Context(), "ok", "Payment completed (sandbox): the partner is told (transfer.completed). No money moved.")
	redirect(w, r, transferHref(token))
}

// transferReturn (POST /transfers/{transfer}/return, sandbox only) plays
// the receiving bank sending an outgoing payment back.
func (p *Portal) transferReturn(w http.ResponseWriter, r *http.Request) {
	token := p.transferToken(w, r)
	if token == "" {
		return
	}
	reason := r.PostFormValue("reason")
	if _, err := p.d.Transfers.StaffReturn(r.Context(), token, reason); err != nil {
		if emi.AsError(err).Kind == emi.KindInvalid {
			errs, banner := fieldErrors(err)
			p.flash(r.Context(), "bad", banner)
			p.renderTransferPage(w, r, http.StatusUnprocessableEntity, &transferForm{reason: reason, errs: errs})
			return
		}
		p.flashError(w, r, err, transferHref(token))
		return
	}
	p.flash(r.Context(), "ok", "Payment returned (sandbox): the amount is credited back and the partner is told (transfer.returned).")
	redirect(w, r, transferHref(token))
}

// transferReversal builds the reversal panel of an internal transfer.
func (p *Portal) transferReversal(r *http.Request, t transfers.StaffTransfer, f *transferForm) (*pages.TransferReversal, error) {
	rv := &pages.TransferReversal{Base: transferHref(t.Token), CanRequest: t.Status == emi.TransferCompleted}
	req, pending, err := p.d.Transfers.PendingReversal(r.Context(), t.Token)
	if err != nil {
		return nil, err
	}
	if pending {
		by, _ := actorOf(r, req.RequestedBy, p.staffNames(r), nil)
		rv.Pending, rv.By, rv.Reason, rv.At, rv.Mine = true, by, req.Reason, fmtTime(req.RequestedAt), req.RequestedBy == current(r).ID
	}
	if f != nil && f.reversal {
		rv.FormReason, rv.Errs = f.reason, f.errs
	}
	return rv, nil
}

// transferReversalRequest (POST /transfers/{transfer}/reversal) asks for
// an internal transfer to be reversed; a second staff member approves.
func (p *Portal) transferReversalRequest(w http.ResponseWriter, r *http.Request) {
	token := p.transferToken(w, r)
	if token == "" {
		return
	}
	reason := r.PostFormValue("reason")
	if err := p.d.Transfers.RequestReversal(r.Context(), token, reason); err != nil {
		if emi.AsError(err).Kind == emi.KindInvalid {
			errs, banner := fieldErrors(err)
			p.flash(r.Context(), "bad", banner)
			p.renderTransferPage(w, r, http.StatusUnprocessableEntity, &transferForm{reason: reason, errs: errs, reversal: true})
			return
		}
		p.flashError(w, r, err, transferHref(token))
		return
	}
	p.flash(r.Context(), "ok", "Reversal requested: a second staff member must approve it. Nothing has moved yet.")
	redirect(w, r, transferHref(token))
}

// transferReversalDecide (POST /transfers/{transfer}/reversal/approve and
// .../reject) decides a pending reversal: approval by someone other than
// the requester moves the money back. Buttons, nothing typed: a refusal is
// a flash.
func (p *Portal) transferReversalDecide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := p.transferToken(w, r)
		if token == "" {
			return
		}
		if _, err := p.d.Transfers.DecideReversal(r.Context(), token, approve); err != nil {
			p.flashError(w, r, err, transferHref(token))
			return
		}
		if approve {
			p.flash(r.Context(), "ok", "Transfer reversed: the amount is back on the source balance and both partners are told (transfer.returned).")
		} else {
			p.flash(r.Context(), "ok", "Reversal request withdrawn. Nothing moved.")
		}
		redirect(w, r, transferHref(token))
	}
}
