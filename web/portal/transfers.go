package portal

import (
	"net/http"
	"net/url"
	"strconv"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
	"emi/internal/service/transfers"
	"emi/views/pages"
)

// A transfer's page with, in the sandbox, the receiving bank's Complete and
// Return of an outgoing payment, and its reversal under four-eyes; the
// money codes' texts and the answer to a refused money action every
// transfers screen shares. Rules (settlement, reversal, audit) live in
// service transfers.

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
	token := Param(r, "transfer")
	if !LooksLikeToken(token) {
		p.RenderError(w, r, emi.ErrTransferNotFound)
		return
	}
	t, err := p.d.Transfers.StaffGet(r.Context(), token)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v := pages.TransferView{Token: t.Token, Status: t.Status, StatusTone: TransferTone(t.Status)}
	partner := p.PartnerNames(r).KV(r, "Partner (sender)", FirstNonEmpty(t.PartnerID, t.DestinationPartner))
	if t.PartnerID == "" {
		partner.Label = "Partner (receiver)"
	}
	v.Details = []pages.KV{{Label: "Type", Value: t.Type}, {Label: "Status", Value: t.Status, Tone: ToneOrNeutral(TransferTone(t.Status))},
		{Label: "Amount", Value: emi.FormatMinor(t.Amount) + " " + t.Currency, Mono: true}, {Label: "Reference", Value: t.Reference},
		partner, {Label: "Created (UTC)", Value: FmtTime(t.CreatedAt), Mono: true}, {Label: "Updated (UTC)", Value: FmtTime(t.UpdatedAt), Mono: true}}
	if t.Status == emi.TransferReturned {
		v.Details = append(v.Details, pages.KV{Label: "Return reason", Value: t.ReturnReason})
	}
	v.Details = append(v.Details, pages.KV{Label: "Transfer token", Value: t.Token, Mono: true})
	src, err := p.transferSide(r, "Source", t.SourceAccount, t.SourceBalance, t.SourceIBAN, t.Type == emi.TransferIncoming, t.Counterparty)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	dst, err := p.transferSide(r, "Destination", t.DestinationAccount, t.DestinationBalance, t.DestinationIBAN, t.Type == emi.TransferOutgoing, t.Counterparty)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v.Sides = []pages.TransferSideView{src, dst}
	for _, e := range t.Entries {
		row := pages.LedgerEntryRow{Txn: ShortID(e.TxnToken), TxnID: e.TxnToken, Kind: TxnKindLabel(e.Kind), Entry: strconv.FormatInt(e.ID, 10),
			Internal: e.Internal, Amount: emi.FormatMinor(e.Amount) + " " + e.Currency, At: FmtTime(e.CreatedAt)}
		if e.Account != "" {
			row.Account, row.AccountHref, row.Balance, row.BalanceID = e.Account, AccountHref(e.Account), ShortID(e.Balance), e.Balance
			row.BalanceAfter = emi.FormatMinor(e.BalanceAfter)
		}
		v.Entries = append(v.Entries, row)
	}
	for _, e := range t.Audit {
		v.Audit = append(v.Audit, AuditRow(r, e))
	}
	p.NameAuditIDs(r, v.Audit)
	if CanDo(r, kernel.ViewAudit) {
		v.AuditHref = "/backoffice/audit?resource_type=transfer&resource_token=" + url.QueryEscape(t.Token)
	}
	if transfers.Reversible(t.Transfer) && CanDo(r, staff.DecideOp(transfers.ReversalFlow.Control)) {
		rv, err := p.transferReversal(r, t, f)
		if err != nil {
			p.RenderError(w, r, err)
			return
		}
		v.Reversal = rv
	}
	if p.d.Sandbox && t.Type == emi.TransferOutgoing && CanDo(r, accounts.Manage) {
		act := &pages.TransferActions{Base: TransferHref(t.Token), CanComplete: t.CanComplete(),
			CanReturn: t.CanReturn()}
		if f != nil && !f.reversal {
			act.Reason, act.Errs = f.reason, f.errs
		}
		v.Actions = act
	}
	p.RenderPrivate(w, r, status, "Transfer · "+emi.FormatMinor(t.Amount)+" "+t.Currency, pages.TransferDetail(v))
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
		add("Sort code", FmtSortCode(c.SortCode), true)
		add("Account number", c.AccountNumber, true)
		if c.CardLast4 != "" {
			add("Card", CardLast4(c.CardLast4), true)
		}
		add("Scheme", c.Scheme, false)
		return s, nil
	}
	a, err := p.d.Accounts.Get(r.Context(), account)
	if err != nil {
		return s, err
	}
	kind, ownerHref, err := p.ownerLinks(r).Of(a.Account)
	if err != nil {
		return s, err
	}
	s.Details = []pages.KV{{Label: "Account", Value: account, Href: AccountHref(account), Mono: true},
		{Label: "Owner", Value: FirstNonEmpty(a.OwnerName, "(no name)"), Href: ownerHref}, {Label: "Owner type", Value: kind},
		{Label: "Account status", Value: a.Status, Tone: ToneOrNeutral(AccountTone(a.Status))},
		p.PartnerNames(r).KV(r, "Partner", a.PartnerID)}
	if ibanOf != "" {
		s.Details = append(s.Details, pages.KV{Label: "IBAN", Value: ibanOf, Mono: true})
	}
	s.Details = append(s.Details, pages.KV{Label: "Balance", Value: balance, Mono: true})
	if a.Virtual {
		s.Details = append(s.Details, pages.KV{Label: "Main account", Value: a.Main, Href: AccountHref(a.Main), Mono: true})
	}
	return s, nil
}

