// Package api is the partner JSON API: routes, the HMAC / replay /
// idempotency / rate-limit middleware and the envelope. Handlers translate
// HTTP to one service call and back; rules live in internal/service.
package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/httprate"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/onboarding"
	"emi/internal/service/ops"
	partnerssvc "emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/internal/service/transfers"
)

// Deps are what the API needs.
type Deps struct {
	Auth        *partnerssvc.Auth
	Idempotency *kernel.Idempotency
	Partners    *partnerssvc.Partners
	Events      *kernel.Events
	Users       *people.Users
	AML         *people.AML
	KYC         *people.KYC
	Onboarding  *onboarding.Onboarding
	Accounts    *accounts.Accounts
	Cards       *cards.Cards
	Transfers   *transfers.Transfers
	// Authorizations decides sandbox card payments and settles them.
	Authorizations *cards.Authorizations
	// Webhooks manages the partner's webhook endpoints.
	Webhooks *partnerssvc.Webhooks
	// Review decides applications (sandbox_application_decide, through
	// the underwriters' own method).
	Review *onboarding.Review
	// InformationRequests are compliance's questions about the
	// partner's customers (information_requests_*).
	InformationRequests *monitoring.Cases
	// Incoming books incoming payments (sandbox_incoming_credit).
	Incoming *transfers.Incoming
	// Sandbox enables the sandbox-only operations (simulated incoming
	// payments, card authorizations, settlement of outgoing payments);
	// in production they answer 404 / 10004 like an unknown route.
	Sandbox bool
	// SandboxOutcomes makes the sandbox's human decisions (KYC, AML,
	// application); nil outside a sandbox, where its routes answer 404.
	SandboxOutcomes *ops.SandboxOutcomes
	// TestClocks runs the sandbox partners' test clocks; nil outside a
	// sandbox, where its routes answer 404 and no request reads a clock.
	TestClocks *ops.TestClocks
	// RateLimit requests per RateWindow per API key; 0 disables limiting.
	RateLimit  int
	RateWindow time.Duration
	// MaxInFlight requests are worked on at once; one more waits up to
	// QueueWait for a place, then is answered 503 / 10503 (see admit).
	// 0 admits everything.
	MaxInFlight int
	QueueWait   time.Duration
}

// API holds the handlers and middleware of the partner API.
type API struct {
	auth     *partnerssvc.Auth
	idem     *kernel.Idempotency
	partners *partnerssvc.Partners
	events   *kernel.Events
	limiter  *httprate.RateLimiter
	inflight chan struct{}
	d        Deps
	// paths are the routed patterns with their methods (methodGuard).
	paths *pathTable
}

// New returns the API.
func New(d Deps) *API {
	a := &API{auth: d.Auth, idem: d.Idempotency, partners: d.Partners, events: d.Events, d: d, paths: &pathTable{}}
	if d.MaxInFlight > 0 {
		a.inflight = make(chan struct{}, d.MaxInFlight)
	}
	if d.RateLimit > 0 {
		a.limiter = httprate.NewRateLimiter(d.RateLimit, d.RateWindow,
			httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
				writeError(w, r, emi.ErrRateLimited)
			}))
	}
	return a
}

