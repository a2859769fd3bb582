package accountsui

import (
	"net/http"
	"strings"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/transfers"
	"emi/views/accountsview"
	"emi/views/components"
)

// The money section of an account's page: its pending adjustments, the
// request form and, in the sandbox, the incoming payment simulator. The
// actions themselves are the transfers area's (transfers_adjustments.go,
// transfers_incoming.go), which answer a refused form on this page.

// accountIdentifiers are the options of an account page's simulator.
func accountIdentifiers(a emi.Account) []components.Option {
	var out []components.Option
	for _, b := range a.Balances {
		if a.Virtual {
			if iban := a.VirtualIBANs[b.Currency]; iban != "" {
				out = append(out, components.Option{Value: "iban:" + iban, Label: b.Currency + " IBAN " + iban})
			}
			continue
		}
		if iban := deref(b.IBAN); iban != "" {
			out = append(out, components.Option{Value: "iban:" + iban, Label: b.Currency + " IBAN " + iban})
		}
		if n := deref(b.AccountNumber); n != "" {
			out = append(out, components.Option{Value: "uk:" + deref(b.SortCode) + ":" + n,
				Label: b.Currency + " sort code " + frame.FmtSortCode(deref(b.SortCode)) + " account " + n})
		}
		out = append(out, components.Option{Value: "balance:" + b.Token, Label: b.Currency + " balance (card top-up)"})
	}
	out = append(out, components.Option{Value: "account:" + a.Token, Label: "the account (card top-up)"})
	return out
}

// AdjustmentRows lays out adjustment requests with the actions the
// signed-in user may take, as the decision engine answers.
func (p *Pages) AdjustmentRows(r *http.Request, list []emi.Adjustment) []accountsview.AdjustmentRow {
	can := p.adjustments.Capabilities(r.Context(), list)
	rows := make([]accountsview.AdjustmentRow, len(list))
	for i, a := range list {
		row := accountsview.AdjustmentRow{Token: a.Token, Requested: frame.FmtTime(a.RequestedAt), Account: a.Account,
			Direction: a.Direction, Amount: emi.FormatMinor(a.Amount), Currency: a.Currency, Reason: a.Reason, Status: a.Status,
			Decided: frame.FmtTimeOrEmpty(a.DecidedAt), Note: a.DecisionNote, Mine: can[a.Token].Withdraw}
		if frame.CanDo(r, accounts.View) {
			row.AccountHref = frame.AccountHref(a.Account)
		}
		row.RequestedBy = frame.StaffName(r, a.RequestedBy, a.RequestedByName)
		if a.DecidedBy != "" {
			row.DecidedBy = frame.StaffName(r, a.DecidedBy, a.DecidedByName)
		}
		row.StatusTone = frame.AdjustmentTone(a.Status)
		row.CanApprove, row.CanReject, row.WhyNot = can[a.Token].Approve, can[a.Token].Reject || can[a.Token].Withdraw, can[a.Token].WhyNotApprove
		rows[i] = row
	}
	return rows
}

// accountMoney is the money section of an account page: its pending
// adjustments, the request form and the sandbox's simulator, for roles
// that see or move money.
func (p *Pages) accountMoney(r *http.Request, a accounts.AccountView, f *accountForm) (*accountsview.AccountMoney, error) {
	if p.adjustments == nil || !frame.CanDo(r, transfers.ViewMoney) {
		return nil, nil
	}
	pending, err := p.adjustments.Pending(r.Context(), a.Token)
	if err != nil {
		return nil, err
	}
	m := &accountsview.AccountMoney{Base: frame.AccountHref(a.Token), Pending: p.AdjustmentRows(r, pending)}
	for i := range m.Pending {
		m.Pending[i].Back = frame.AccountHref(a.Token)
	}
	manage := frame.CanDo(r, transfers.ManageMoney)
	for _, b := range a.Balances {
		m.Currencies = append(m.Currencies, b.Currency)
	}
	m.CanRequest = transfers.CanRequestAdjustment(r.Context(), a.Account, len(m.Currencies))
	if f != nil && f.which == "adjust" {
		m.Request = f.kept
	}
	if manage && p.sandbox && p.incoming != nil {
		m.Simulate = &accountsview.SimulateForm{Action: frame.AccountHref(a.Token) + "/incoming", Identifiers: accountIdentifiers(a.Account),
			Currencies: m.Currencies}
		if f != nil && f.which == "simulate" {
			m.Simulate.Kept = f.kept
		}
	}
	return m, nil
}

// adjustmentRequest (POST /accounts/{account}/adjustments) asks for a
// manual adjustment of the account's balance.
func (p *Pages) adjustmentRequest(w http.ResponseWriter, r *http.Request) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	back := frame.AccountHref(token)
	form := components.KeepForm("adjust", r.PostForm, "direction", "currency", "amount", "reason")
	minor, ok := emi.ParseTypedAmount(form.Value("amount"))
	if !ok {
		// The service's own checks still run, so every refused field is
		// named at once.
		form.Refuse("amount", frame.AmountFormat)
	}
	a, err := p.adjustments.Request(r.Context(), emi.AdjustmentRequest{Account: token, Currency: form.Value("currency"),
		Direction: form.Value("direction"), Amount: minor, Reason: form.Value("reason")})
	if !ok && (err == nil || emi.AsError(err).Kind != emi.KindInvalid) {
		// An unparsable amount reached the service as 0 and was refused
		// there; if it was not (never expected), nothing may be kept.
		err = emi.ErrReviewValidation
	}
	if err != nil {
		p.adjustmentRefused(w, r, err, form, token)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Adjustment requested ("+a.Direction+" "+emi.FormatMinor(a.Amount)+" "+a.Currency+
		"). Awaiting a second staff member: someone other than you must approve it.")
	frame.Redirect(w, r, back)
}

