package portal

import (
	"net/http"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/transfers"
	"emi/views/pages"
)

// The money section of an account's page: its pending adjustments, the
// request form and, in the sandbox, the incoming payment simulator. The
// actions themselves are the transfers area's (transfers_adjustments.go,
// transfers_incoming.go), which answer a refused form on this page.

// accountIdentifiers are the options of an account page's simulator.
func accountIdentifiers(a emi.Account) []pages.Option {
	var out []pages.Option
	for _, b := range a.Balances {
		if a.Virtual {
			if iban := a.VirtualIBANs[b.Currency]; iban != "" {
				out = append(out, pages.Option{Value: "iban:" + iban, Label: b.Currency + " IBAN " + iban})
			}
			continue
		}
		if iban := deref(b.IBAN); iban != "" {
			out = append(out, pages.Option{Value: "iban:" + iban, Label: b.Currency + " IBAN " + iban})
		}
		if n := deref(b.AccountNumber); n != "" {
			out = append(out, pages.Option{Value: "uk:" + deref(b.SortCode) + ":" + n,
				Label: b.Currency + " sort code " + FmtSortCode(deref(b.SortCode)) + " account " + n})
		}
		out = append(out, pages.Option{Value: "balance:" + b.Token, Label: b.Currency + " balance (card top-up)"})
	}
	out = append(out, pages.Option{Value: "account:" + a.Token, Label: "the account (card top-up)"})
	return out
}

// adjustmentRows lays out adjustment requests with the actions the
// signed-in user may take, as the decision engine answers.
func (p *Portal) adjustmentRows(r *http.Request, list []emi.Adjustment) []pages.AdjustmentRow {
	can := p.d.Adjustments.Capabilities(r.Context(), list)
	rows := make([]pages.AdjustmentRow, len(list))
	for i, a := range list {
		row := pages.AdjustmentRow{Token: a.Token, Requested: FmtTime(a.RequestedAt), Account: a.Account,
			Direction: a.Direction, Amount: emi.FormatMinor(a.Amount), Currency: a.Currency, Reason: a.Reason, Status: a.Status,
			Decided: FmtTimeOrEmpty(a.DecidedAt), Note: a.DecisionNote, Mine: can[a.Token].Withdraw}
		if CanDo(r, accounts.View) {
			row.AccountHref = AccountHref(a.Account)
		}
		row.RequestedBy = StaffName(r, a.RequestedBy, a.RequestedByName)
		if a.DecidedBy != "" {
			row.DecidedBy = StaffName(r, a.DecidedBy, a.DecidedByName)
		}
		row.StatusTone = AdjustmentTone(a.Status)
		row.CanApprove, row.CanReject, row.WhyNot = can[a.Token].Approve, can[a.Token].Reject || can[a.Token].Withdraw, can[a.Token].WhyNotApprove
		rows[i] = row
	}
	return rows
}

// accountMoney is the money section of an account page: its pending
// adjustments, the request form and the sandbox's simulator, for roles
// that see or move money.
func (p *Portal) accountMoney(r *http.Request, a accounts.AccountView, f *accountForm) (*pages.AccountMoney, error) {
	if p.d.Adjustments == nil || !CanDo(r, transfers.ViewMoney) {
		return nil, nil
	}
	pending, err := p.d.Adjustments.Pending(r.Context(), a.Token)
	if err != nil {
		return nil, err
	}
	m := &pages.AccountMoney{Base: AccountHref(a.Token), Pending: p.adjustmentRows(r, pending)}
	for i := range m.Pending {
		m.Pending[i].Back = AccountHref(a.Token)
	}
	manage := CanDo(r, transfers.ManageMoney)
	for _, b := range a.Balances {
		m.Currencies = append(m.Currencies, b.Currency)
	}
	m.CanRequest = transfers.CanRequestAdjustment(r.Context(), a.Account, len(m.Currencies))
	if f != nil && f.which == "adjust" {
		m.Request = f.kept
	}
	if manage && p.d.Sandbox && p.d.Incoming != nil {
		m.Simulate = &pages.SimulateForm{Action: AccountHref(a.Token) + "/incoming", Identifiers: accountIdentifiers(a.Account),
			Currencies: m.Currencies}
		if f != nil && f.which == "simulate" {
			m.Simulate.Kept = f.kept
		}
	}
	return m, nil
}
