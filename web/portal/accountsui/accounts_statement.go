package accountsui

import (
	"emi/web/portal/frame"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/views/accountsview"
)

// An account's statement (on the account page) with its CSV export. Rules
// (ranges, scoping, audit of exports) live in service accounts.

// statementPerPage is the account page's statement page size.
const statementPerPage = 50

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
		return frame.AccountHref(account) + "#statement"
	}
	return frame.AccountHref(account) + "?" + q.Encode() + "#statement"
}

// accountStatement lays out the statement section of an account's page
// from the query (from, to, page). invalid is true when the range was
// refused (its errors are in the view).
func (p *Pages) accountStatement(r *http.Request, a accounts.AccountView) (v *accountsview.StatementView, invalid bool, err error) {
	q := r.URL.Query()
	from, to := q.Get("from"), q.Get("to") // the service trims them
	page, _ := strconv.Atoi(q.Get("page"))
	page = min(max(page, 1), frame.MaxPage)
	v = &accountsview.StatementView{Action: frame.AccountHref(a.Token), From: from, To: to, OnMain: !a.Virtual}
	st, err := p.accounts.StaffStatementOf(r.Context(), a, accounts.StatementQuery{From: from, To: to, Page: page, Limit: statementPerPage})
	if err != nil {
		if emi.AsError(err).Kind != emi.KindInvalid {
			return nil, false, err
		}
		v.Errs, _ = frame.FieldErrors(err)
		return v, true, nil
	}
	csvQ := url.Values{}
	if from != "" {
		csvQ.Set("from", from)
	}
	if to != "" {
		csvQ.Set("to", to)
	}
	v.CSV = frame.AccountHref(a.Token) + "/statement.csv"
	if len(csvQ) > 0 {
		v.CSV += "?" + csvQ.Encode()
	}
	for _, b := range st.Balances {
		v.Balances = append(v.Balances, accountsview.StatementBalance{Currency: b.Currency, Opening: emi.FormatMinor(b.Opening),
			Closing: emi.FormatMinor(b.Closing)})
	}
	for _, l := range st.Lines {
		line := accountsview.StatementLine{At: frame.FmtTime(l.CreatedAt), Type: frame.TxnKindLabel(l.Kind), Reference: l.Reference,
			Counterparty: l.Counterparty.Name, CounterpartyIdent: strings.Join(frame.CounterpartyIdents(l.Counterparty), " · "), Amount: emi.FormatMinor(l.Amount),
			BalanceAfter: emi.FormatMinor(l.BalanceAfter), Currency: l.Currency, Credit: l.Amount > 0}
		if l.Transfer != "" {
			line.Transfer, line.TransferHref = frame.ShortID(l.Transfer), frame.TransferHref(l.Transfer)
		}
		if l.Account != a.Token {
			line.Account, line.AccountHref = frame.ShortID(l.Account)+" (virtual)", frame.AccountHref(l.Account)
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
func (p *Pages) accountStatementCSV(w http.ResponseWriter, r *http.Request) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	q := r.URL.Query()
	from, to := q.Get("from"), q.Get("to")
	st, err := p.accounts.StaffStatementExport(r.Context(), token, from, to)
	if err != nil {
		p.frame.RenderError(w, r, err)
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
	name := "statement-" + token[:8] + "-" + frame.FirstNonEmpty(strings.TrimSpace(from), "start") + "-" + frame.FirstNonEmpty(strings.TrimSpace(to), "now")
	frame.WriteCSV(w, name, rows)
}
