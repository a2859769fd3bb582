package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/accounts"
)

// transferExternalCreate (POST /v2/transfers/external).
func (a *API) transferExternalCreate(w http.ResponseWriter, r *http.Request) {
	var in emi.TransferExternalCreate
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	t, err := a.d.Transfers.CreateExternal(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, newTransferResponse(t))
}

// sandboxTransferComplete (POST /v2/sandbox/transfers/{transfer}/complete).
func (a *API) sandboxTransferComplete(w http.ResponseWriter, r *http.Request) {
	t, err := a.d.Transfers.SandboxComplete(r.Context(), chi.URLParam(r, "transfer"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newTransferResponse(t))
}

// sandboxTransferReturn (POST /v2/sandbox/transfers/{transfer}/return).
func (a *API) sandboxTransferReturn(w http.ResponseWriter, r *http.Request) {
	var in emi.TransferReturn
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	t, err := a.d.Transfers.SandboxReturn(r.Context(), chi.URLParam(r, "transfer"), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newTransferResponse(t))
}

type statementCounterparty struct {
	Name          string `json:"name"`
	IBAN          string `json:"iban"`
	AccountNumber string `json:"account_number"`
	SortCode      string `json:"sort_code"`
}

type statementLineResponse struct {
	Transaction  string                `json:"transaction"`
	Transfer     string                `json:"transfer"`
	Type         string                `json:"type"`
	Account      string                `json:"account"`
	Amount       string                `json:"amount"`
	Currency     string                `json:"currency"`
	Balance      string                `json:"balance"`
	BalanceAfter string                `json:"balance_after"`
	Reference    string                `json:"reference"`
	Counterparty statementCounterparty `json:"counterparty"`
	CreatedAt    time.Time             `json:"created_at"`
}

type statementBalanceResponse struct {
	Balance        string `json:"balance"`
	Currency       string `json:"currency"`
	OpeningBalance string `json:"opening_balance"`
	ClosingBalance string `json:"closing_balance"`
}

type statementResponse struct {
	Items    []statementLineResponse    `json:"items"`
	Page     int                        `json:"page"`
	Limit    int                        `json:"limit"`
	Total    int64                      `json:"total"`
	From     string                     `json:"from"`
	To       string                     `json:"to"`
	Balances []statementBalanceResponse `json:"balances"`
}

// accountTransactionsFilters are the query parameters account_transactions
// accepts.
var accountTransactionsFilters = []string{"from", "to", "starting_after"}

// accountTransactions (GET /v2/accounts/{account}/transactions/{page}/{limit}).
func (a *API) accountTransactions(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r, accountTransactionsFilters, emi.ErrAccountValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	sq := accounts.StatementQuery{From: q.Get("from"), To: q.Get("to"), Page: pathInt(r, "page"), Limit: pathInt(r, "limit"),
		StartingAfter: q.Get("starting_after")}
	st, err := a.d.Accounts.Statement(r.Context(), chi.URLParam(r, "account"), sq)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := statementResponse{Items: make([]statementLineResponse, 0, len(st.Lines)), Page: sq.Page, Limit: sq.Limit, Total: st.Total,
		From: sq.From, To: sq.To, Balances: make([]statementBalanceResponse, 0, len(st.Balances))}
	for _, l := range st.Lines {
		resp.Items = append(resp.Items, statementLineResponse{Transaction: l.Transaction, Transfer: l.Transfer, Type: l.Kind,
			Account: l.Account, Amount: emi.FormatMinor(l.Amount), Currency: l.Currency, Balance: l.Balance,
			BalanceAfter: emi.FormatMinor(l.BalanceAfter), Reference: l.Reference, CreatedAt: l.CreatedAt,
			Counterparty: statementCounterparty{Name: l.Counterparty.Name, IBAN: l.Counterparty.IBAN,
				AccountNumber: l.Counterparty.AccountNumber, SortCode: l.Counterparty.SortCode}})
	}
	for _, b := range st.Balances {
		resp.Balances = append(resp.Balances, statementBalanceResponse{Balance: b.Balance, Currency: b.Currency,
			OpeningBalance: emi.FormatMinor(b.Opening), ClosingBalance: emi.FormatMinor(b.Closing)})
	}
	writeData(w, r, http.StatusOK, resp)
}

// heldTransferDecision is the body of sandbox_transfer_review.
type heldTransferDecision struct {
	Decision string `json:"decision"`
}

// sandboxTransferReview (POST /v2/sandbox/transfers/{transfer}/review): the
// sandbox's stand-in for compliance releases or returns a transfer held
// for review.
func (a *API) sandboxTransferReview(w http.ResponseWriter, r *http.Request) {
	var in heldTransferDecision
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	t, err := a.d.Transfers.SandboxDecideHeld(r.Context(), chi.URLParam(r, "transfer"), in.Decision)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newTransferResponse(t))
}