// transferToken is the transfer of an action, or "" after answering 404.
func (p *Portal) transferToken(w http.ResponseWriter, r *http.Request) string {
	token := Param(r, "transfer")
	if !LooksLikeToken(token) {
		p.RenderError(w, r, emi.ErrTransferNotFound)
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
		p.FlashError(w, r, err, TransferHref(token))
		return
	}
	p.Flash(r.Context(), "ok", "Payment completed (sandbox): the partner is told (transfer.completed). No money moved.")
	Redirect(w, r, TransferHref(token))
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
			errs, banner := FieldErrors(err)
			p.Flash(r.Context(), "bad", banner)
			p.renderTransferPage(w, r, http.StatusUnprocessableEntity, &transferForm{reason: reason, errs: errs})
			return
		}
		p.FlashError(w, r, err, TransferHref(token))
		return
	}
	p.Flash(r.Context(), "ok", "Payment returned (sandbox): the amount is credited back and the partner is told (transfer.returned).")
	Redirect(w, r, TransferHref(token))
}

// transferReversal builds the reversal panel of an internal transfer.
func (p *Portal) transferReversal(r *http.Request, t transfers.StaffTransfer, f *transferForm) (*pages.TransferReversal, error) {
	req, can, pending, err := p.d.Transfers.PendingReversal(r.Context(), t.Token)
	if err != nil {
		return nil, err
	}
	rv := &pages.TransferReversal{Base: TransferHref(t.Token), CanRequest: transfers.CanRequestReversal(r.Context(), t.Transfer, pending)}
	if pending {
		by, _ := ActorOf(r, req.ProposedBy, p.StaffNames(r), nil)
		rv.Pending, rv.By, rv.Reason, rv.At = true, by, req.Reason, FmtTime(req.ProposedAt)
		rv.Mine, rv.CanApprove, rv.CanReject, rv.WhyNot = can.Withdraw, can.Approve, can.Reject, can.WhyNotApprove
		rv.Seen = "?request=" + url.QueryEscape(req.ID)
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
			errs, banner := FieldErrors(err)
			p.Flash(r.Context(), "bad", banner)
			p.renderTransferPage(w, r, http.StatusUnprocessableEntity, &transferForm{reason: reason, errs: errs, reversal: true})
			return
		}
		p.FlashError(w, r, err, TransferHref(token))
		return
	}
	p.Flash(r.Context(), "ok", "Reversal requested: a second staff member must approve it. Nothing has moved yet.")
	Redirect(w, r, TransferHref(token))
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
		if _, err := p.d.Transfers.DecideReversal(r.Context(), token, approve, r.URL.Query().Get("request")); err != nil {
			p.FlashError(w, r, err, TransferHref(token))
			return
		}
		if approve {
			p.Flash(r.Context(), "ok", "Transfer reversed: the amount is back on the source balance and both partners are told (transfer.returned).")
		} else {
			p.Flash(r.Context(), "ok", "Reversal request withdrawn. Nothing moved.")
		}
		Redirect(w, r, TransferHref(token))
	}
}

