package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"emi/internal/emi"
)

// The attempt timeout in tests. A test whose subject is the timeout uses
// shortTimeout, to end quickly; every other test uses roomyTimeout, so a
// loaded machine cannot turn its TLS failure or its answer into a
// timeout (a 1 s bound did: a handshake under -race beside a CPU hog took
// longer).
const (
	shortTimeout = time.Second
	roomyTimeout = 30 * time.Second
)

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a loopback webhook receiver that records what it gets.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

// newReceiver starts a receiver on 127.0.0.1 answering with handle (after
// recording the request), closed when the test ends.
func newReceiver(t *testing.T, tls bool, handle http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, received{req.Header.Clone(), body})
		r.mu.Unlock()
		handle(w, req)
	})
	r.Server = httptest.NewUnstartedServer(h)
	// Refused handshakes are expected in these tests, not news.
	r.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		r.StartTLS()
	} else {
		r.Start()
	}
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

func (r *receiver) last(t *testing.T) received {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		t.Fatal("the receiver got no request")
	}
	return r.reqs[len(r.reqs)-1]
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// anyPort lets a sandbox guard reach every loopback port: the receivers of
// these tests listen on ports the system picks. The sandbox's own default
// (a few ports, never emi's or the database's) is config's; the port rule
// itself is TestGuardLoopbackPorts and TestDeliverNeverReachesAReservedPort.
var anyPort = []PortRange{{1, 65535}}