// Routes mounts the whole partner API on r: one line per operation, grouped
// by version prefix (the prefixes are areas of the seed, see
// architecture.md). The operation name on each line is what partners sign.
func (a *API) Routes(r chi.Router) {
	r.Route("/v1", func(r chi.Router) {
		r.Use(a.methodGuard)
		a.handle(r, "/v1", http.MethodPost, "/aml", op("aml_check", emi.ErrValidation, SmallBody), a.amlCheck)
		a.handle(r, "/v1", http.MethodPost, "/kyc", op("kyc_init", emi.ErrValidation, SmallBody), a.kycInit)
		a.handle(r, "/v1", http.MethodPost, "/sandbox/kyc/{user}", op("sandbox_kyc_decide", emi.ErrValidation, SmallBody), a.sandboxOnly(a.sandboxKYCDecide))
		a.handle(r, "/v1", http.MethodPost, "/sandbox/aml/{aml}", op("sandbox_aml_review", emi.ErrValidation, SmallBody), a.sandboxOnly(a.sandboxAMLReview))
	})
	r.Route("/v2", func(r chi.Router) {
		r.Use(a.methodGuard)
		a.handle(r, "/v2", http.MethodGet, "/partner", op("partner_details", emi.ErrValidation, SmallBody), a.partnerDetails)
		a.handle(r, "/v2", http.MethodGet, "/events/{page}/{limit}", op("events_list", emi.ErrValidation, SmallBody), a.eventsList)
		a.handle(r, "/v2", http.MethodGet, "/webhooks", op("webhook_endpoints_list", emi.ErrAPIWebhookValidation, SmallBody), a.webhookEndpointsList)
		a.handle(r, "/v2", http.MethodPost, "/webhooks", op("webhook_endpoint_create", emi.ErrAPIWebhookValidation, SmallBody), a.webhookEndpointCreate)
		// webhook_endpoint_update is a PUT, as every update of the API
		// is: version 1 signs the body of POST and PUT only (contract
		// §2), so a PATCH would carry an unsigned URL. Its fields are
		// each optional (a field left out keeps its value).
		a.handle(r, "/v2", http.MethodGet, "/webhooks/{endpoint}", op("webhook_endpoint_details", emi.ErrAPIWebhookValidation, SmallBody), a.webhookEndpointDetails)
		a.handle(r, "/v2", http.MethodPut, "/webhooks/{endpoint}", op("webhook_endpoint_update", emi.ErrAPIWebhookValidation, SmallBody), a.webhookEndpointUpdate)
		a.handle(r, "/v2", http.MethodDelete, "/webhooks/{endpoint}", op("webhook_endpoint_delete", emi.ErrAPIWebhookValidation, SmallBody), a.webhookEndpointDelete)
		a.handle(r, "/v2", http.MethodPost, "/webhooks/{endpoint}/disable", op("webhook_endpoint_disable", emi.ErrAPIWebhookValidation, SmallBody), a.webhookEndpointDisable)
		a.handle(r, "/v2", http.MethodPost, "/webhooks/{endpoint}/enable", op("webhook_endpoint_enable", emi.ErrAPIWebhookValidation, SmallBody), a.webhookEndpointEnable)
		a.handle(r, "/v2", http.MethodPost, "/webhooks/{endpoint}/rotate", op("webhook_endpoint_rotate_secret", emi.ErrAPIWebhookValidation, SmallBody), a.webhookEndpointRotateSecret)
		a.handle(r, "/v2", http.MethodPost, "/webhooks/{endpoint}/test", op("webhook_endpoint_test", emi.ErrAPIWebhookValidation, SmallBody), a.webhookEndpointTest)
		a.handle(r, "/v2", http.MethodPost, "/webhooks/{endpoint}/delete", op("webhook_endpoint_delete", emi.ErrAPIWebhookValidation, SmallBody), a.webhookEndpointDelete)
		a.handle(r, "/v2", http.MethodPost, "/webhooks/{endpoint}/replay", op("webhook_delivery_replay", emi.ErrAPIWebhookValidation, SmallBody), a.webhookDeliveryReplay)
		a.handle(r, "/v2", http.MethodPost, "/users", op("user_create", emi.ErrUserValidation, DocumentBody), a.userCreate)
		a.handle(r, "/v2", http.MethodGet, "/users/{user}", op("user_details", emi.ErrUserValidation, SmallBody), a.userDetails)
		a.handle(r, "/v2", http.MethodPut, "/users/{user}", op("user_update", emi.ErrUserValidation, SmallBody), a.userUpdate)
		a.handle(r, "/v2", http.MethodDelete, "/users/{user}", op("user_remove", emi.ErrUserValidation, SmallBody), a.userRemove)
		a.handle(r, "/v2", http.MethodPost, "/accounts", op("account_create", emi.ErrAccountValidation, SmallBody), a.accountCreate)
		a.handle(r, "/v2", http.MethodGet, "/accounts/{account}", op("account_details", emi.ErrAccountValidation, SmallBody), a.accountDetails)
		a.handle(r, "/v2", http.MethodPut, "/accounts/{account}/status", op("account_status", emi.ErrAccountValidation, SmallBody), a.accountStatus)
		a.handle(r, "/v2", http.MethodDelete, "/accounts/{account}", op("account_terminate", emi.ErrAccountValidation, SmallBody), a.accountTerminate)
		a.handle(r, "/v2", http.MethodGet, "/accounts/{page}/{limit}", op("accounts_list", emi.ErrAccountValidation, SmallBody), a.accountsList)
		a.handle(r, "/v2", http.MethodPost, "/cards", op("card_create", emi.ErrCardValidation, SmallBody), a.cardCreate)
		a.handle(r, "/v2", http.MethodGet, "/cards/{card}", op("card_details", emi.ErrCardValidation, SmallBody), a.cardDetails)
		a.handle(r, "/v2", http.MethodDelete, "/cards/{card}", op("card_terminate", emi.ErrCardValidation, SmallBody), a.cardTerminate)
		a.handle(r, "/v2", http.MethodPut, "/cards/{card}/convert", op("card_convert", emi.ErrCardValidation, SmallBody), a.cardConvert)
		a.handle(r, "/v2", http.MethodPut, "/cards/{card}/activate", op("card_activate", emi.ErrCardValidation, SmallBody), a.cardActivate)
		a.handle(r, "/v2", http.MethodPut, "/cards/{card}/status", op("card_status", emi.ErrCardValidation, SmallBody), a.cardStatus)
		a.handle(r, "/v2", http.MethodPut, "/cards/{card}/assign", op("card_assign", emi.ErrCardValidation, SmallBody), a.cardAssign)
		a.handle(r, "/v2", http.MethodPut, "/cards/{card}/groups", op("card_groups", emi.ErrCardValidation, SmallBody), a.cardGroups)
		a.handle(r, "/v2", http.MethodGet, "/cards/{card}/pin", op("card_retrieve_pin", emi.ErrCardValidation, SmallBody), a.cardRetrievePIN)
		a.handle(r, "/v2", http.MethodPost, "/cards/{card}/pin/send", op("card_send_pin", emi.ErrCardValidation, SmallBody), a.cardSendPIN)
		a.handle(r, "/v2", http.MethodDelete, "/cards/{card}/pin/reset", op("card_reset_pin", emi.ErrCardValidation, SmallBody), a.cardResetPIN)
		a.handle(r, "/v2", http.MethodPost, "/cards/{card}/3ds", op("card_3ds_enrol", emi.ErrCardValidation, SmallBody), a.card3DSEnrol)
		a.handle(r, "/v2", http.MethodPut, "/cards/{card}/3ds", op("card_3ds_update", emi.ErrCardValidation, SmallBody), a.card3DSUpdate)
		a.handle(r, "/v2", http.MethodDelete, "/cards/{card}/3ds", op("card_3ds_remove", emi.ErrCardValidation, SmallBody), a.card3DSRemove)
		a.handle(r, "/v2", http.MethodGet, "/cards/{card}/first-half", op("card_number", emi.ErrCardValidation, SmallBody), a.cardFirstHalf)
		a.handle(r, "/v2", http.MethodGet, "/cards/{card}/second-half", op("card_number", emi.ErrCardValidation, SmallBody), a.cardSecondHalf)
		a.handle(r, "/v2", http.MethodPost, "/cards/{card}/wallets", op("card_wallet_provision", emi.ErrCardValidation, SmallBody), a.cardWalletProvision)
		a.handle(r, "/v2", http.MethodGet, "/cards/{page}/{limit}", op("cards_list", emi.ErrCardValidation, SmallBody), a.cardsList)
		a.handle(r, "/v2", http.MethodPost, "/transfers", op("transfer_create", emi.ErrTransferValidation, SmallBody), a.transferCreate)
		a.handle(r, "/v2", http.MethodGet, "/transfers", op("transfers_list", emi.ErrTransferValidation, SmallBody), a.transfersList)
		a.handle(r, "/v2", http.MethodGet, "/transfers/{transfer}", op("transfer_details", emi.ErrTransferValidation, SmallBody), a.transferDetails)
		a.handle(r, "/v2", http.MethodGet, "/cards/{card}/authorizations/{page}/{limit}", op("card_authorizations", emi.ErrCardValidation, SmallBody), a.cardAuthorizations)
		a.handle(r, "/v2", http.MethodPost, "/sandbox/cards/{card}/authorizations", op("sandbox_card_authorize", emi.ErrCardValidation, SmallBody), a.sandboxOnly(a.sandboxCardAuthorize))
		a.handle(r, "/v2", http.MethodPost, "/sandbox/authorizations/{authorization}/clear", op("sandbox_authorization_clear", emi.ErrTransferValidation, SmallBody), a.sandboxOnly(a.sandboxAuthorizationClear))
		a.handle(r, "/v2", http.MethodPost, "/sandbox/authorizations/{authorization}/reverse", op("sandbox_authorization_reverse", emi.ErrTransferValidation, SmallBody), a.sandboxOnly(a.sandboxAuthorizationReverse))
		a.handle(r, "/v2", http.MethodPost, "/transfers/external", op("transfer_external_create", emi.ErrTransferValidation, SmallBody), a.transferExternalCreate)
		a.handle(r, "/v2", http.MethodPost, "/sandbox/transfers/{transfer}/complete", op("sandbox_transfer_complete", emi.ErrTransferValidation, SmallBody), a.sandboxOnly(a.sandboxTransferComplete))
		a.handle(r, "/v2", http.MethodPost, "/sandbox/transfers/{transfer}/return", op("sandbox_transfer_return", emi.ErrTransferValidation, SmallBody), a.sandboxOnly(a.sandboxTransferReturn))
		a.handle(r, "/v2", http.MethodGet, "/information_requests", op("information_requests_list", emi.ErrValidation, SmallBody), a.informationRequestsList)
		a.handle(r, "/v2", http.MethodGet, "/information_requests/{information_request}", op("information_request_details", emi.ErrValidation, SmallBody), a.informationRequestDetails)
		a.handle(r, "/v2", http.MethodPost, "/information_requests/{information_request}/answer", op("information_request_answer", emi.ErrValidation, SmallBody), a.informationRequestAnswer)
		a.handle(r, "/v2", http.MethodPost, "/sandbox/transfers/{transfer}/review", op("sandbox_transfer_review", emi.ErrTransferValidation, SmallBody), a.sandboxOnly(a.sandboxTransferReview))
		a.handle(r, "/v2", http.MethodGet, "/accounts/{account}/transactions/{page}/{limit}", op("account_transactions", emi.ErrAccountValidation, SmallBody), a.accountTransactions)
		a.handle(r, "/v2", http.MethodPost, "/sandbox/events", op("sandbox_event_trigger", emi.ErrAPIWebhookValidation, SmallBody), a.sandboxOnly(a.sandboxEventTrigger))
		a.handle(r, "/v2", http.MethodPost, "/sandbox/incoming", op("sandbox_incoming_credit", emi.ErrTransferValidation, SmallBody), a.sandboxOnly(a.sandboxIncomingCredit))
		a.handle(r, "/v2", http.MethodPost, "/sandbox/reset", op("sandbox_reset", emi.ErrValidation, SmallBody), a.sandboxOnly(a.sandboxReset))
		a.handle(r, "/v2", http.MethodPost, "/sandbox/test_clock", op("sandbox_test_clock_create", emi.ErrTestClockValidation, SmallBody), a.clockOnly(a.sandboxTestClockCreate))
		a.handle(r, "/v2", http.MethodGet, "/sandbox/test_clock", op("sandbox_test_clock_details", emi.ErrTestClockValidation, SmallBody), a.clockOnly(a.sandboxTestClockDetails))
		a.handle(r, "/v2", http.MethodDelete, "/sandbox/test_clock", op("sandbox_test_clock_delete", emi.ErrTestClockValidation, SmallBody), a.clockOnly(a.sandboxTestClockDelete))
		a.handle(r, "/v2", http.MethodPost, "/sandbox/test_clock/advance", op("sandbox_test_clock_advance", emi.ErrTestClockValidation, SmallBody), a.clockOnly(a.sandboxTestClockAdvance))
	})
	r.Route("/v3", func(r chi.Router) {
		r.Use(a.methodGuard)
		// application_create may carry the company's members with their
		// documents (contract §8), so it gets the document body limit.
		a.handle(r, "/v3", http.MethodPost, "/applications", op("application_create", emi.ErrValidation, DocumentBody), a.applicationCreate)
		a.handle(r, "/v3", http.MethodGet, "/applications/{application}", op("application_details", emi.ErrValidation, SmallBody), a.applicationDetails)
		a.handle(r, "/v3", http.MethodPut, "/applications/{application}/companies", op("company_update", emi.ErrValidation, SmallBody), a.companyUpdate)
		a.handle(r, "/v3", http.MethodPost, "/applications/{application}/companies/documents", op("company_add_document", emi.ErrValidation, DocumentBody), a.companyAddDocument)
		a.handle(r, "/v3", http.MethodPost, "/applications/{application}/companies/members", op("company_add_member", emi.ErrValidation, DocumentBody), a.companyAddMember)
		a.handle(r, "/v3", http.MethodPut, "/applications/{application}/companies/members/{token}", op("company_member_update", emi.ErrValidation, SmallBody), a.companyMemberUpdate)
		a.handle(r, "/v3", http.MethodPost, "/applications/{application}/companies/members/{token}/documents", op("company_member_add_document", emi.ErrValidation, DocumentBody), a.companyMemberAddDocument)
		a.handle(r, "/v3", http.MethodPost, "/sandbox/applications/{application}/decision", op("sandbox_application_decide", emi.ErrValidation, SmallBody), a.sandboxOnly(a.sandboxApplicationDecide))
	})
}

