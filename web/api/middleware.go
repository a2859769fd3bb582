package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/web/httpx"
)

// Operation describes a route of the partner API.
type Operation struct {
	// Name is the seed's operation name; it is part of what the partner signs.
	Name string
	// Invalid is the endpoint's validation error (11001, -3, 12001, 13001),
	// used for unknown fields and wrong types as well as for rule failures.
	Invalid *emi.Error
	// BodyLimit is the largest body accepted (contract §1).
	BodyLimit int64
}

// Body limits of contract §1.
const (
	SmallBody    int64 = 1 << 20  // 1 MiB
	DocumentBody int64 = 20 << 20 // 20 MiB, for requests carrying base64 documents
)

type requestKey struct{}

// request is what the middleware learned about the request, for handlers.
type request struct {
	op   Operation
	body []byte
}

func fromContext(ctx context.Context) *request {
	if rq, ok := ctx.Value(requestKey{}).(*request); ok {
		return rq
	}
	return &request{}
}

// body returns the request body as read (and size-checked) by the middleware.
func body(r *http.Request) []byte { return fromContext(r.Context()).body }

// decode strictly decodes the request body into dst with the endpoint's
// validation error, holding it to the operation's request schema in
// openapi.yaml where the Go type cannot (schema.go): it is the one decoder
// of every request body (decodeAll runs it too). See httpx.DecodeJSONWith
// for the answers.
func decode(r *http.Request, dst any) error {
	rq := fromContext(r.Context())
	return httpx.DecodeJSONWith(rq.body, dst, rq.op.Invalid, requestSchema(rq.op.Name))
}

// decodeAll decodes the body into dst as decode does, except that fields of
// the wrong type do not stop it: they are left out of dst and returned as
// problems, and every other field is decoded, so an update reports every
// problem at once (the service adds its own to these). invalid is the
// operation's validation error; any other error is returned as err.
func decodeAll[T any](r *http.Request, dst *T, invalid *emi.Error) (bad []emi.FieldError, err error) {
	err = decode(r, dst)
	if err == nil {
		return nil, nil
	}
	e := emi.AsError(err)
	if e.Code != invalid.Code {
		return nil, err
	}
	bad = e.Fields
	var zero T
	*dst = zero
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(body(r), &keys)
	for k, v := range keys {
		if slices.ContainsFunc(bad, func(f emi.FieldError) bool {
			return f.Field == k || strings.HasPrefix(f.Field, k+"[") || strings.HasPrefix(f.Field, k+".")
		}) {
			continue
		}
		one, _ := json.Marshal(map[string]json.RawMessage{k: v})
		_ = json.Unmarshal(one, dst)
	}
	return bad, nil
}

// presentKeys returns the top-level keys of the body, and the problems of
// the keys that are not allowed (refused, each named with msg).
func presentKeys(r *http.Request, refused []string, msg string) (map[string]bool, []emi.FieldError) {
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(body(r), &keys) // decode has checked the body
	present := map[string]bool{}
	var bad []emi.FieldError
	for k := range keys {
		if slices.Contains(refused, k) {
			bad = append(bad, emi.FieldError{Field: k, Message: msg})
			continue
		}
		present[k] = true
	}
	return present, bad
}

// filterValueMessage is the field message of a query filter value that
// httpx.StorableText refuses (found by the hostile input sweep on
// accounts_list and cards_list ?program=, which answered 500).
const filterValueMessage = "must be valid UTF-8 without NUL characters"

// partner returns the authenticated principal.
func partner(r *http.Request) emi.Principal {
	p, _ := emi.PrincipalFrom(r.Context())
	return p
}

// chain wraps h in the per-operation middleware, outermost first: read the
// body within the limit, authenticate, rate-limit, then consume the
// signature (replay guard) with Idempotency-Key handling.
func (a *API) chain(op Operation, h http.HandlerFunc) http.Handler {
	var next http.Handler = h
	if a.d.TestClocks != nil {
		next = a.testClock(next)
	}
	next = a.idempotent(next)
	next = a.queryGuard(op, next)
	if a.limiter != nil {
		next = a.rateLimit(next)
	}
	next = a.authenticate(next)
	if a.inflight != nil {
		next = a.admit(next)
	}
	return a.readRequest(op, next)
}

