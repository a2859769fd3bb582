package accounts

import (
	"context"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/validate"
)

// Statements: an account's ledger entries, newest first, with the running
// balance (account_transactions, and the back office's account page and
// CSV export).
//
// Which entries an account shows: a virtual account shows the entries
// posted on it (its own movements, whose money is on its main account's
// balance); a main account shows every entry on its balances, its virtual
// accounts' movements included (each line names the account it was posted
// on). So the main account's statement reconciles: per balance, the
// newest line's balance_after is the balance's posted figure, and each
// line's balance_after is the one before it plus its amount. A virtual
// account's lines carry the main balance's running figure too, since that
// is the balance they moved.
//
// The other side of an internal transfer is named by its owner's name and
// identifiers; on the partner API, another partner's customer by its
// identifiers only (its name is blank), as transfer_details shows another
// partner's side by IBAN only. The back office shows every name.
//
// Dates are UTC days, both ends inclusive. The opening figure of a balance
// is its posted figure before the range (0 without a `from`), the closing
// figure its posted figure at the end of the range (the current posted
// figure without a `to`).

// StatementStore reads statements.
type StatementStore interface {
	// StatementLines returns the entries posted on accounts within
	// [from, to) (a zero time leaves that end open), newest first (by
	// time, then posting order), after the position after when it is not
	// nil, limit from offset, with the number of all that match (after
	// left out).
	StatementLines(ctx context.Context, accounts []string, from, to time.Time, after *LinePosition, limit, offset int) ([]emi.StatementLine, int64, error)
	// TransactionLine returns the position of the line the ledger
	// transaction txn (its token) shows as on accounts' statement (false
	// when it shows on none of them).
	TransactionLine(ctx context.Context, accounts []string, txn string) (LinePosition, bool, error)
	// StatementExportLines is StatementLines' first limit lines, without
	// the count.
	StatementExportLines(ctx context.Context, accounts []string, from, to time.Time, limit int) ([]emi.StatementLine, error)
	// PostedBefore returns each balance's posted figure just before t: the
	// running figure of its last entry before t, 0 when it has none.
	PostedBefore(ctx context.Context, balances []string, t time.Time) (map[string]int64, error)
}

// LinePosition is a line's place in a statement's order (newest first):
// its entry's time, then its posting order.
type LinePosition struct {
	At      time.Time
	EntryID int64
}

// MaxStatementLimit bounds a page of account_transactions.
const MaxStatementLimit = 100

// MaxStatementExport bounds the lines of one CSV export (a variable so
// that tests can lower it).
var MaxStatementExport = 100_000

// StatementQuery is what a caller asks of a statement: from and to as
// YYYY-MM-DD ("" leaves an end open), a page from 1 and a limit, and a
// cursor: the transaction of the previous page's last line, the page
// counting from the line after it.
type StatementQuery struct {
	From, To      string
	Page, Limit   int
	StartingAfter string
}

// parse checks q (13001 with every problem at once).
func (q StatementQuery) parse(maxLimit int) (emi.StatementFilter, error) {
	var bad kernel.Problems
	f := emi.StatementFilter{Page: q.Page, Limit: q.Limit, StartingAfter: q.StartingAfter}
	day := func(field, v string) time.Time {
		v = strings.TrimSpace(v)
		if v == "" {
			return time.Time{}
		}
		d, ok := validate.ParseDate(v)
		if !ok {
			bad.Add(field, "must be a date as YYYY-MM-DD")
			return time.Time{}
		}
		return d
	}
	f.From, f.To = day("from", q.From), day("to", q.To)
	if !f.From.IsZero() && !f.To.IsZero() && f.From.After(f.To) {
		bad.Add("from", "must not be after to")
	}
	bad.CheckPage(f.Page, f.Limit, maxLimit)
	if len(bad) > 0 {
		return f, emi.ErrAccountValidation.WithFields(bad...)
	}
	return f, nil
}

// Statement returns a page of the statement of one of the caller's
// accounts (account_transactions). 13001 for a bad query (a cursor that
// is not a transaction on the statement included, once the account is
// found), 13002 for an account that is not the caller's.
func (s *Accounts) Statement(ctx context.Context, token string, q StatementQuery) (emi.Statement, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrAccountNotFound)
	if err != nil {
		return emi.Statement{}, err
	}
	f, err := q.parse(MaxStatementLimit)
	if err != nil {
		return emi.Statement{}, err
	}
	a, err := s.store.Account(ctx, p.PartnerID, token, false)
	if err != nil {
		return emi.Statement{}, err
	}
	st, err := s.statement(ctx, a, f)
	// Another partner's customer is shown by its identifiers only, as
	// transfer_details shows another partner's side by IBAN only.
	for i := range st.Lines {
		if l := &st.Lines[i]; l.CounterpartyPartner != "" && l.CounterpartyPartner != p.PartnerID {
			l.Counterparty.Name = ""
		}
	}
	return st, err
}

// StaffStatement is Statement for the back office (emi.PermViewAccounts),
// on any account.
func (s *Accounts) StaffStatement(ctx context.Context, token string, q StatementQuery) (emi.Statement, error) {
	if err := View.Require(ctx); err != nil {
		return emi.Statement{}, err
	}
	f, err := q.parse(MaxStatementLimit)
	if err != nil {
		return emi.Statement{}, err
	}
	a, err := s.store.Account(ctx, "", token, false)
	if err != nil {
		return emi.Statement{}, err
	}
	return s.statement(ctx, a, f)
}

