package transfersui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
	"emi/internal/service/transfers"
	"emi/views/components"
	"emi/views/transfersview"
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
func (p *Pages) transferDetail(w http.ResponseWriter, r *http.Request) {
	p.renderTransferPage(w, r, http.StatusOK, nil)
}

// renderTransferPage renders a transfer: both sides, status, the journal
// entries of its transactions and its audit rows, with the sandbox's
// settlement buttons for an outgoing payment.
func (p *Pages) renderTransferPage(w http.ResponseWriter, r *http.Request, status int, f *transferForm) {
	token := frame.Param(r, "transfer")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrTransferNotFound)
		return
	}
	t, err := p.transfers.StaffGet(r.Context(), token)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := transfersview.TransferView{Token: t.Token, Status: t.Status, StatusTone: frame.TransferTone(t.Status)}
	partner := p.frame.PartnerNames(r).KV(r, "Partner (sender)", frame.FirstNonEmpty(t.PartnerID, t.DestinationPartner))
	if t.PartnerID == "" {
		partner.Label = "Partner (receiver)"
	}
	v.Details = []components.KV{{Label: "Type", Value: t.Type}, {Label: "Status", Value: t.Status, Tone: frame.ToneOrNeutral(frame.TransferTone(t.Status))},
		{Label: "Amount", Value: emi.FormatMinor(t.Amount) + " " + t.Currency, Mono: true}, {Label: "Reference", Value: t.Reference},
		partner, {Label: "Created (UTC)", Value: frame.FmtTime(t.CreatedAt), Mono: true}, {Label: "Updated (UTC)", Value: frame.FmtTime(t.UpdatedAt), Mono: true}}
	if t.Status == emi.TransferReturned {
		v.Details = append(v.Details, components.KV{Label: "Return reason", Value: t.ReturnReason})
	}
	v.Details = append(v.Details, components.KV{Label: "Transfer token", Value: t.Token, Mono: true})
	src, err := p.transferSide(r, "Source", t.SourceAccount, t.SourceBalance, t.SourceIBAN, t.Type == emi.TransferIncoming, t.Counterparty)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	dst, err := p.transferSide(r, "Destination", t.DestinationAccount, t.DestinationBalance, t.DestinationIBAN, t.Type == emi.TransferOutgoing, t.Counterparty)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v.Sides = []transfersview.TransferSideView{src, dst}
	for _, e := range t.Entries {
		row := transfersview.LedgerEntryRow{Txn: frame.ShortID(e.TxnToken), TxnID: e.TxnToken, Kind: frame.TxnKindLabel(e.Kind), Entry: strconv.FormatInt(e.ID, 10),
			Internal: e.Internal, Amount: emi.FormatMinor(e.Amount) + " " + e.Currency, At: frame.FmtTime(e.CreatedAt)}
		if e.Account != "" {
			row.Account, row.AccountHref, row.Balance, row.BalanceID = e.Account, frame.AccountHref(e.Account), frame.ShortID(e.Balance), e.Balance
			row.BalanceAfter = emi.FormatMinor(e.BalanceAfter)
		}
		v.Entries = append(v.Entries, row)
	}
	for _, e := range t.Audit {
		v.Audit = append(v.Audit, frame.AuditRow(r, e))
	}
	p.frame.NameAuditIDs(r, v.Audit)
	if frame.CanDo(r, kernel.ViewAudit) {
		v.AuditHref = "/backoffice/audit?resource_type=transfer&resource_token=" + url.QueryEscape(t.Token)
	}
	if transfers.Reversible(t.Transfer) && frame.CanDo(r, staff.DecideOp(transfers.ReversalFlow.Control)) {
		rv, err := p.transferReversal(r, t, f)
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		v.Reversal = rv
	}
	if p.sandbox && t.Type == emi.TransferOutgoing && frame.CanDo(r, accounts.Manage) {
		act := &transfersview.TransferActions{Base: frame.TransferHref(t.Token), CanComplete: t.CanComplete(),
			CanReturn: t.CanReturn()}
		if f != nil && !f.reversal {
			act.Reason, act.Errs = f.reason, f.errs
		}
		v.Actions = act
	}
	p.frame.RenderPrivate(w, r, status, "Transfer · "+emi.FormatMinor(t.Amount)+" "+t.Currency, transfersview.TransferDetail(v))
}