// admit bounds the requests worked on at once: past Deps.MaxInFlight a
// request waits for a place, in arrival order as far as Go's channel
// receive is fair, up to Deps.QueueWait, and is then answered 503 / 10503
// with Retry-After before anything reads the database: nothing was changed,
// and the client may send it again. Without it an overload waited for a
// database connection until the request's 30 s deadline, each waiting
// request holding its goroutine and body. It runs before the key lookup, so
// a refused request costs no query; the order of the chain still puts it
// after the body is read within the operation's limit.
func (a *API) admit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case a.inflight <- struct{}{}:
		default:
			t := time.NewTimer(a.d.QueueWait)
			select {
			case a.inflight <- struct{}{}:
				t.Stop()
			case <-t.C:
				writeError(w, r, emi.ErrUnavailable.WithDetail("overloaded: %d requests in flight for %v", cap(a.inflight), a.d.QueueWait))
				return
			case <-r.Context().Done():
				t.Stop()
				writeError(w, r, emi.ErrUnavailable.Wrap(r.Context().Err()))
				return
			}
		}
		defer func() { <-a.inflight }()
		next.ServeHTTP(w, r)
	})
}

// RequestTimeout bounds the work of one API request: a query that hangs is
// cancelled and its connection returned instead of being held forever. It
// starts once the body is read: the upload is bounded by the server's
// ReadTimeout (60 s in `emi serve`), and a partner on a slow link sending a
// 10 MiB document must not have the upload eat the time of the work (under
// load, a 14 MB user_create spent its 30 s receiving and parsing and was
// answered 503).
const RequestTimeout = 30 * time.Second

// readRequest reads the body within the operation's limit (413 / 10013) and
// checks its content type (10005), before anything else looks at it. Then
// it puts the request deadline on the context.
func (a *API) readRequest(op Operation, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.Fields(r.Context()).SetOperation(op.Name)
		// Headers first: a malformed Idempotency-Key or x-* value must not
		// reach the key lookup, the replay guard or the idempotency store.
		if err := httpx.CheckHeaders(r.Header, kernel.MaxIdempotencyKeyLen); err != nil {
			writeError(w, r, err)
			return
		}
		b, err := httpx.ReadBody(w, r, op.BodyLimit)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if err := httpx.CheckJSONContentType(r, b); err != nil {
			writeError(w, r, err)
			return
		}
		r.Body = http.NoBody
		tctx, cancel := context.WithTimeout(r.Context(), RequestTimeout)
		defer cancel()
		ctx := context.WithValue(tctx, requestKey{}, &request{op: op, body: b})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func signedRequest(r *http.Request) emi.SignedRequest {
	rq := fromContext(r.Context())
	return emi.SignedRequest{
		APIKey:    r.Header.Get("x-api-key"),
		Timestamp: r.Header.Get("x-timestamp"),
		Hash:      r.Header.Get("x-hash"),
		Version:   r.Header.Get("x-signature-version"),
		Nonce:     r.Header.Get("x-nonce"),
		Operation: rq.op.Name,
		Method:    r.Method,
		Target:    requestTarget(r),
		Body:      rq.body,
	}
}

// requestTarget is the request target as the client sent it (contract §2):
// the path, plus "?" and the raw query when there is one, byte for byte
// (no decoding or re-encoding), so that what the partner signed in version
// 2 is what is verified. A request in absolute form (a proxy's) gives its
// path and query.
func requestTarget(r *http.Request) string {
	if strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// authenticate verifies the HMAC signature and puts the partner principal in
// the context (401 / 10001 or 10002 otherwise).
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sr := signedRequest(r)
		sr.Operations = a.paths.operations()
		p, err := a.auth.Authenticate(r.Context(), sr)
		if err != nil {
			writeError(w, r, err)
			return
		}
		httpx.Fields(r.Context()).SetPartner(p.PartnerID)
		next.ServeHTTP(w, r.WithContext(emi.WithPrincipal(r.Context(), p)))
	})
}

