// Package emi is a small client for the emi partner API, using only Go's
// standard library (Go 1.23 or later). It is one file: copy it into your
// module (for example as internal/emi/emi.go); it is not published for
// `go get`. Download it from /docs/sdk/go/emi.go on the server you use.
//
// What it does for you:
//
//   - signs every request with signature version 2 (method, path, query,
//     a fresh x-nonce and the body as sent); SignatureVersion 1 is available;
//   - sends an Idempotency-Key (a random UUID unless you give one) with
//     every POST, and keeps it across retries;
//   - retries network errors (GET and POST only), 429 and 503 with
//     exponential backoff and jitter, honouring Retry-After, and signs each
//     attempt again; never any other 4xx;
//   - returns *Error for every error answer, with the envelope's code,
//     message key, description, errors list, data and the HTTP status;
//   - iterates over lists page by page, or after a cursor (events);
//   - verifies webhook signatures (Standard Webhooks).
//
// A minimal session:
//
//	c := emi.New(os.Getenv("EMI_URL"), os.Getenv("EMI_API_KEY"), os.Getenv("EMI_API_SECRET"))
//	user, err := c.CreateUser(ctx, emi.Object{"merchant": merchant, "email": "mara@example.com",
//		"first_name": "Mara", "last_name": "Velikova"})
//	...
//	acc, err := c.CreateAccount(ctx, emi.Object{"program": "account_eur", "user": user.Token()})
package emi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Version is this client's version, sent in the User-Agent.
const Version = "1.0.0"

// Object is a JSON object of the API (a user, an account, a card, an event).
type Object map[string]any

// Token is the object's "token" field, or "".
func (o Object) Token() string { return o.String("token") }

// String is the string field key, or "" when it is absent or not a string.
func (o Object) String(key string) string {
	s, _ := o[key].(string)
	return s
}

// Client calls the API. Set its fields before the first call; it is then
// safe for concurrent use.
type Client struct {
	// BaseURL is the server's address, without a trailing slash
	// ("https://emi.example").
	BaseURL   string
	APIKey    string
	APISecret string
	// SignatureVersion is 2 (the default, also for 0) or 1.
	SignatureVersion int
	// HTTPClient sends the requests; nil is http.DefaultClient.
	HTTPClient *http.Client
	// MaxRetries is the number of retries after the first attempt
	// (New sets 3; 0 disables retries).
	MaxRetries int
	// BackoffBase and BackoffMax bound the wait before retry n: a random
	// duration up to min(BackoffMax, BackoffBase × 2^n) ("full jitter").
	// A Retry-After header replaces it. New sets 500 ms and 8 s.
	BackoffBase, BackoffMax time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; a
	// longer one (a daily limit, say) is returned as the error at once.
	// New sets 60 s.
	MaxRetryAfter time.Duration
	// Now and Sleep are the clock; tests replace them. nil: the real ones.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// New returns a client with the defaults above.
func New(baseURL, apiKey, apiSecret string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), APIKey: apiKey, APISecret: apiSecret,
		SignatureVersion: 2, MaxRetries: 3, BackoffBase: 500 * time.Millisecond, BackoffMax: 8 * time.Second,
		MaxRetryAfter: 60 * time.Second}
}

// Options are per-request settings; all may be left zero.
type Options struct {
	// IdempotencyKey for a POST; empty: a new random UUID, kept for
	// every retry of this call.
	IdempotencyKey string
	// Operation is the signed operation name; empty: looked up from the
	// method and path in Operations.
	Operation string
	// Header adds headers to the request.
	Header http.Header
}

// Response is a successful answer.
type Response struct {
	Status int
	Header http.Header
	// Data is the envelope's data, as sent.
	Data json.RawMessage
	// Replayed is true when the answer is the stored answer of an earlier
	// request with the same Idempotency-Key.
	Replayed bool
	// IdempotencyKey is the key sent (POST only).
	IdempotencyKey string
}