// sandboxOnly wraps a sandbox-only operation: in production it answers
// exactly like an unknown route (404 / 10004), after authentication, so
// the route reveals nothing either.
func (a *API) sandboxOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.d.Sandbox {
			writeError(w, r, emi.ErrRouteNotFound)

			return
		}
		h(w, r)
	}
}

// clockOnly guards the test clock's operations: 404 / 10004 where the
// instance has no test clocks (production).
func (a *API) clockOnly(h http.HandlerFunc) http.HandlerFunc {
	return a.sandboxOnly(func(w http.ResponseWriter, r *http.Request) {
		if a.d.TestClocks == nil {
			writeError(w, r, emi.ErrRouteNotFound)
			return
		}
		h(w, r)
	})
}

func op(name string, invalid *emi.Error, limit int64) Operation {
	return Operation{Name: name, Invalid: invalid, BodyLimit: limit}
}

// handle mounts one operation with the full middleware chain, and records
// its full pattern (prefix + pattern) for methodGuard.
func (a *API) handle(r chi.Router, prefix, method, pattern string, o Operation, h http.HandlerFunc) {
	a.paths.add(prefix+pattern, method, o.Name)
	r.Method(method, pattern, a.chain(o, h))
}

// Handle mounts an extra operation with the full middleware chain. Tests use
// it to exercise the middleware with an operation of their own; production
// routes are all listed in Routes.
func (a *API) Handle(r chi.Router, method, pattern string, o Operation, h http.HandlerFunc) {
	a.handle(r, "", method, pattern, o, h)
}

