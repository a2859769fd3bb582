package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"emi/internal/emi"
)

// DefaultTimeout bounds one attempt, from the first DNS lookup to the last
// byte of the answer read (contract §9: 10 s).
const DefaultTimeout = 10 * time.Second

// MaxAnswerBytes is how much of an answer is kept in WebhookResult.Body.
const MaxAnswerBytes = 1024

// drainBytes is how much more of an answer is read, and thrown away, so
// the connection can serve the next delivery; a longer answer costs its
// connection instead (closing the body unread makes the transport drop it).
const drainBytes = 64 << 10

// Client delivers webhook attempts. Build it with NewClient; it is safe for
// concurrent use and keeps connections to receivers open between attempts.
type Client struct {
	guard     Guard
	userAgent string
	timeout   time.Duration
	now       func() time.Time
	rootCAs   *x509.CertPool
	http      *http.Client
}

// Option changes a Client built by NewClient.
type Option func(*Client)

// WithTimeout sets the bound of one attempt (DefaultTimeout by default).
// Tests use a short one; a timeout that is not positive is ignored.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithClock sets the clock Retry-After dates are compared with (time.Now by
// default).
func WithClock(now func() time.Time) Option {
	return func(c *Client) {
		if now != nil {
			c.now = now
		}
	}
}

// withRootCAs makes the client trust pool instead of the system roots; the
// tests use it to reach an httptest TLS server.
func withRootCAs(pool *x509.CertPool) Option {
	return func(c *Client) { c.rootCAs = pool }
}

// NewClient returns a Client that connects only where g allows and sends
// userAgent as its User-Agent ("emi-webhooks" when empty).
func NewClient(g Guard, userAgent string, opts ...Option) *Client {
	if userAgent == "" {
		userAgent = "emi-webhooks"
	}
	c := &Client{guard: g, userAgent: userAgent, timeout: DefaultTimeout, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	transport := &http.Transport{
		// Never a proxy from HTTPS_PROXY and friends: the guard must see
		// the receiver's own address, and the proxy would be an SSRF
		// target of its own.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			// The transport no longer cancels a dial when the request
			// ends (the connection could serve another request), so the
			// dial gets its own bound.
			ctx, cancel := context.WithTimeout(ctx, c.timeout)
			defer cancel()
			return c.guard.DialContext(ctx, network, addr)
		},
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.rootCAs},
		TLSHandshakeTimeout:    c.timeout,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		// Without Accept-Encoding the answer comes uncompressed, and
		// MaxAnswerBytes counts what the receiver sent, not what a
		// compressed bomb would expand to.
		DisableCompression: true,
	}
	c.http = &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return c
}