// FieldError is one entry of an error answer's errors list.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is an error answer of the API.
type Error struct {
	// Status is the HTTP status; Code the envelope's code (18001, 10001, …);
	// Message its dotted key (service.aml.match.found). An answer that is
	// not the API's envelope (a proxy's error page) has Code 0, no
	// Message, and the start of the page in Description.
	Status      int
	Code        int
	Message     string
	Description string
	DocURL      string
	Errors      []FieldError
	// Data is the envelope's data when an error carries one (an AML
	// match, 18001, carries the check).
	Data json.RawMessage
	// RequestID is x-request-id, to quote to support.
	RequestID string
	// RetryAfter is the Retry-After header's wait, when there was one.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	s := fmt.Sprintf("emi: HTTP %d, code %d %s", e.Status, e.Code, e.Message)
	for _, f := range e.Errors {
		s += fmt.Sprintf("; %s: %s", f.Field, f.Message)
	}
	if e.Description != "" {
		s += " (" + e.Description + ")"
	}
	return s
}

// Object decodes Data as an object (nil when there is none).
func (e *Error) Object() Object {
	var o Object
	_ = json.Unmarshal(e.Data, &o)
	return o
}

// IsCode reports whether err is an *Error with code.
func IsCode(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Do sends one request and decodes the envelope. body is nil, []byte or
// json.RawMessage (sent as it is) or any value encoding/json marshals;
// path starts with the version ("/v2/cards/…") and may carry a query.
// On an error answer it returns *Error.
func (c *Client) Do(ctx context.Context, method, path string, body any, opts *Options) (*Response, error) {
	if opts == nil {
		opts = &Options{}
	}
	method = strings.ToUpper(method)
	raw, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	op := opts.Operation
	if op == "" {
		if op = Operation(method, path); op == "" {
			return nil, fmt.Errorf("emi: no operation known for %s %s: set Options.Operation", method, path)
		}
	}
	key := opts.IdempotencyKey
	if key == "" && method == http.MethodPost {
		key = newUUID()
	}
	for attempt := 0; ; attempt++ {
		res, err := c.once(ctx, method, path, op, raw, key, opts.Header)
		wait, retry := c.retryable(method, res, err, attempt)
		if !retry {
			if err != nil {
				return nil, err
			}
			return res, nil
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// Request is Do that decodes the answer's data into out (unless out is
// nil).
func (c *Client) Request(ctx context.Context, method, path string, body, out any, opts *Options) error {
	res, err := c.Do(ctx, method, path, body, opts)
	if err != nil || out == nil || len(res.Data) == 0 {
		return err
	}
	return json.Unmarshal(res.Data, out)
}

func encodeBody(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	case json.RawMessage:
		return b, nil
	case string:
		return []byte(b), nil
	}
	return json.Marshal(body)
}

// once is one attempt, signed afresh.
func (c *Client) once(ctx context.Context, method, path, op string, body []byte, key string, extra http.Header) (*Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range extra {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	ts := strconv.FormatInt(c.now().Unix(), 10)
	h := req.Header
	h.Set("User-Agent", "emi-go/"+Version)
	h.Set("Accept", "application/json")
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	h.Set("x-api-key", c.APIKey)
	h.Set("x-timestamp", ts)
	if c.SignatureVersion == 1 {
		h.Set("x-hash", SignV1(c.APISecret, c.APIKey, ts, op, method, body))
	} else {
		nonce := randomHex(16)
		h.Set("x-signature-version", "2")
		h.Set("x-nonce", nonce)
		h.Set("x-hash", SignV2(c.APISecret, c.APIKey, ts, op, method, req.URL.RequestURI(), nonce, body))
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, &networkError{err}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, &networkError{err}
	}
	var env struct {
		Code        *int            `json:"code"`
		Message     string          `json:"message"`
		Description string          `json:"description"`
		DocURL      string          `json:"doc_url"`
		Errors      []FieldError    `json:"errors"`
		Data        json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Code == nil {
		// Not the API's envelope: a proxy's page, say.
		return nil, &Error{Status: res.StatusCode,
			Description: strings.TrimSpace(string(raw[:min(len(raw), 200)])), RequestID: res.Header.Get("x-request-id"),
			RetryAfter: retryAfter(res.Header)}
	}
	if *env.Code != 0 || res.StatusCode >= 300 {
		return nil, &Error{Status: res.StatusCode, Code: *env.Code, Message: env.Message, Description: env.Description,
			DocURL: env.DocURL, Errors: env.Errors, Data: env.Data, RequestID: res.Header.Get("x-request-id"),
			RetryAfter: retryAfter(res.Header)}
	}
	return &Response{Status: res.StatusCode, Header: res.Header, Data: env.Data,
		Replayed: res.Header.Get("Idempotent-Replayed") == "true", IdempotencyKey: key}, nil
}

// networkError is a request that got no answer.
type networkError struct{ err error }

func (e *networkError) Error() string { return "emi: " + e.err.Error() }
func (e *networkError) Unwrap() error { return e.err }

// retryable decides whether attempt (from 0) is tried again, and after
// how long: network errors for GET and POST (a POST carries its
// Idempotency-Key), 429 and 503 for every method (nothing was done),
// except 10504 ("outcome unknown") where only a POST can be retried safely.
func (c *Client) retryable(method string, res *Response, err error, attempt int) (time.Duration, bool) {
	if err == nil || attempt >= c.MaxRetries {
		return 0, false
	}
	var ne *networkError
	if errors.As(err, &ne) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return 0, false
		}
		return c.backoff(attempt), method == http.MethodGet || method == http.MethodPost
	}
	var e *Error
	if !errors.As(err, &e) || (e.Status != http.StatusTooManyRequests && e.Status != http.StatusServiceUnavailable) {
		return 0, false
	}
	if e.Code == 10504 && method != http.MethodPost {
		return 0, false
	}
	if e.RetryAfter > 0 {
		if e.RetryAfter > c.MaxRetryAfter {
			return 0, false
		}
		return e.RetryAfter, true
	}
	return c.backoff(attempt), true
}

// backoff is a random wait up to min(BackoffMax, BackoffBase × 2^attempt).
func (c *Client) backoff(attempt int) time.Duration {
	ceil := c.BackoffBase << min(attempt, 30)
	if ceil <= 0 || ceil > c.BackoffMax {
		ceil = c.BackoffMax
	}
	if ceil <= 0 {
		return 0
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(ceil)+1))
	if err != nil {
		return ceil
	}
	return time.Duration(n.Int64())
}

// retryAfter reads Retry-After in seconds (an HTTP date is read too).
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SignV1 is x-hash of signature version 1: HMAC-SHA256 over api_key +
// timestamp + operation + body, the body (POST and PUT only) without its
// space, tab, CR and LF bytes.
func SignV1(secret, apiKey, timestamp, operation, method string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(apiKey + timestamp + operation))
	if method == http.MethodPost || method == http.MethodPut {
		for _, b := range body {
			if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
				m.Write([]byte{b})
			}
		}
	}
	return hex.EncodeToString(m.Sum(nil))
}