// transferSide lays out one side: an account of emi (linked, with its
// owner), or the external party of an outgoing or incoming payment.
func (p *Pages) transferSide(r *http.Request, title, account, balance, ibanOf string, external bool, c emi.Counterparty) (transfersview.TransferSideView, error) {
	s := transfersview.TransferSideView{Title: title}
	if external || account == "" {
		s.Title += " (external)"
		add := func(label, value string, mono bool) {
			if value != "" {
				s.Details = append(s.Details, components.KV{Label: label, Value: value, Mono: mono})
			}
		}
		add("Name", c.Name, false)
		add("IBAN", c.IBAN, true)
		add("BIC", c.BIC, true)
		add("Sort code", frame.FmtSortCode(c.SortCode), true)
		add("Account number", c.AccountNumber, true)
		if c.CardLast4 != "" {
			add("Card", frame.CardLast4(c.CardLast4), true)
		}
		add("Scheme", c.Scheme, false)
		return s, nil
	}
	a, err := p.accounts.Get(r.Context(), account)
	if err != nil {
		return s, err
	}
	kind, ownerHref, err := p.frame.OwnerLinks(r).Of(a.Account)
	if err != nil {
		return s, err
	}
	s.Details = []components.KV{{Label: "Account", Value: account, Href: frame.AccountHref(account), Mono: true},
		{Label: "Owner", Value: frame.FirstNonEmpty(a.OwnerName, "(no name)"), Href: ownerHref}, {Label: "Owner type", Value: kind},
		{Label: "Account status", Value: a.Status, Tone: frame.ToneOrNeutral(frame.AccountTone(a.Status))},
		p.frame.PartnerNames(r).KV(r, "Partner", a.PartnerID)}
	if ibanOf != "" {
		s.Details = append(s.Details, components.KV{Label: "IBAN", Value: ibanOf, Mono: true})
	}
	s.Details = append(s.Details, components.KV{Label: "Balance", Value: balance, Mono: true})
	if a.Virtual {
		s.Details = append(s.Details, components.KV{Label: "Main account", Value: a.Main, Href: frame.AccountHref(a.Main), Mono: true})
	}
	return s, nil
}

// transferToken is the transfer of an action, or "" after answering 404.
func (p *Pages) transferToken(w http.ResponseWriter, r *http.Request) string {
	token := frame.Param(r, "transfer")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrTransferNotFound)
		return ""
	}
	return token
}

// transferComplete (POST /transfers/{transfer}/complete, sandbox only)
// plays the receiving bank accepting an outgoing payment.
func (p *Pages) transferComplete(w http.ResponseWriter, r *http.Request) {
	token := p.transferToken(w, r)
	if token == "" {
		return
	}
	if _, err := p.transfers.StaffComplete(r.Context(), token); err != nil {
		p.frame.FlashError(w, r, err, frame.TransferHref(token))
		return
	}
	p.frame.Flash(r.Context(), "ok", "Payment completed (sandbox): the partner is told (transfer.completed). No money moved.")
	frame.Redirect(w, r, frame.TransferHref(token))
}

// transferReturn (POST /transfers/{transfer}/return, sandbox only) plays
// the receiving bank sending an outgoing payment back.
func (p *Pages) transferReturn(w http.ResponseWriter, r *http.Request) {
	token := p.transferToken(w, r)
	if token == "" {
		return
	}
	reason := r.PostFormValue("reason")
	if _, err := p.transfers.StaffReturn(r.Context(), token, reason); err != nil {
		if emi.AsError(err).Kind == emi.KindInvalid {
			errs, banner := frame.FieldErrors(err)
			p.frame.Flash(r.Context(), "bad", banner)
			p.renderTransferPage(w, r, http.StatusUnprocessableEntity, &transferForm{reason: reason, errs: errs})
			return
		}
		p.frame.FlashError(w, r, err, frame.TransferHref(token))
		return
	}
	p.frame.Flash(r.Context(), "ok", "Payment returned (sandbox): the amount is credited back and the partner is told (transfer.returned).")
	frame.Redirect(w, r, frame.TransferHref(token))
}