// moneyMessages are the texts of the money codes (suspense, adjustments,
// and the transfer codes every money screen shows: transfer page,
// statements, simulators, card payments). One text per code, here only.
var moneyMessages = map[string]string{
	emi.ErrSuspenseNotFound.Key:           "There is no such suspense item.",
	emi.ErrSuspenseResolved.Key:           "This suspense item was already assigned or returned (perhaps by a colleague just now), so nothing was changed.",
	emi.ErrAdjustmentNotFound.Key:         "There is no such adjustment request.",
	emi.ErrAdjustmentDecided.Key:          "This adjustment was already approved or rejected (perhaps by a colleague just now), so nothing was changed.",
	emi.ErrSuspenseAssignmentPending.Key:  "This item already has an assignment waiting for a second staff member, so nothing was changed: approve or reject that request first.",
	emi.ErrSuspenseAssignmentNotFound.Key: "There is no such assignment request.",
	emi.ErrSuspenseAssignmentDecided.Key:  "This assignment request was already approved, rejected or withdrawn (perhaps by a colleague just now), so nothing was changed.",
	emi.ErrTransferValidation.Key:         "Nothing was changed: please correct the marked fields.",
	emi.ErrTransferNotFound.Key:           "There is no such transfer.",
	emi.ErrInsufficientFunds.Key:          "That is more than the balance's available amount, so nothing was changed.",
	emi.ErrTransferAccountUnusable.Key:    "The account (or its main account) is blocked or terminated, so nothing was changed.",
	emi.ErrCurrencyMismatch.Key:           "The balance is in another currency, so nothing was changed.",
	emi.ErrDestinationNotFound.Key:        "That matches no balance held in emi, so nothing was changed.",
	emi.ErrTransferInvalidTransition.Key:  "The state does not allow this any more (it was settled, returned or decided meanwhile), so nothing was changed.",
}

func init() {
	for k, v := range moneyMessages {
		if _, dup := messages[k]; dup {
			panic("portal: two texts for " + k)
		}
		messages[k] = v
	}
}

// moneyRefused answers a refused money action: 403, 404 (an unknown item)
// and 500 pages; a flash on the page the action came from otherwise.
func (p *Portal) moneyRefused(w http.ResponseWriter, r *http.Request, err error, back string) {
	switch {
	case ErrorIs(err, emi.ErrFourEyes):
		p.Flash(r.Context(), "bad", Message(emi.AsError(err)))
		Redirect(w, r, back)
		return
	case ErrorIs(err, emi.ErrSuspenseNotFound), ErrorIs(err, emi.ErrAdjustmentNotFound):
		p.RenderError(w, r, err)
		return
	}
	switch emi.AsError(err).Kind {
	case emi.KindForbidden, emi.KindInternal:
		p.RenderError(w, r, err)
		return
	}
	e := emi.AsError(err)
	msg := Message(e)
	for _, f := range e.Fields {
		msg += " " + f.Field + ": " + f.Message + "."
	}
	p.Flash(r.Context(), "bad", msg)
	Redirect(w, r, back)
}