// SignV2 is x-hash of signature version 2: HMAC-SHA256 over api_key +
// timestamp + operation + METHOD + request target (path and query as sent)
// + nonce + the body exactly as sent.
func SignV2(secret, apiKey, timestamp, operation, method, target, nonce string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(apiKey + timestamp + operation + strings.ToUpper(method) + target + nonce))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Routes are the API's operations: method, path pattern and the operation
// name a request is signed with. Operation looks a request up here; a
// route the table lacks can be called with Options.Operation.
var Routes = []struct{ Method, Path, Operation string }{
	{"POST", "/v1/aml", "aml_check"},
	{"POST", "/v1/kyc", "kyc_init"},
	{"POST", "/v1/sandbox/aml/{aml}", "sandbox_aml_review"},
	{"POST", "/v1/sandbox/kyc/{user}", "sandbox_kyc_decide"},
	{"GET", "/v2/partner", "partner_details"},
	{"GET", "/v2/events/{page}/{limit}", "events_list"},
	{"GET", "/v2/webhooks", "webhook_endpoints_list"},
	{"POST", "/v2/webhooks", "webhook_endpoint_create"},
	{"POST", "/v2/webhooks/{endpoint}/rotate", "webhook_endpoint_rotate_secret"},
	{"POST", "/v2/webhooks/{endpoint}/test", "webhook_endpoint_test"},
	{"POST", "/v2/webhooks/{endpoint}/delete", "webhook_endpoint_delete"},
	{"POST", "/v2/webhooks/{endpoint}/replay", "webhook_delivery_replay"},
	{"POST", "/v2/users", "user_create"},
	{"GET", "/v2/users/{user}", "user_details"},
	{"PUT", "/v2/users/{user}", "user_update"},
	{"DELETE", "/v2/users/{user}", "user_remove"},
	{"POST", "/v2/accounts", "account_create"},
	{"GET", "/v2/accounts/{account}", "account_details"},
	{"PUT", "/v2/accounts/{account}/status", "account_status"},
	{"DELETE", "/v2/accounts/{account}", "account_terminate"},
	{"GET", "/v2/accounts/{page}/{limit}", "accounts_list"},
	{"GET", "/v2/accounts/{account}/transactions/{page}/{limit}", "account_transactions"},
	{"POST", "/v2/cards", "card_create"},
	{"GET", "/v2/cards/{card}", "card_details"},
	{"DELETE", "/v2/cards/{card}", "card_terminate"},
	{"PUT", "/v2/cards/{card}/convert", "card_convert"},
	{"PUT", "/v2/cards/{card}/activate", "card_activate"},
	{"PUT", "/v2/cards/{card}/status", "card_status"},
	{"PUT", "/v2/cards/{card}/assign", "card_assign"},
	{"PUT", "/v2/cards/{card}/groups", "card_groups"},
	{"GET", "/v2/cards/{card}/pin", "card_retrieve_pin"},
	{"POST", "/v2/cards/{card}/pin/send", "card_send_pin"},
	{"DELETE", "/v2/cards/{card}/pin/reset", "card_reset_pin"},
	{"POST", "/v2/cards/{card}/3ds", "card_3ds_enrol"},
	{"PUT", "/v2/cards/{card}/3ds", "card_3ds_update"},
	{"DELETE", "/v2/cards/{card}/3ds", "card_3ds_remove"},
	{"GET", "/v2/cards/{card}/first-half", "card_number"},
	{"GET", "/v2/cards/{card}/second-half", "card_number"},
	{"POST", "/v2/cards/{card}/wallets", "card_wallet_provision"},
	{"GET", "/v2/cards/{page}/{limit}", "cards_list"},
	{"GET", "/v2/cards/{card}/authorizations/{page}/{limit}", "card_authorizations"},
	{"POST", "/v2/transfers", "transfer_create"},
	{"GET", "/v2/transfers/{transfer}", "transfer_details"},
	{"POST", "/v2/transfers/external", "transfer_external_create"},
	{"GET", "/v2/information_requests", "information_requests_list"},
	{"GET", "/v2/information_requests/{information_request}", "information_request_details"},
	{"POST", "/v2/information_requests/{information_request}/answer", "information_request_answer"},
	{"POST", "/v2/sandbox/cards/{card}/authorizations", "sandbox_card_authorize"},
	{"POST", "/v2/sandbox/authorizations/{authorization}/clear", "sandbox_authorization_clear"},
	{"POST", "/v2/sandbox/authorizations/{authorization}/reverse", "sandbox_authorization_reverse"},
	{"POST", "/v2/sandbox/transfers/{transfer}/complete", "sandbox_transfer_complete"},
	{"POST", "/v2/sandbox/transfers/{transfer}/return", "sandbox_transfer_return"},
	{"POST", "/v2/sandbox/transfers/{transfer}/review", "sandbox_transfer_review"},
	{"POST", "/v2/sandbox/incoming", "sandbox_incoming_credit"},
	{"GET", "/v2/webhooks/{endpoint}", "webhook_endpoint_details"},
	{"GET", "/v2/transfers", "transfers_list"},
	{"POST", "/v2/sandbox/events", "sandbox_event_trigger"},
	{"POST", "/v2/sandbox/reset", "sandbox_reset"},
	{"POST", "/v2/sandbox/test_clock", "sandbox_test_clock_create"},
	{"GET", "/v2/sandbox/test_clock", "sandbox_test_clock_details"},
	{"DELETE", "/v2/sandbox/test_clock", "sandbox_test_clock_delete"},
	{"POST", "/v2/sandbox/test_clock/advance", "sandbox_test_clock_advance"},
	{"PUT", "/v2/webhooks/{endpoint}", "webhook_endpoint_update"},
	{"DELETE", "/v2/webhooks/{endpoint}", "webhook_endpoint_delete"},
	{"POST", "/v2/webhooks/{endpoint}/disable", "webhook_endpoint_disable"},
	{"POST", "/v2/webhooks/{endpoint}/enable", "webhook_endpoint_enable"},
	{"POST", "/v3/applications", "application_create"},
	{"GET", "/v3/applications/{application}", "application_details"},
	{"PUT", "/v3/applications/{application}/companies", "company_update"},
	{"POST", "/v3/applications/{application}/companies/documents", "company_add_document"},
	{"POST", "/v3/applications/{application}/companies/members", "company_add_member"},
	{"PUT", "/v3/applications/{application}/companies/members/{token}", "company_member_update"},
	{"POST", "/v3/applications/{application}/companies/members/{token}/documents", "company_member_add_document"},
	{"POST", "/v3/sandbox/applications/{application}/decision", "sandbox_application_decide"},
}