// testClock runs the request of a sandbox partner on a test clock at the
// clock's time (kernel.WithFrozenTime; ops.TestClocks). It runs after the
// signature and its replay guard, which stay on the wall clock.
func (a *API) testClock(next http.Handler) http.Handler {
	reader := a.d.TestClocks.Reader()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, err := kernel.OnPartnerClock(r.Context(), reader, partner(r).PartnerID)
		if err != nil {
			writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// rateLimit limits requests per API key (429 / 10029 with Retry-After). The
// counters live in this process: with N instances behind a balancer the
// effective limit is up to N times the configured one.
func (a *API) rateLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.limiter.RespondOnLimit(w, r, partner(r).ActorID) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// idempotent consumes the signature (replay guard, 401 / 10003) and, for a
// POST with an Idempotency-Key, runs the request through the idempotency
// service: a retry gets the stored response byte for byte, a concurrent or
// mismatching use of the key 409 / 10409.
func (a *API) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := partner(r)
		sr := signedRequest(r)
		guard := func(ctx context.Context) error { return a.auth.Consume(ctx, p, sr) }
		key, has := r.Header["Idempotency-Key"]
		if !has || r.Method != http.MethodPost {
			if err := guard(r.Context()); err != nil {
				writeError(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		k := strings.TrimSpace(strings.Join(key, ","))
		if k == "" || len(k) > kernel.MaxIdempotencyKeyLen {
			writeError(w, r, emi.ErrBadRequest.Field("idempotency-key", "must be 1 to 255 characters").WithDetail("Idempotency-Key must be 1 to 255 characters"))
			return
		}
		fp := a.idem.Fingerprints(r.Method, r.URL.Path, body(r))
		resp, replayed, err := a.idem.Do(r.Context(), p.PartnerID, k, fp, guard, func(ctx context.Context) kernel.StoredResponse {
			rec := &bufferedWriter{header: http.Header{}}
			next.ServeHTTP(rec, r.WithContext(ctx))
			return rec.response()
		})
		if err != nil {
			writeError(w, r, err)
			return
		}
		if !replayed && resp.Status >= 500 && storedCode(resp.Body) == emi.ErrOutcomeUnknown.Code {
			// The run's answer came from inside the idempotency
			// transaction, which a 5xx rolls back: nothing was committed,
			// whatever the connection did.
			writeError(w, r, emi.ErrUnavailable)
			return
		}
		h := w.Header()
		for k, v := range resp.Headers {
			h.Set(k, v)
		}
		if replayed {
			h.Set("Idempotent-Replayed", "true")
			// The stored body carries the original code; log it as well.
			httpx.Fields(r.Context()).SetCode(storedCode(resp.Body))
		}
		w.WriteHeader(resp.Status)
		_, _ = w.Write(resp.Body)
	})
}

// storedHeaders are the response headers kept with a stored response.
// Retry-After is never stored (a 5xx is not), only passed on.
var storedHeaders = []string{"Content-Type", "Cache-Control", "Location", "X-Content-Type-Options", "Retry-After"}

// bufferedWriter captures a response so that it can be stored before it is
// sent.
type bufferedWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }
func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.buf.Write(p)
}
func (b *bufferedWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedWriter) response() kernel.StoredResponse {
	status := b.status
	if status == 0 {
		status = http.StatusOK
	}
	hs := map[string]string{}
	for _, k := range storedHeaders {
		if v := b.header.Get(k); v != "" {
			hs[k] = v
		}
	}
	return kernel.StoredResponse{Status: status, Headers: hs, Body: b.buf.Bytes()}
}
