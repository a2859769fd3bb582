package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// threeDSResponse is a card's 3DS enrolment.
type threeDSResponse struct {
	Enrolled  bool   `json:"enrolled"`
	OTPSMS    string `json:"otp_sms"`
	Biometric bool   `json:"biometric"`
}

type walletResponse struct {
	Token      string    `json:"token"`
	Wallet     string    `json:"wallet"`
	DeviceName string    `json:"device_name"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
}

// cardResponse is a card (contract §6): never the full PAN, CVV or PIN.
type cardResponse struct {
	Token           string            `json:"token"`
	Program         string            `json:"program"`
	Account         string            `json:"account"`
	Merchant        string            `json:"merchant"`
	User            string            `json:"user"`
	Type            string            `json:"type"`
	Status          string            `json:"status"`
	Activated       bool              `json:"activated"`
	MaskedPAN       string            `json:"masked_pan"`
	Expiry          string            `json:"expiry"`
	Alias           string            `json:"alias"`
	EmbossName      string            `json:"emboss_name"`
	EmbossNameLine4 string            `json:"emboss_name_line4"`
	FirstName       string            `json:"first_name"`
	LastName        string            `json:"last_name"`
	Groups          map[string]string `json:"groups"`
	ThreeDS         threeDSResponse   `json:"three_ds"`
	Delivery        *emi.Delivery     `json:"delivery_details"`
	Wallets         []walletResponse  `json:"wallets"`
	CreatedAt       time.Time         `json:"created_at"`
}

func newCardResponse(c emi.Card) cardResponse {
	r := cardResponse{Token: c.Token, Program: c.Program, Account: c.Account, Merchant: c.Merchant, User: c.User, Type: c.Type,
		Status: c.Status, Activated: c.Activated, MaskedPAN: c.MaskedPAN(), Expiry: c.Expiry(), Alias: c.Alias,
		EmbossName: c.EmbossName, EmbossNameLine4: c.EmbossNameLine4, FirstName: c.FirstName, LastName: c.LastName,
		Groups: map[string]string{}, ThreeDS: threeDSResponse{Enrolled: c.ThreeDS.Enrolled(), OTPSMS: c.ThreeDS.OTPSMS,
			Biometric: c.ThreeDS.Biometric}, Delivery: c.Delivery, Wallets: []walletResponse{}, CreatedAt: c.CreatedAt}
	for _, kind := range emi.GroupKinds {
		r.Groups[kind] = c.Groups[kind]
	}
	for _, w := range c.Wallets {
		r.Wallets = append(r.Wallets, walletResponse{Token: w.Token, Wallet: w.Wallet, DeviceName: w.DeviceName,
			Status: c.WalletStatus(), CreatedAt: w.CreatedAt})
	}
	return r
}

func (a *API) writeCard(w http.ResponseWriter, r *http.Request, status int, c emi.Card, err error) {
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, status, newCardResponse(c))
}

func card(r *http.Request) string { return chi.URLParam(r, "card") }

// cardCreate (POST /v2/cards).
func (a *API) cardCreate(w http.ResponseWriter, r *http.Request) {
	var in emi.CardCreate
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.Cards.Create(r.Context(), in)
	a.writeCard(w, r, http.StatusCreated, c, err)
}

// cardDetails (GET /v2/cards/{card}).
func (a *API) cardDetails(w http.ResponseWriter, r *http.Request) {
	c, err := a.d.Cards.Details(r.Context(), card(r))
	a.writeCard(w, r, http.StatusOK, c, err)
}

type cardStatusRequest struct {
	Status string `json:"status"`
}

// cardStatus (PUT /v2/cards/{card}/status).
func (a *API) cardStatus(w http.ResponseWriter, r *http.Request) {
	var in cardStatusRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.Cards.SetStatus(r.Context(), card(r), in.Status, "")
	a.writeCard(w, r, http.StatusOK, c, err)
}

// cardTerminate (DELETE /v2/cards/{card}).
func (a *API) cardTerminate(w http.ResponseWriter, r *http.Request) {
	c, err := a.d.Cards.Terminate(r.Context(), card(r), "")
	a.writeCard(w, r, http.StatusOK, c, err)
}

type cardActivateRequest struct {
	AML string `json:"aml"`
}

// cardActivate (PUT /v2/cards/{card}/activate).
func (a *API) cardActivate(w http.ResponseWriter, r *http.Request) {
	var in cardActivateRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.Cards.Activate(r.Context(), card(r), in.AML, "")
	a.writeCard(w, r, http.StatusOK, c, err)
}

type cardConvertRequest struct {
	Delivery *emi.Delivery `json:"delivery_details"`
}

// cardConvert (PUT /v2/cards/{card}/convert).
func (a *API) cardConvert(w http.ResponseWriter, r *http.Request) {
	var in cardConvertRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.Cards.Convert(r.Context(), card(r), in.Delivery, "")
	a.writeCard(w, r, http.StatusOK, c, err)
}

type cardAssignRequest struct {
	Account string `json:"account"`
	// AML is an AML check of the account's owner, needed when the card
	// was activated under another person's check.
	AML string `json:"aml"`
}

// cardAssign (PUT /v2/cards/{card}/assign).
func (a *API) cardAssign(w http.ResponseWriter, r *http.Request) {
	var in cardAssignRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.Cards.Assign(r.Context(), card(r), in.Account, in.AML, "")
	a.writeCard(w, r, http.StatusOK, c, err)
}

// cardGroups (PUT /v2/cards/{card}/groups).
func (a *API) cardGroups(w http.ResponseWriter, r *http.Request) {
	var in emi.CardGroups
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.Cards.SetGroups(r.Context(), card(r), in, "")
	a.writeCard(w, r, http.StatusOK, c, err)
}

// card3DSEnrol (POST /v2/cards/{card}/3ds).
func (a *API) card3DSEnrol(w http.ResponseWriter, r *http.Request) {
	var in emi.ThreeDSEnrol
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.Cards.Enrol3DS(r.Context(), card(r), in, "")
	a.writeCard(w, r, http.StatusOK, c, err)
}

type card3DSUpdateRequest struct {
	OTPSMS string `json:"otp_sms"`
}

// card3DSUpdate (PUT /v2/cards/{card}/3ds).
func (a *API) card3DSUpdate(w http.ResponseWriter, r *http.Request) {
	var in card3DSUpdateRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.Cards.Update3DS(r.Context(), card(r), in.OTPSMS, "")
	a.writeCard(w, r, http.StatusOK, c, err)
}

type card3DSRemoveRequest struct {
	Type string `json:"type"`
}

// card3DSRemove (DELETE /v2/cards/{card}/3ds).
func (a *API) card3DSRemove(w http.ResponseWriter, r *http.Request) {
	var in card3DSRemoveRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.Cards.Remove3DS(r.Context(), card(r), in.Type, "")
	a.writeCard(w, r, http.StatusOK, c, err)
}

// cardResetPIN (DELETE /v2/cards/{card}/pin/reset).
func (a *API) cardResetPIN(w http.ResponseWriter, r *http.Request) {
	c, err := a.d.Cards.ResetPIN(r.Context(), card(r), "")
	a.writeCard(w, r, http.StatusOK, c, err)
}

type smsResponse struct {
	To        string    `json:"to"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
}