// Operation returns the signed operation name of method and path (its
// query ignored), or "" when Routes has none. A literal segment wins over
// a parameter: /v2/cards/{card}/pin before /v2/cards/{page}/{limit}.
func Operation(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best, bestScore := "", -1
	for _, r := range Routes {
		if r.Method != strings.ToUpper(method) {
			continue
		}
		pat := strings.Split(strings.Trim(r.Path, "/"), "/")
		if len(pat) != len(segs) {
			continue
		}
		score := 0
		for i, p := range pat {
			switch {
			case strings.HasPrefix(p, "{") && segs[i] != "":
			case p == segs[i]:
				score++
			default:
				score = -len(pat) - 1
			}
		}
		if score >= 0 && score > bestScore {
			best, bestScore = r.Operation, score
		}
	}
	return best
}

// ListOptions choose what List returns.
type ListOptions struct {
	// Limit is the page size (1..10 for accounts, 1..100 for cards and
	// events); 0 is 10.
	Limit int
	// Query are the list's filters (merchant, user, program, type).
	Query url.Values
	// After is a cursor: the id of the last item you have processed.
	// With it, List follows the cursor (events_list's "after": oldest
	// first, page after page until none is left); without it, List reads
	// pages 1, 2, … (newest first) until total is reached.
	After string
}