// CloseIdleConnections closes the connections kept open for later attempts.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Deliver makes one attempt to deliver msg: a POST of msg.Body to msg.URL
// with the Standard Webhooks headers, within the client's timeout. It never
// returns a Go error: the result has the HTTP status (0 when no answer
// arrived), the latency, the first MaxAnswerBytes of the answer and, for a
// failure without a usable answer (invalid message or URL, blocked address,
// connection refused, TLS failure, timeout, redirect), Error in words fit
// for the delivery log. RetryAfter is set from a Retry-After header on 429
// and 503. Deliver follows no redirect: a 3xx is a failure.
func (c *Client) Deliver(ctx context.Context, msg emi.WebhookMessage) emi.WebhookResult {
	start := time.Now()
	u, err := c.guard.parseURL(msg.URL)
	if err != nil {
		return emi.WebhookResult{Error: err.Error()}
	}
	switch {
	case msg.ID == "":
		return emi.WebhookResult{Error: "message has no id: not sent"}
	case msg.Timestamp.IsZero():
		return emi.WebhookResult{Error: "message has no timestamp: not sent"}
	case len(msg.Secrets) == 0:
		return emi.WebhookResult{Error: "endpoint has no signing secret: not sent unsigned"}
	}

	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if u.Scheme == "http" {
		ctx = context.WithValue(ctx, loopbackOnlyKey{}, true)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(msg.Body))
	if err != nil {
		return emi.WebhookResult{Error: "the URL cannot be used: " + err.Error()}
	}
	req.Header.Set("webhook-id", msg.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(msg.Timestamp.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(msg))
	req.Header.Set("content-type", "application/json")
	req.Header.Set("user-agent", c.userAgent)

	resp, err := c.http.Do(req)
	if err != nil {
		return emi.WebhookResult{Latency: time.Since(start), Error: c.describe(ctx, err)}
	}
	defer func() {
		_, _ = io.CopyN(io.Discard, resp.Body, drainBytes)
		_ = resp.Body.Close()
	}()
	// A read error here (a receiver that sent its status and then stalled)
	// is not a failure: the status is the answer, the body only a courtesy.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes))
	res := emi.WebhookResult{Status: resp.StatusCode, Latency: time.Since(start), Body: body}
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		res.Error = "redirect not followed (HTTP " + strconv.Itoa(resp.StatusCode)
		if loc := resp.Header.Get("Location"); loc != "" {
			res.Error += " to " + truncate(loc, 200)
		}
		res.Error += "): configure the final URL"
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		res.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), c.now())
	}
	return res
}

// describe turns the error of a request that got no answer into a line for
// the delivery log, without Go's wrapping ("Post "…": dial tcp …:").
func (c *Client) describe(ctx context.Context, err error) string {
	var (
		blocked    *BlockedError
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		verify     *tls.CertificateVerificationError
		alert      tls.AlertError
		recordHdr  tls.RecordHeaderError
		opErr      *net.OpError
		timeoutErr interface{ Timeout() bool }
	)
	switch {
	case errors.As(err, &blocked):
		return blocked.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &timeoutErr) && timeoutErr.Timeout():
		return fmt.Sprintf("timeout: no answer within %s", c.timeout)
	case errors.Is(err, context.Canceled):
		return "canceled before an answer arrived (emi is shutting down): will be retried"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing accepts connections at that address and port"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the receiver closed the connection without answering"
	case errors.As(err, &unknownCA):
		return "TLS failure: the receiver's certificate is not signed by a trusted authority"
	case errors.As(err, &hostname):
		return "TLS failure: the receiver's certificate is not valid for this host name"
	case errors.As(err, &invalid):
		return "TLS failure: the receiver's certificate is invalid or expired"
	case errors.As(err, &verify):
		return "TLS failure: the receiver's certificate could not be verified"
	case errors.As(err, &alert), errors.As(err, &recordHdr):
		return "TLS failure: the handshake with the receiver failed (it must offer TLS 1.2 or later)"
	}
	// Keep the innermost message: the outer ones repeat the method and URL
	// ("Post "https://…": dial tcp …:"), which the log already shows.
	msg := err.Error()
	if errors.As(err, &opErr) {
		msg = opErr.Err.Error()
	} else {
		for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
			msg = e.Error()
		}
	}
	if strings.HasPrefix(msg, "tls: ") {
		// Alerts from the receiver (remote error: tls: protocol version
		// not supported) have no exported type.
		return "TLS failure: the handshake with the receiver failed (" + msg + ")"
	}
	return "connection failed: " + msg
}

// parseRetryAfter returns the delay a Retry-After value asks for, as
// seconds or as an HTTP date compared with now, capped at MaxRetryAfter. It
// returns 0 for an empty, invalid or past value.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil || secs > uint64(MaxRetryAfter/time.Second) {
			// Only digits, so an error means the number is too large.
			return MaxRetryAfter
		}
		return time.Duration(secs) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return min(max(t.Sub(now), 0), MaxRetryAfter)
}

// truncate returns s cut to at most n bytes, without splitting a UTF-8
// sequence, with "…" when something was cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