// adjustmentRefused answers a refused adjustment request, so nothing typed
// is lost: the account page again (422) with the form open, what was typed
// kept, and each error beside its field: invalid input by the service's
// field names, a debit over the available balance on the amount, a currency
// the account has no balance in on the balance. Other refusals are the
// usual flash on the page.
func (p *Pages) adjustmentRefused(w http.ResponseWriter, r *http.Request, err error, form *components.Form, token string) {
	e := emi.AsError(err)
	if e.Kind != emi.KindInvalid && e.Kind != emi.KindConflict {
		p.frame.FlashMoneyError(w, r, err, frame.AccountHref(token))
		return
	}
	banner := frame.KeepErrors(form, err, nil)
	switch {
	case form.Value("amount") == "":
		form.Errs["amount"] = "is required: 12.50 or 12,50"
	case len(form.Errs) == 0 && frame.ErrorIs(err, emi.ErrCurrencyMismatch):
		form.Errs["currency"] = banner
	case len(form.Errs) == 0:
		form.General = banner
	}
	p.frame.Flash(r.Context(), "bad", "Nothing was requested: "+banner+" See the adjustment form below.")
	p.renderAccountPage(w, r, http.StatusUnprocessableEntity, &accountForm{which: "adjust", kept: form})
}

// accountSimulate (POST /accounts/{account}/incoming, sandbox only)
// simulates a payment to one of the account's identifiers.
func (p *Pages) accountSimulate(w http.ResponseWriter, r *http.Request) {
	if !p.sandbox {
		p.frame.NotFound(w, r)
		return
	}
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	p.SimulateIncoming(w, r, identifierParty(r.PostFormValue("to")), frame.AccountHref(token), func(kept *components.Form) {
		p.renderAccountPage(w, r, http.StatusUnprocessableEntity, &accountForm{which: "simulate", kept: kept})
	})
}

// SimulateIncoming books the simulated payment of the form with destination dest. A
// refused payment answers the page again (422, by again) with the form
// open, what was typed kept and each error beside its field.
func (p *Pages) SimulateIncoming(w http.ResponseWriter, r *http.Request, dest emi.TransferParty, back string, again func(*components.Form)) {
	form := components.KeepForm("simulate", r.PostForm, simulateFields...)
	minor, ok := emi.ParseTypedAmount(form.Value("amount"))
	if !ok {
		form.Refuse("amount", frame.AmountFormat)
		p.frame.Flash(r.Context(), "bad", "The payment was not made: please correct the marked fields.")
		again(form)
		return
	}
	in := emi.IncomingCredit{Scheme: form.Value("scheme"), Amount: emi.Amount(minor), Currency: form.Value("currency"),
		Reference: form.Value("reference"), Destination: dest, Payer: emi.IncomingPayer{Name: form.Value("payer_name"),
			IBAN: form.Value("payer_iban"), SortCode: form.Value("payer_sort_code"),
			AccountNumber: form.Value("payer_account_number"), CardLast4: form.Value("payer_card_last4")}}
	res, err := p.incoming.Credit(r.Context(), in)
	if err != nil {
		switch emi.AsError(err).Kind {
		case emi.KindForbidden, emi.KindInternal:
			p.frame.FlashMoneyError(w, r, err, back)
			return
		}
		banner := frame.KeepErrors(form, err, func(field string) string {
			// The destination is the identifier chosen (account page) or
			// typed (suspense page: to_iban, to_sort_code…).
			if rest, ok := strings.CutPrefix(field, "destination."); ok {
				if form.Value("to_"+rest) != "" {
					return "to_" + rest
				}
				return "to"
			}
			return field
		})
		if !form.Refused() {
			form.General = banner
		}
		p.frame.Flash(r.Context(), "bad", "The payment was not made: "+banner)
		again(form)
		return
	}
	if res.Status == emi.IncomingCredited {
		p.frame.Flash(r.Context(), "ok", "Credited: "+emi.FormatMinor(minor)+" "+res.Transfer.Currency+" to account "+
			res.Transfer.DestinationAccount+" (transfer "+res.Transfer.Token+"). The partner is told (transfer.completed).")
	} else {
		p.frame.Flash(r.Context(), "warn", "The payment could not be credited: it is in the suspense queue (item "+res.SuspenseItem+").")
		back = "/backoffice/suspense"
	}
	frame.Redirect(w, r, back)
}

// identifierParty decodes an account page's identifier option:
// iban:<IBAN>, uk:<sort code>:<account number>, account:<token>,
// balance:<token>.
func identifierParty(v string) emi.TransferParty {
	kind, rest, _ := strings.Cut(v, ":")
	switch kind {
	case "iban":
		return emi.TransferParty{IBAN: rest}
	case "uk":
		sort, number, _ := strings.Cut(rest, ":")
		return emi.TransferParty{SortCode: sort, AccountNumber: number}
	case "account":
		return emi.TransferParty{Account: rest}
	case "balance":
		return emi.TransferParty{Balance: rest}
	}
	return emi.TransferParty{}
}

// simulateFields are the simulator's fields, in form order.
var simulateFields = []string{"scheme", "amount", "currency", "reference", "payer_name", "payer_iban", "payer_sort_code",
	"payer_account_number", "payer_card_last4", "to", "to_iban", "to_sort_code", "to_account_number", "to_account", "to_balance"}