// List iterates over a list endpoint given without its /{page}/{limit}
// ("/v2/accounts", "/v2/events", "/v2/cards/{card}/authorizations"). It
// stops at the first error, which it yields.
func (c *Client) List(ctx context.Context, path string, opts ListOptions) iter.Seq2[Object, error] {
	return func(yield func(Object, error) bool) {
		limit := opts.Limit
		if limit <= 0 {
			limit = 10
		}
		after := opts.After
		seen := 0
		for page := 1; ; page++ {
			q := url.Values{}
			for k, vs := range opts.Query {
				q[k] = vs
			}
			p := page
			if after != "" {
				q.Set("after", after)
				p = 1
			}
			target := fmt.Sprintf("%s/%d/%d", strings.TrimRight(path, "/"), p, limit)
			if len(q) > 0 {
				target += "?" + q.Encode()
			}
			var data struct {
				Items []Object `json:"items"`
				Total int      `json:"total"`
			}
			if err := c.Request(ctx, http.MethodGet, target, nil, &data, nil); err != nil {
				yield(nil, err)
				return
			}
			for _, it := range data.Items {
				if !yield(it, nil) {
					return
				}
			}
			seen += len(data.Items)
			if len(data.Items) == 0 {
				return
			}
			if after != "" {
				next := data.Items[len(data.Items)-1]
				if after = next.String("id"); after == "" {
					after = next.Token()
				}
				if len(data.Items) < limit || after == "" {
					return
				}
				continue
			}
			if seen >= data.Total || len(data.Items) < limit {
				return
			}
		}
	}
}

// Helpers for the getting-started journey. Each returns the object the
// API answered.

// Partner is partner_details: who the credentials belong to (its
// "merchant" is the master merchant token for users and applications).
func (c *Client) Partner(ctx context.Context) (Object, error) {
	return c.object(ctx, http.MethodGet, "/v2/partner", nil, nil)
}