// transferReversal builds the reversal panel of an internal transfer.
func (p *Pages) transferReversal(r *http.Request, t transfers.StaffTransfer, f *transferForm) (*transfersview.TransferReversal, error) {
	req, can, pending, err := p.transfers.PendingReversal(r.Context(), t.Token)
	if err != nil {
		return nil, err
	}
	rv := &transfersview.TransferReversal{Base: frame.TransferHref(t.Token), CanRequest: transfers.CanRequestReversal(r.Context(), t.Transfer, pending)}
	if pending {
		by, _ := frame.ActorOf(r, req.ProposedBy, p.frame.StaffNames(r), nil)
		rv.Pending, rv.By, rv.Reason, rv.At = true, by, req.Reason, frame.FmtTime(req.ProposedAt)
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
func (p *Pages) transferReversalRequest(w http.ResponseWriter, r *http.Request) {
	token := p.transferToken(w, r)
	if token == "" {
		return
	}
	reason := r.PostFormValue("reason")
	if err := p.transfers.RequestReversal(r.Context(), token, reason); err != nil {
		if emi.AsError(err).Kind == emi.KindInvalid {
			errs, banner := frame.FieldErrors(err)
			p.frame.Flash(r.Context(), "bad", banner)
			p.renderTransferPage(w, r, http.StatusUnprocessableEntity, &transferForm{reason: reason, errs: errs, reversal: true})
			return
		}
		p.frame.FlashError(w, r, err, frame.TransferHref(token))
		return
	}
	p.frame.Flash(r.Context(), "ok", "Reversal requested: a second staff member must approve it. Nothing has moved yet.")
	frame.Redirect(w, r, frame.TransferHref(token))
}

// transferReversalDecide (POST /transfers/{transfer}/reversal/approve and
// .../reject) decides a pending reversal: approval by someone other than
// the requester moves the money back. Buttons, nothing typed: a refusal is
// a flash.
func (p *Pages) transferReversalDecide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := p.transferToken(w, r)
		if token == "" {
			return
		}
		if _, err := p.transfers.DecideReversal(r.Context(), token, approve, r.URL.Query().Get("request")); err != nil {
			p.frame.FlashError(w, r, err, frame.TransferHref(token))
			return
		}
		if approve {
			p.frame.Flash(r.Context(), "ok", "Transfer reversed: the amount is back on the source balance and both partners are told (transfer.returned).")
		} else {
			p.frame.Flash(r.Context(), "ok", "Reversal request withdrawn. Nothing moved.")
		}
		frame.Redirect(w, r, frame.TransferHref(token))
	}
}

// transferHeld (POST /transfers/{transfer}/held) releases or returns a
// transfer transaction monitoring held for review: one compliance
// officer, never its initiator (transfers.DecideHeld). back is the page
// the decision came from (a case), else the transfer's.
func (p *Pages) transferHeld(w http.ResponseWriter, r *http.Request) {
	token := p.transferToken(w, r)
	if token == "" {
		return
	}
	back := frame.TransferHref(token)
	if b := r.PostFormValue("back"); strings.HasPrefix(b, "/backoffice/monitoring/cases/") && frame.LooksLikeToken(strings.TrimPrefix(b, "/backoffice/monitoring/cases/")) {
		back = b
	}
	decision := r.PostFormValue("decision")
	if _, err := p.transfers.DecideHeld(r.Context(), token, decision, r.PostFormValue("reason")); err != nil {
		p.frame.FlashError(w, r, err, back)
		return
	}
	done := "Released: the money moved on."
	if decision == transfers.HeldReturn {
		done = "Returned: the money is back with the sender."
	}
	p.frame.Flash(r.Context(), "ok", done)
	frame.Redirect(w, r, back)
}
