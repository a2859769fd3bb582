package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
)

// balanceResponse is one balance (contract §6): identifier fields are ""
// where the currency or skip_iban_generation gives none.
type balanceResponse struct {
	Token     string `json:"token"`
	Currency  string `json:"currency"`
	Available string `json:"available"`
	// Current is the ledger balance (every posted entry) and Held the card
	// payments approved but not yet cleared: available = current - held (as
	// card issuers show them).
	Current       string `json:"current"`
	Held          string `json:"held"`
	IBAN          string `json:"iban"`
	BIC           string `json:"bic"`
	AccountNumber string `json:"account_number"`
	SortCode      string `json:"sort_code"`
}

type accountResponse struct {
	Token     string            `json:"token"`
	Program   string            `json:"program"`
	Merchant  string            `json:"merchant,omitempty"`
	User      string            `json:"user,omitempty"`
	Main      string            `json:"main,omitempty"`
	Virtual   bool              `json:"virtual"`
	Alias     string            `json:"alias"`
	Status    string            `json:"status"`
	CreatedAt time.Time         `json:"created_at"`
	Balances  []balanceResponse `json:"balances,omitempty"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func newAccountResponse(a emi.Account, withBalances bool) accountResponse {
	r := accountResponse{Token: a.Token, Program: a.Program, Merchant: a.Merchant, User: a.User, Main: a.Main, Virtual: a.Virtual,
		Alias: a.Alias, Status: a.Status, CreatedAt: a.CreatedAt}
	if !withBalances {
		return r
	}
	r.Balances = []balanceResponse{}
	for _, b := range a.Balances {
		br := balanceResponse{Token: b.Token, Currency: b.Currency, Available: emi.FormatMinor(b.Available),
			Current: emi.FormatMinor(b.Posted), Held: emi.FormatMinor(b.Held), IBAN: str(b.IBAN),
			BIC: b.BIC, AccountNumber: str(b.AccountNumber), SortCode: str(b.SortCode)}
		if a.Virtual {
			// A virtual account shows its main balance under its own IBAN
			// (routed to that balance), or none when it was skipped.
			br.IBAN, br.AccountNumber, br.SortCode = a.VirtualIBANs[b.Currency], "", ""
		}
		r.Balances = append(r.Balances, br)
	}
	return r
}

// accountCreate (POST /v2/accounts).
func (a *API) accountCreate(w http.ResponseWriter, r *http.Request) {
	var in emi.AccountCreate
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	acc, err := a.d.Accounts.Create(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, newAccountResponse(acc, true))
}

// accountDetails (GET /v2/accounts/{account}).
func (a *API) accountDetails(w http.ResponseWriter, r *http.Request) {
	acc, err := a.d.Accounts.Details(r.Context(), chi.URLParam(r, "account"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newAccountResponse(acc, true))
}

type accountStatusRequest struct {
	Status string `json:"status"`
}

// accountStatus (PUT /v2/accounts/{account}/status).
func (a *API) accountStatus(w http.ResponseWriter, r *http.Request) {
	var in accountStatusRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	acc, err := a.d.Accounts.SetStatus(r.Context(), chi.URLParam(r, "account"), in.Status)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newAccountResponse(acc, true))
}

// accountTerminate (DELETE /v2/accounts/{account}).
func (a *API) accountTerminate(w http.ResponseWriter, r *http.Request) {
	acc, err := a.d.Accounts.Terminate(r.Context(), chi.URLParam(r, "account"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newAccountResponse(acc, true))
}

type accountsListResponse struct {
	Items []accountResponse `json:"items"`
	Page  int               `json:"page"`
	Limit int               `json:"limit"`
	Total int64             `json:"total"`
}

// accountsListFilters are the query parameters accounts_list accepts.
var accountsListFilters = []string{"merchant", "user", "program", "starting_after"}

// accountsList (GET /v2/accounts/{page}/{limit}).
func (a *API) accountsList(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r, accountsListFilters, emi.ErrAccountValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	f := emi.AccountFilter{Page: pathInt(r, "page"), Limit: pathInt(r, "limit"), Merchant: q.Get("merchant"), User: q.Get("user"), Program: q.Get("program"),
		StartingAfter: q.Get("starting_after")}
	items, total, err := a.d.Accounts.List(r.Context(), f)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := accountsListResponse{Items: []accountResponse{}, Page: f.Page, Limit: f.Limit, Total: total}
	for _, acc := range items {
		resp.Items = append(resp.Items, newAccountResponse(acc, false))
	}
	writeData(w, r, http.StatusOK, resp)
}