// CreateUser is user_create.
func (c *Client) CreateUser(ctx context.Context, user Object, opts ...*Options) (Object, error) {
	return c.object(ctx, http.MethodPost, "/v2/users", user, opts)
}

// AMLCheck is aml_check (first_name, last_name, nationality, birthday).
// A match is *Error code 18001 whose Object() is the check, with its token
// and matches.
func (c *Client) AMLCheck(ctx context.Context, person Object, opts ...*Options) (Object, error) {
	return c.object(ctx, http.MethodPost, "/v1/aml", person, opts)
}

// CreateAccount is account_create (program, and user or merchant).
func (c *Client) CreateAccount(ctx context.Context, account Object, opts ...*Options) (Object, error) {
	return c.object(ctx, http.MethodPost, "/v2/accounts", account, opts)
}

// CreateCard is card_create (account and type "virtual", say).
func (c *Client) CreateCard(ctx context.Context, card Object, opts ...*Options) (Object, error) {
	return c.object(ctx, http.MethodPost, "/v2/cards", card, opts)
}

// SetCardStatus is card_status ("active" or "inactive").
func (c *Client) SetCardStatus(ctx context.Context, card, status string) (Object, error) {
	return c.object(ctx, http.MethodPut, "/v2/cards/"+url.PathEscape(card)+"/status", Object{"status": status}, nil)
}

func (c *Client) object(ctx context.Context, method, path string, body any, opts []*Options) (Object, error) {
	var o *Options
	if len(opts) > 0 {
		o = opts[0]
	}
	var out Object
	if err := c.Request(ctx, method, path, body, &out, o); err != nil {
		return nil, err
	}
	return out, nil
}

// Webhooks.

// DefaultWebhookTolerance is how far webhook-timestamp may be from the
// receiver's clock, in either direction.
const DefaultWebhookTolerance = 5 * time.Minute

// ErrWebhookSignature is returned (wrapped) by VerifyWebhook for every
// refused delivery.
var ErrWebhookSignature = errors.New("emi: webhook not verified")

// VerifyWebhook checks a delivery as the Standard Webhooks specification
// says: webhook-signature holds one or more "v1,<base64>" signatures
// (two while a secret is rotated) of webhook-id + "." + webhook-timestamp
// + "." + the raw body, HMAC-SHA256 keyed with the base64 after "whsec_"
// of secret; one must match (compared in constant time), and the
// timestamp must be within tolerance (0: DefaultWebhookTolerance) of now.
// Pass the body exactly as received, before any JSON parsing. It returns
// the event.
func VerifyWebhook(secret string, header http.Header, body []byte, tolerance time.Duration, now time.Time) (Object, error) {
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	key, err := webhookKey(secret)
	if err != nil {
		return nil, err
	}
	id, ts, sigs := header.Get("webhook-id"), header.Get("webhook-timestamp"), header.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return nil, fmt.Errorf("%w: webhook-id, webhook-timestamp and webhook-signature are required", ErrWebhookSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: webhook-timestamp is not UNIX seconds", ErrWebhookSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return nil, fmt.Errorf("%w: webhook-timestamp is %s away from now", ErrWebhookSignature, d.Round(time.Second))
	}
	want := webhookMAC(key, id, ts, body)
	for _, s := range strings.Fields(sigs) {
		v, b64, ok := strings.Cut(s, ",")
		if !ok || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			var event Object
			if err := json.Unmarshal(body, &event); err != nil {
				return nil, fmt.Errorf("%w: the body is not JSON", ErrWebhookSignature)
			}
			return event, nil
		}
	}
	return nil, fmt.Errorf("%w: no signature matches", ErrWebhookSignature)
}

// SignWebhook returns the webhook-signature value emi sends for a delivery
// (one secret): for tests of your receiver.
func SignWebhook(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := webhookKey(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(webhookMAC(key, id, strconv.FormatInt(timestamp, 10), body)), nil
}

func webhookKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, errors.New("emi: the webhook secret is not whsec_ followed by base64")
	}
	return key, nil
}

func webhookMAC(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return m.Sum(nil)
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