// cardSendPIN (POST /v2/cards/{card}/pin/send): the answer names the
// masked number the PIN went to.
func (a *API) cardSendPIN(w http.ResponseWriter, r *http.Request) {
	m, err := a.d.Cards.SendPIN(r.Context(), card(r), "")
	if err != nil {
		var wait kernel.RetryAfter
		if errors.As(err, &wait) {
			w.Header().Set("Retry-After", strconv.Itoa(wait.Seconds()))
		}
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, smsResponse{To: emi.MaskPhone(m.To), Status: m.Status, CreatedAt: m.CreatedAt})
}

type firstHalfResponse struct {
	FirstHalf string `json:"first_half"`
	CVV       string `json:"cvv"`
}

type secondHalfResponse struct {
	SecondHalf string `json:"second_half"`
	Expiry     string `json:"expiry"`
}

type pinResponse struct {
	PIN string `json:"pin"`
}

// cardFirstHalf (GET /v2/cards/{card}/first-half).
func (a *API) cardFirstHalf(w http.ResponseWriter, r *http.Request) {
	v, err := a.d.Cards.Reveal(r.Context(), card(r), "first_half")
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, firstHalfResponse{FirstHalf: v.FirstHalf, CVV: v.CVV})
}

// cardSecondHalf (GET /v2/cards/{card}/second-half).
func (a *API) cardSecondHalf(w http.ResponseWriter, r *http.Request) {
	v, err := a.d.Cards.Reveal(r.Context(), card(r), "second_half")
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, secondHalfResponse{SecondHalf: v.SecondHalf, Expiry: v.Expiry})
}

// cardRetrievePIN (GET /v2/cards/{card}/pin).
func (a *API) cardRetrievePIN(w http.ResponseWriter, r *http.Request) {
	v, err := a.d.Cards.Reveal(r.Context(), card(r), "pin")
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, pinResponse{PIN: v.PIN})
}

type walletProvisionRequest struct {
	Wallet     string `json:"wallet"`
	DeviceName string `json:"device_name"`
}

type walletProvisionResponse struct {
	WalletToken string `json:"wallet_token"`
	Wallet      string `json:"wallet"`
	Payload     string `json:"payload"`
	Signature   string `json:"signature"`
}

// cardWalletProvision (POST /v2/cards/{card}/wallets).
func (a *API) cardWalletProvision(w http.ResponseWriter, r *http.Request) {
	var in walletProvisionRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	v, err := a.d.Cards.ProvisionWallet(r.Context(), card(r), in.Wallet, in.DeviceName)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, walletProvisionResponse{WalletToken: v.WalletToken.Token, Wallet: v.WalletToken.Wallet,
		Payload: v.Payload, Signature: v.Signature})
}

type cardsListResponse struct {
	Items []cardResponse `json:"items"`
	Page  int            `json:"page"`
	Limit int            `json:"limit"`
	Total int64          `json:"total"`
}

var cardsListFilters = []string{"merchant", "user", "account", "program", "starting_after"}

// cardsList (GET /v2/cards/{page}/{limit}).
func (a *API) cardsList(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r, cardsListFilters, emi.ErrCardValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	f := emi.CardFilter{Page: pathInt(r, "page"), Limit: pathInt(r, "limit"), Merchant: q.Get("merchant"), User: q.Get("user"),
		Account: q.Get("account"), Program: q.Get("program"), StartingAfter: q.Get("starting_after")}
	items, total, err := a.d.Cards.List(r.Context(), f)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := cardsListResponse{Items: []cardResponse{}, Page: f.Page, Limit: f.Limit, Total: total}
	for _, c := range items {
		resp.Items = append(resp.Items, newCardResponse(c))
	}
	writeData(w, r, http.StatusOK, resp)
}