// StaffStatementOf is StaffStatement on an account the caller has just
// read with Get: its balances and virtual accounts are not read again.
func (s *Accounts) StaffStatementOf(ctx context.Context, v AccountView, q StatementQuery) (emi.Statement, error) {
	if err := View.Require(ctx); err != nil {
		return emi.Statement{}, err
	}
	f, err := q.parse(MaxStatementLimit)
	if err != nil {
		return emi.Statement{}, err
	}
	accounts := []string{v.Token}
	if !v.Virtual {
		for _, x := range v.Virtuals {
			accounts = append(accounts, x.Token)
		}
	}
	return s.statementOn(ctx, v.Account, accounts, f)
}

// StaffStatementExport returns the lines of an account's statement in the
// range, at most MaxStatementExport (Truncated tells when there are more;
// no Total or Balances, which the export does not write), for the back
// office's CSV export (emi.PermViewAccounts), and records the export in the
// audit log: a statement is personal data leaving emi.
func (s *Accounts) StaffStatementExport(ctx context.Context, token, from, to string) (emi.Statement, error) {
	if err := View.Require(ctx); err != nil {
		return emi.Statement{}, err
	}
	limit := MaxStatementExport
	f, err := StatementQuery{From: from, To: to, Page: 1, Limit: limit}.parse(limit)
	if err != nil {
		return emi.Statement{}, err
	}
	a, err := s.store.Account(ctx, "", token, false)
	if err != nil {
		return emi.Statement{}, err
	}
	accounts, err := s.statementAccounts(ctx, a)
	if err != nil {
		return emi.Statement{}, err
	}
	// One line past the cap tells whether the export is cut short.
	lines, err := s.statements.StatementExportLines(ctx, accounts, f.From, dayAfter(f.To), limit+1)
	if err != nil {
		return emi.Statement{}, err
	}
	st := emi.Statement{Account: a.Token, Lines: lines}
	if len(lines) > limit {
		st.Lines, st.Truncated = lines[:limit], true
	}
	err = s.audit.Record(ctx, emi.AuditEntry{Action: "account.statement_export", ResourceType: "account", ResourceToken: a.Token,
		PartnerID: a.PartnerID, Changes: map[string]any{"from": from, "to": to, "lines": len(st.Lines), "truncated": st.Truncated,
			"format": "csv"}})
	return st, err
}

// statementAccounts is the accounts whose entries a's statement shows:
// a, and a main account's virtual accounts.
func (s *Accounts) statementAccounts(ctx context.Context, a emi.Account) ([]string, error) {
	accounts := []string{a.Token}
	if !a.Virtual {
		virtuals, err := s.store.VirtualsOf(ctx, a.Token)
		if err != nil {
			return nil, err
		}
		for _, v := range virtuals {
			accounts = append(accounts, v.Token)
		}
	}
	return accounts, nil
}

// dayAfter is the exclusive end of a range ending on day to (zero for
// an open end).
func dayAfter(to time.Time) time.Time {
	if to.IsZero() {
		return to
	}
	return to.AddDate(0, 0, 1)
}

// statement reads the lines and the balances' figures of a.
func (s *Accounts) statement(ctx context.Context, a emi.Account, f emi.StatementFilter) (emi.Statement, error) {
	accounts, err := s.statementAccounts(ctx, a)
	if err != nil {
		return emi.Statement{}, err
	}
	return s.statementOn(ctx, a, accounts, f)
}

// statementOn reads the lines of accounts (a and, for a main account, its
// virtual accounts) and the figures of a's balances.
func (s *Accounts) statementOn(ctx context.Context, a emi.Account, accounts []string, f emi.StatementFilter) (emi.Statement, error) {
	end := dayAfter(f.To)
	var after *LinePosition
	if f.StartingAfter != "" {
		// The cursor: a transaction with a line on the statement; the
		// page counts from the line after it. A transaction shows as one
		// line: every posting has one entry on a customer's balance, or
		// two on different balances, and the statement's accounts share
		// one balance per currency (a transaction between a main account
		// and its virtual account nets to nothing there and is refused).
		pos, found, err := s.statements.TransactionLine(ctx, accounts, f.StartingAfter)
		if err != nil {
			return emi.Statement{}, err
		}
		if !found {
			return emi.Statement{}, emi.ErrAccountValidation.Field("starting_after", "is not a transaction on this account's statement")
		}
		after = &pos
	}
	lines, total, err := s.statements.StatementLines(ctx, accounts, f.From, end, after, f.Limit, (f.Page-1)*f.Limit)
	if err != nil {
		return emi.Statement{}, err
	}
	st := emi.Statement{Account: a.Token, Lines: lines, Total: total}
	tokens := make([]string, 0, len(a.Balances))
	for _, b := range a.Balances {
		tokens = append(tokens, b.Token)
	}
	opening, closing := map[string]int64{}, map[string]int64{}
	if !f.From.IsZero() {
		if opening, err = s.statements.PostedBefore(ctx, tokens, f.From); err != nil {
			return emi.Statement{}, err
		}
	}
	if !end.IsZero() {
		if closing, err = s.statements.PostedBefore(ctx, tokens, end); err != nil {
			return emi.Statement{}, err
		}
	}
	for _, b := range a.Balances {
		sb := emi.StatementBalance{Balance: b.Token, Currency: b.Currency, Opening: opening[b.Token], Closing: b.Posted,
			Posted: b.Posted, Held: b.Held, Available: b.Available}
		if !end.IsZero() {
			sb.Closing = closing[b.Token]
		}
		st.Balances = append(st.Balances, sb)
	}
	return st, nil
}