// Recover is the API's panic answer (500 / 10000 envelope).
func Recover(w http.ResponseWriter, r *http.Request) { writePanic(w, r) }

// NotFound answers an unknown path with the envelope (404 / 10004).
func NotFound(w http.ResponseWriter, r *http.Request) { writeError(w, r, emi.ErrRouteNotFound) }

// MethodNotAllowed answers a known path with the wrong method (405 / 10006)
// and the methods the path accepts in Allow.
func MethodNotAllowed(w http.ResponseWriter, r *http.Request, allowed []string) {
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeJSON(w, r, http.StatusMethodNotAllowed, errorEnvelope(r, emi.ErrMethodNotAllowed))
}

// WriteData and WriteError expose the envelope to extra operations (tests).
func WriteData(w http.ResponseWriter, r *http.Request, status int, data any) {
	writeData(w, r, status, data)
}

// WriteError renders err as the error envelope.
func WriteError(w http.ResponseWriter, r *http.Request, err error) { writeError(w, r, err) }

// Decode strictly decodes the request body (for extra operations).
func Decode(r *http.Request, dst any) error { return decode(r, dst) }

// partnerResponse is the data of partner_details.
type partnerResponse struct {
	Partner    string         `json:"partner"`
	Name       string         `json:"name"`
	Merchant   string         `json:"merchant"`
	Processing emi.Processing `json:"processing"`
	APIKeyID   string         `json:"api_key_id"`
}

// partnerDetails (GET /v2/partner) tells the caller who it is
// authenticated as: a cheap way for a partner to check its credentials and
// signing code.
func (a *API) partnerDetails(w http.ResponseWriter, r *http.Request) {
	p, err := a.partners.Details(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, partnerResponse{
		Partner: p.ID, Name: p.Name, Merchant: p.MasterMerchant, Processing: p.Processing,
		APIKeyID: partner(r).ActorID,
	})
}

// storedCode reads the envelope code of a stored response body.
func storedCode(b []byte) int {
	var env struct {
		Code int `json:"code"`
	}
	_ = json.Unmarshal(b, &env)
	return env.Code
}