// sandboxClient may reach loopback, as in sandbox mode and `make run`.
func sandboxClient(t *testing.T, opts ...Option) *Client {
	t.Helper()
	c := NewClient(Guard{AllowLoopbackHTTP: true, LoopbackPorts: anyPort}, "emi-test/1", append([]Option{WithTimeout(roomyTimeout)}, opts...)...)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func message(t *testing.T, url string) emi.WebhookMessage {
	t.Helper()
	_, key := NewSecret()
	return emi.WebhookMessage{
		ID:        "evt_" + strconv.FormatInt(time.Now().UnixNano(), 36),
		Timestamp: time.Now(),
		URL:       url,
		// Not canonical JSON on purpose: the bytes must arrive as they are.
		Body:    []byte("{\"id\": \"evt_1\",  \"type\":\"webhook.test\", \"data\": {\"name\": \"Zoë\", \"n\": 1.50}}\n"),
		Secrets: [][]byte{key},
	}
}

func TestDeliver(t *testing.T) {
	t.Run("headers and the exact body bytes arrive as sent and the reference library verifies them", func(t *testing.T) {
		r := newReceiver(t, false, status(http.StatusOK))
		msg := message(t, r.URL+"/hooks?x=1")
		res := sandboxClient(t).Deliver(context.Background(), msg)
		if !res.OK() || res.Status != 200 || res.Error != "" {
			t.Fatalf("Deliver = %+v, want 200", res)
		}
		got := r.last(t)
		if !bytes.Equal(got.body, msg.Body) {
			t.Errorf("body = %q, want %q", got.body, msg.Body)
		}
		for name, want := range map[string]string{
			"webhook-id":        msg.ID,
			"webhook-timestamp": strconv.FormatInt(msg.Timestamp.Unix(), 10),
			"webhook-signature": Sign(msg),
			"content-type":      "application/json",
			"user-agent":        "emi-test/1",
		} {
			if v := got.header.Get(name); v != want {
				t.Errorf("header %s = %q, want %q", name, v, want)
			}
		}
		wh, _ := standardwebhooks.NewWebhookRaw(msg.Secrets[0])
		if err := wh.Verify(got.body, got.header); err != nil {
			t.Errorf("reference verifier: %v", err)
		}
	})

	t.Run("a two-secret delivery verifies with either secret and not with another", func(t *testing.T) {
		r := newReceiver(t, false, status(http.StatusNoContent))
		oldText, _ := NewSecret()
		newText, _ := NewSecret()
		otherText, _ := NewSecret()
		msg := message(t, r.URL)
		msg.Secrets = [][]byte{mustParseSecret(t, oldText), mustParseSecret(t, newText)}
		if res := sandboxClient(t).Deliver(context.Background(), msg); !res.OK() {
			t.Fatalf("Deliver = %+v", res)
		}
		got := r.last(t)
		for _, tc := range []struct {
			secret string
			ok     bool
		}{{oldText, true}, {newText, true}, {otherText, false}} {
			wh, err := standardwebhooks.NewWebhook(tc.secret)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(got.body, got.header); (err == nil) != tc.ok {
				t.Errorf("Verify with secret (ok=%v) = %v", tc.ok, err)
			}
		}
	})

	outcomes := []struct {
		name       string
		handle     http.HandlerFunc
		wantStatus int
		wantOK     bool
		wantGone   bool
		wantError  string
		wantBody   string
	}{
		{"a 200 is a success and its answer is kept", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "thanks") }, 200, true, false, "", "thanks"},
		{"a 204 is a success", status(http.StatusNoContent), 204, true, false, "", ""},
		{"a 500 is a failure with its status", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "database down", http.StatusInternalServerError)
		}, 500, false, false, "", "database down\n"},
		{"a 410 asks never to be called again", status(http.StatusGone), 410, false, true, "", ""},
		{"a 429 without Retry-After is a failure", status(http.StatusTooManyRequests), 429, false, false, "", ""},
		{"a 302 is not followed and is a failure", func(w http.ResponseWriter, req *http.Request) {
			http.Redirect(w, req, "/elsewhere", http.StatusFound)
		}, 302, false, false, "redirect not followed (HTTP 302 to /elsewhere)", ""},
		{"a 308 is not followed either", func(w http.ResponseWriter, req *http.Request) {
			http.Redirect(w, req, "https://other.example.com/", http.StatusPermanentRedirect)
		}, 308, false, false, "redirect not followed", ""},
	}
	for _, tc := range outcomes {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t, false, tc.handle)
			res := sandboxClient(t).Deliver(context.Background(), message(t, r.URL))
			if res.Status != tc.wantStatus || res.OK() != tc.wantOK || res.Gone() != tc.wantGone {
				t.Fatalf("Deliver = %+v; want status %d, ok %v, gone %v", res, tc.wantStatus, tc.wantOK, tc.wantGone)
			}
			if !strings.Contains(res.Error, tc.wantError) || (tc.wantError == "" && res.Error != "") {
				t.Errorf("Error = %q, want %q", res.Error, tc.wantError)
			}
			if tc.wantBody != "" && string(res.Body) != tc.wantBody {
				t.Errorf("Body = %q, want %q", res.Body, tc.wantBody)
			}
			if res.Latency <= 0 {
				t.Errorf("Latency = %v", res.Latency)
			}
			if n := r.count(); n != 1 {
				t.Errorf("the receiver got %d requests, want 1 (a redirect is not followed)", n)
			}
		})
	}

	t.Run("a receiver that never answers times out after the timeout", func(t *testing.T) {
		r := newReceiver(t, false, func(_ http.ResponseWriter, req *http.Request) { <-req.Context().Done() })
		res := sandboxClient(t, WithTimeout(shortTimeout)).Deliver(context.Background(), message(t, r.URL))
		assertTimeout(t, res)
	})

	t.Run("a receiver that accepts the connection and never reads times out", func(t *testing.T) {
		ln := silentListener(t)
		res := sandboxClient(t, WithTimeout(shortTimeout)).Deliver(context.Background(), message(t, "http://"+ln.Addr().String()+"/"))
		assertTimeout(t, res)
	})

	t.Run("a receiver that sends headers but never the body is a success", func(t *testing.T) {
		r := newReceiver(t, false, func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			<-req.Context().Done()
		})
		// The body's read ends at the timeout: the subject.
		res := sandboxClient(t, WithTimeout(shortTimeout)).Deliver(context.Background(), message(t, r.URL))
		if !res.OK() || string(res.Body) != "partial" {
			t.Fatalf("Deliver = %+v, want a 200 with the part of the answer that came", res)
		}
	})

	t.Run("a refused connection has no status and says so", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		res := sandboxClient(t).Deliver(context.Background(), message(t, "http://"+addr+"/"))
		if res.Status != 0 || res.OK() || !strings.Contains(res.Error, "connection refused") {
			t.Fatalf("Deliver = %+v, want status 0 and connection refused", res)
		}
	})

	t.Run("an unknown host has no status and says so", func(t *testing.T) {
		c := NewClient(Guard{Resolver: newFakeResolver(map[string][]string{})}, "emi-test/1", WithTimeout(roomyTimeout))
		res := c.Deliver(context.Background(), message(t, "https://nosuch.example.com/hooks"))
		if res.Status != 0 || !strings.Contains(res.Error, "the host nosuch.example.com does not exist") || strings.Contains(res.Error, "Post") {
			t.Fatalf("Deliver = %+v, want an unknown host", res)
		}
	})

	t.Run("a connection reset without an answer has no status and says so", func(t *testing.T) {
		r := newReceiver(t, false, reset)
		res := sandboxClient(t).Deliver(context.Background(), message(t, r.URL))
		if res.Status != 0 || res.OK() || !strings.Contains(res.Error, "closed the connection without answering") {
			t.Fatalf("Deliver = %+v, want status 0 and a closed connection", res)
		}
	})

	t.Run("a 429 with Retry-After 120 asks for 120 seconds", func(t *testing.T) {
		r := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		})
		res := sandboxClient(t).Deliver(context.Background(), message(t, r.URL))
		if res.Status != 429 || res.RetryAfter != 120*time.Second {
			t.Fatalf("Deliver = %+v, want 429 and RetryAfter 2m", res)
		}
		if d, _ := Delay(res, 1, fixed(0.5)); d != 120*time.Second {
			t.Fatalf("Delay = %v, want 2m", d)
		}
	})

	t.Run("a 503 with a Retry-After date asks for the time until then", func(t *testing.T) {
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		r := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		res := sandboxClient(t, WithClock(func() time.Time { return now })).Deliver(context.Background(), message(t, r.URL))
		if res.Status != 503 || res.RetryAfter != 90*time.Second {
			t.Fatalf("Deliver = %+v, want 503 and RetryAfter 90s", res)
		}
	})

	t.Run("Retry-After on a 500 is ignored", func(t *testing.T) {
		r := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusInternalServerError)
		})
		if res := sandboxClient(t).Deliver(context.Background(), message(t, r.URL)); res.RetryAfter != 0 {
			t.Fatalf("RetryAfter = %v, want 0", res.RetryAfter)
		}
	})

	for _, tc := range []struct {
		name   string
		handle http.HandlerFunc
	}{
		{"a 10 MiB answer is cut to 1 KiB and costs nothing", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write(bytes.Repeat([]byte("a"), 10<<20))
		}},
		{"an endless answer is cut to 1 KiB and does not hold the call", func(w http.ResponseWriter, req *http.Request) {
			chunk := bytes.Repeat([]byte("b"), 32<<10)
			for req.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t, false, tc.handle)
			c := NewClient(Guard{AllowLoopbackHTTP: true, LoopbackPorts: anyPort}, "emi-test/1", WithTimeout(5*time.Second))
			t.Cleanup(c.CloseIdleConnections)
			start := time.Now()
			res := c.Deliver(context.Background(), message(t, r.URL))
			if !res.OK() || len(res.Body) != MaxAnswerBytes {
				t.Fatalf("Deliver = status %d, %d body bytes, %q; want 200 and %d bytes", res.Status, len(res.Body), res.Error, MaxAnswerBytes)
			}
			if took := time.Since(start); took > time.Second {
				t.Fatalf("Deliver took %v", took)
			}
		})
	}

	t.Run("invalid messages are not sent", func(t *testing.T) {
		r := newReceiver(t, false, status(http.StatusOK))
		c := sandboxClient(t)
		for _, tc := range []struct {
			change func(*emi.WebhookMessage)
			want   string
		}{
			{func(m *emi.WebhookMessage) { m.Secrets = nil }, "no signing secret"},
			{func(m *emi.WebhookMessage) { m.ID = "" }, "no id"},
			{func(m *emi.WebhookMessage) { m.Timestamp = time.Time{} }, "no timestamp"},
			{func(m *emi.WebhookMessage) { m.URL = "not a url" }, "not a valid absolute URL"},
		} {
			msg := message(t, r.URL)
			tc.change(&msg)
			if res := c.Deliver(context.Background(), msg); res.OK() || !strings.Contains(res.Error, tc.want) {
				t.Errorf("Deliver = %+v, want an error containing %q", res, tc.want)
			}
		}
		if n := r.count(); n != 0 {
			t.Fatalf("the receiver got %d requests", n)
		}
	})

	t.Run("an https receiver with a trusted certificate is reached", func(t *testing.T) {
		r := newReceiver(t, true, status(http.StatusOK))
		res := sandboxClient(t, withRootCAs(certPool(r))).Deliver(context.Background(), message(t, r.URL))
		if !res.OK() {
			t.Fatalf("Deliver = %+v", res)
		}
	})

	t.Run("an https receiver with an untrusted certificate is a TLS failure without status", func(t *testing.T) {
		r := newReceiver(t, true, status(http.StatusOK))
		res := sandboxClient(t).Deliver(context.Background(), message(t, r.URL))
		if res.Status != 0 || !strings.Contains(res.Error, "TLS failure") || !strings.Contains(res.Error, "certificate") {
			t.Fatalf("Deliver = %+v, want a TLS failure", res)
		}
		if n := r.count(); n != 0 {
			t.Fatalf("the receiver got %d requests", n)
		}
	})

	t.Run("an https receiver offering only TLS 1.1 is a TLS failure", func(t *testing.T) {
		var got atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
		srv.TLS = &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		t.Cleanup(srv.Close)
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		res := sandboxClient(t, withRootCAs(pool)).Deliver(context.Background(), message(t, srv.URL))
		if res.Status != 0 || !strings.Contains(res.Error, "TLS failure") || got.Load() != 0 {
			t.Fatalf("Deliver = %+v, want a TLS failure", res)
		}
	})

	t.Run("a canceled context stops the attempt", func(t *testing.T) {
		r := newReceiver(t, false, func(_ http.ResponseWriter, req *http.Request) { <-req.Context().Done() })
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		c := NewClient(Guard{AllowLoopbackHTTP: true, LoopbackPorts: anyPort}, "", WithTimeout(5*time.Second))
		t.Cleanup(c.CloseIdleConnections)
		res := c.Deliver(ctx, message(t, r.URL))
		if res.OK() || !strings.Contains(res.Error, "canceled") {
			t.Fatalf("Deliver = %+v, want canceled", res)
		}
	})

	t.Run("concurrent deliveries share the client safely", func(t *testing.T) {
		r := newReceiver(t, false, status(http.StatusOK))
		c := NewClient(Guard{AllowLoopbackHTTP: true, LoopbackPorts: anyPort}, "emi-test/1", WithTimeout(5*time.Second))
		t.Cleanup(c.CloseIdleConnections)
		var wg sync.WaitGroup
		var ok atomic.Int32
		for range 32 {
			wg.Go(func() {
				if res := c.Deliver(context.Background(), message(t, r.URL)); res.OK() {
					ok.Add(1)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 32 || r.count() != 32 {
			t.Fatalf("%d of 32 deliveries succeeded, receiver got %d", ok.Load(), r.count())
		}
	})
}

// TestDeliverGuard is the dial-time half of W6: whatever the URL looked like
// when it was registered, the client connects only where the guard allows,
// and a refused delivery reaches nobody.
func TestDeliverGuard(t *testing.T) {
	t.Run("an https URL to loopback is refused at dial time in production and the receiver gets nothing", func(t *testing.T) {
		r := newReceiver(t, true, status(http.StatusOK))
		c := NewClient(Guard{}, "emi-test/1", WithTimeout(roomyTimeout), withRootCAs(certPool(r)))
		res := c.Deliver(context.Background(), message(t, r.URL))
		if res.Status != 0 || res.OK() || !strings.Contains(res.Error, "blocked address") {
			t.Fatalf("Deliver = %+v, want a blocked address", res)
		}
		if n := r.count(); n != 0 {
			t.Fatalf("the receiver got %d requests", n)
		}
	})

	t.Run("a host name that rebinds to loopback after registration is refused at dial time", func(t *testing.T) {
		r := newReceiver(t, true, status(http.StatusOK))
		_, port, _ := net.SplitHostPort(r.Listener.Addr().String())
		url := "https://example.com:" + port + "/hooks" // the httptest certificate names example.com
		dns := newFakeResolver(map[string][]string{"example.com": {"93.184.216.34"}})
		g := Guard{Resolver: dns}
		if err := g.CheckURL(context.Background(), url); err != nil {
			t.Fatalf("CheckURL at registration = %v", err)
		}
		dns.set("example.com", "127.0.0.1") // the attacker's DNS answer changes
		c := NewClient(g, "emi-test/1", WithTimeout(roomyTimeout), withRootCAs(certPool(r)))
		res := c.Deliver(context.Background(), message(t, url))
		if res.Status != 0 || !strings.Contains(res.Error, "blocked address: example.com resolves to 127.0.0.1") {
			t.Fatalf("Deliver = %+v, want a blocked address", res)
		}
		if n := r.count(); n != 0 {
			t.Fatalf("the receiver got %d requests", n)
		}
	})

	t.Run("the same host name is reached in sandbox mode, so the refusal above is the guard's", func(t *testing.T) {
		r := newReceiver(t, true, status(http.StatusOK))
		_, port, _ := net.SplitHostPort(r.Listener.Addr().String())
		dns := newFakeResolver(map[string][]string{"example.com": {"127.0.0.1"}})
		c := NewClient(Guard{AllowLoopbackHTTP: true, LoopbackPorts: anyPort, Resolver: dns}, "emi-test/1", WithTimeout(roomyTimeout), withRootCAs(certPool(r)))
		t.Cleanup(c.CloseIdleConnections)
		if res := c.Deliver(context.Background(), message(t, "https://example.com:"+port+"/hooks")); !res.OK() {
			t.Fatalf("Deliver = %+v", res)
		}
		if n := r.count(); n != 1 {
			t.Fatalf("the receiver got %d requests, want 1", n)
		}
	})

	t.Run("plain http is refused in production before any connection", func(t *testing.T) {
		r := newReceiver(t, false, status(http.StatusOK))
		res := NewClient(Guard{}, "emi-test/1", WithTimeout(roomyTimeout)).Deliver(context.Background(), message(t, r.URL))
		if res.Status != 0 || !strings.Contains(res.Error, "https://") {
			t.Fatalf("Deliver = %+v, want https required", res)
		}
		if n := r.count(); n != 0 {
			t.Fatalf("the receiver got %d requests", n)
		}
	})

	t.Run("plain http in sandbox mode to a name that resolves to a public address is refused before connecting", func(t *testing.T) {
		dns := newFakeResolver(map[string][]string{"hooks.example.com": {"93.184.216.34"}})
		c := NewClient(Guard{AllowLoopbackHTTP: true, LoopbackPorts: anyPort, Resolver: dns}, "emi-test/1", WithTimeout(roomyTimeout))
		res := c.Deliver(context.Background(), message(t, "http://hooks.example.com/emi"))
		if res.Status != 0 || !strings.Contains(res.Error, "blocked address") || !strings.Contains(res.Error, "plain http://") {
			t.Fatalf("Deliver = %+v, want a blocked address", res)
		}
	})

	t.Run("a private address is refused in sandbox mode too", func(t *testing.T) {
		dns := newFakeResolver(map[string][]string{"db.internal": {"10.0.0.7"}})
		c := NewClient(Guard{AllowLoopbackHTTP: true, LoopbackPorts: anyPort, Resolver: dns}, "emi-test/1", WithTimeout(roomyTimeout))
		res := c.Deliver(context.Background(), message(t, "http://db.internal:5432/"))
		if res.Status != 0 || !strings.Contains(res.Error, "blocked address") || !strings.Contains(res.Error, "private network") {
			t.Fatalf("Deliver = %+v, want a blocked address", res)
		}
	})
}

// TestDeliverNeverReachesAReservedPort: in the sandbox a loopback delivery
// goes only to the ports the operator allows, and never to a reserved one
// (emi's own listener, the database), even when the allowed list takes
// every port: the dial is refused before any connection, so the listener
// there gets nothing. The same receiver on a port that is allowed and not
// reserved gets the delivery.
func TestDeliverNeverReachesAReservedPort(t *testing.T) {
	r := newReceiver(t, false, status(http.StatusOK))
	_, p, _ := net.SplitHostPort(r.Listener.Addr().String())
	port64, _ := strconv.ParseUint(p, 10, 16)
	port := uint16(port64)
	reserved := NewReservedPorts()
	reserved.Add(port, "the database's port (DATABASE_URL)")
	for _, tc := range []struct {
		name  string
		guard Guard
		want  string
	}{
		{"a reserved port listed among the allowed ones", Guard{AllowLoopbackHTTP: true, LoopbackPorts: anyPort, Reserved: reserved},
			"is a loopback port emi never delivers webhooks to: it is the database's port (DATABASE_URL)"},
		{"a port the operator does not allow", Guard{AllowLoopbackHTTP: true, LoopbackPorts: []PortRange{{8081, 8081}, {9999, 9999}}},
			"EMI_SANDBOX_WEBHOOK_PORTS: 8081, 9999"},
		{"no port allowed at all", Guard{AllowLoopbackHTTP: true}, "EMI_SANDBOX_WEBHOOK_PORTS: none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClient(tc.guard, "emi-test/1", WithTimeout(roomyTimeout))
			t.Cleanup(c.CloseIdleConnections)
			for _, u := range []string{r.URL, strings.Replace(r.URL, "127.0.0.1", "[::ffff:127.0.0.1]", 1)} {
				res := c.Deliver(context.Background(), message(t, u))
				if res.Status != 0 || !strings.Contains(res.Error, "blocked address") || !strings.Contains(res.Error, tc.want) {
					t.Fatalf("Deliver(%s) = %+v, want blocked: %s", u, res, tc.want)
				}
			}
			if n := r.count(); n != 0 {
				t.Fatalf("the listener on the refused port got %d requests", n)
			}
		})
	}
	t.Run("the same port allowed and not reserved is reached, so the refusals are the rule's", func(t *testing.T) {
		c := NewClient(Guard{AllowLoopbackHTTP: true, LoopbackPorts: []PortRange{{port, port}}, Reserved: NewReservedPorts()}, "emi-test/1", WithTimeout(roomyTimeout))
		t.Cleanup(c.CloseIdleConnections)
		if res := c.Deliver(context.Background(), message(t, r.URL)); !res.OK() || r.count() != 1 {
			t.Fatalf("Deliver = %+v, receiver got %d", res, r.count())
		}
	})
}

// TestDeliverRetrySequence is W3 on the delivery side: a receiver answers
// 500, then stalls past the timeout, then resets the connection, then
// redirects, then accepts. The attempts are timed on a virtual clock by the
// schedule, not by sleeping: the delivery succeeds on attempt 5, and each
// attempt starts within the jitter bounds of the schedule.
func TestDeliverRetrySequence(t *testing.T) {
	var n atomic.Int32
	r := newReceiver(t, false, func(w http.ResponseWriter, req *http.Request) {
		switch n.Add(1) {
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		case 2:
			<-req.Context().Done()
		case 3:
			reset(w, req)
		case 4:
			http.Redirect(w, req, "/elsewhere", http.StatusFound)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	c := sandboxClient(t, WithTimeout(shortTimeout)) // attempt 2 stalls past it
	msg := message(t, r.URL)
	rnd := rand.New(rand.NewPCG(5, 6)).Float64

	wantErrors := []string{"", "timeout", "closed the connection", "redirect not followed", ""}
	var at, scheduled time.Duration // virtual time of the attempt; its unjittered time
	for attempt := 1; ; attempt++ {
		if attempt > MaxAttempts {
			t.Fatal("never succeeded")
		}
		lo, hi := time.Duration(float64(scheduled)*(1-Jitter)), time.Duration(float64(scheduled)*(1+Jitter))
		if at < lo || at > hi {
			t.Errorf("attempt %d at %v, want within [%v, %v]", attempt, at, lo, hi)
		}
		res := c.Deliver(context.Background(), msg)
		t.Logf("attempt %d at %v: status %d, latency %v, error %q", attempt, at, res.Status, res.Latency.Round(time.Millisecond), res.Error)
		if attempt <= len(wantErrors) && !strings.Contains(res.Error, wantErrors[attempt-1]) {
			t.Errorf("attempt %d error = %q, want %q", attempt, res.Error, wantErrors[attempt-1])
		}
		if res.OK() {
			if attempt != 5 {
				t.Fatalf("succeeded on attempt %d, want 5", attempt)
			}
			break
		}
		delay, giveUp := DelayAfter(res, attempt, at, rnd)
		if giveUp {
			t.Fatalf("gave up after attempt %d", attempt)
		}
		at += delay
		scheduled += Schedule()[attempt-1]
	}
	// Every attempt carried the same id and body (the receiver's idempotency key).
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, req := range r.reqs {
		if req.header.Get("webhook-id") != msg.ID || !bytes.Equal(req.body, msg.Body) {
			t.Errorf("attempt %d carried id %q", i+1, req.header.Get("webhook-id"))
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		want  time.Duration
	}{
		{"seconds are read as seconds", "120", 120 * time.Second},
		{"zero seconds is no delay", "0", 0},
		{"surrounding spaces are ignored", " 30 ", 30 * time.Second},
		{"a date in the future gives the time until then", now.Add(time.Hour).Format(http.TimeFormat), time.Hour},
		{"a date in the past gives no delay", now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"a delay over 24 hours is capped", "90000", 24 * time.Hour},
		{"a number too large for 64 bits is capped", "99999999999999999999999", 24 * time.Hour},
		{"a date more than 24 hours away is capped", now.Add(48 * time.Hour).Format(http.TimeFormat), 24 * time.Hour},
		{"a negative number is ignored", "-5", 0},
		{"a fraction is ignored", "1.5", 0},
		{"garbage is ignored", "soon", 0},
		{"an empty value is no delay", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseRetryAfter(tc.value, now); got != tc.want {
				t.Fatalf("parseRetryAfter(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}

func assertTimeout(t *testing.T, res emi.WebhookResult) {
	t.Helper()
	if res.Status != 0 || res.OK() || !strings.Contains(res.Error, "timeout") {
		t.Fatalf("Deliver = %+v, want status 0 and a timeout", res)
	}
	// It gave up at its timeout, not before, and did not wait for ever
	// (the receiver never answers); how long after is the machine's.
	if res.Latency < shortTimeout || res.Latency >= roomyTimeout {
		t.Fatalf("Latency = %v, want %v or a little more", res.Latency, shortTimeout)
	}
}

// silentListener accepts connections on 127.0.0.1 and never reads or
// writes; everything is closed when the test ends.
func silentListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln
}

// reset closes the connection at once with a TCP RST, without answering.
func reset(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

func certPool(r *receiver) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(r.Certificate())
	return pool
}
