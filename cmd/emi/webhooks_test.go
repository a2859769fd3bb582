package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/testwait"
	"emi/internal/webhook"
)

// TestWebhooksListen: `emi webhooks listen` prints each event and whether
// it verifies with the secret, answers 200 to a good signature and 400 to a
// bad one, and stops with its context.
func TestWebhooksListen(t *testing.T) {
	t.Parallel()
	whsec, key := webhook.NewSecret()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"webhooks", "listen", "--addr", "127.0.0.1:0", "--secret", whsec},
			func(string) string { return "" }, strings.NewReader(""), out, out)
	}()
	var url string
	testwait.Try(func() bool {
		if m := regexp.MustCompile(`receiving on (http://\S+/)`).FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	if url == "" {
		t.Fatalf("no address printed: %q", out.String())
	}
	send := func(secret []byte) int {
		body := []byte(`{"id":"evt-1","type":"card.activated","created_at":"2026-01-01T00:00:00Z","data":{"card":"c1"}}`)
		msg := emi.WebhookMessage{ID: "evt-1", Timestamp: time.Now(), Body: body, Secrets: [][]byte{secret}}
		req, _ := http.NewRequest(http.MethodPost, url+"webhooks", bytes.NewReader(body))
		req.Header.Set("webhook-id", msg.ID)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(msg.Timestamp.Unix(), 10))
		req.Header.Set("webhook-signature", webhook.Sign(msg))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := send(key); code != http.StatusOK {
		t.Fatalf("a good signature: HTTP %d\n%s", code, out.String())
	}
	if code := send([]byte("another key of at least 24 bytes!")); code != http.StatusBadRequest {
		t.Fatalf("a bad signature: HTTP %d\n%s", code, out.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("listen ended with %v", err)
	}
	printed := out.String()
	if !strings.Contains(printed, "card.activated evt-1 (webhook-id evt-1): signature verified") ||
		!strings.Contains(printed, "SIGNATURE INVALID") || !strings.Contains(printed, `"card": "c1"`) {
		t.Fatalf("printed:\n%s", printed)
	}
}

// TestWebhooksListenForwardsWhatTriggerSends runs the two developer tools
// end to end against a sandbox served by the real router and workers:
// `emi webhooks listen --forward-to URL` registers a temporary endpoint
// for the partner (signed with its key from the environment), prints its
// secret, relays each event with its Standard Webhooks headers to URL
// (where it verifies with that secret) and prints one line per event;
// `emi webhooks trigger TYPE` makes the sandbox emit one; stopping listen
// deletes the endpoint. trigger against a production server is refused,
// and a type outside the catalogue is reported with the API's reason.
func TestWebhooksListenForwardsWhatTriggerSends(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	wctx, stopWorkers := context.WithCancel(context.Background())
	workersDone := make(chan struct{})
	go func() { _ = env.App.RunWorkers(wctx); close(workersDone) }()
	t.Cleanup(func() { stopWorkers(); <-workersDone })
	p := env.NewPartner(t, emi.PartnerCreate{Name: "CLI Partner"})
	vars := map[string]string{"EMI_API_KEY": p.APIKey, "EMI_API_SECRET": p.APISecret, "EMI_API_URL": env.Server.URL}
	getenv := func(k string) string { return vars[k] }

	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	handler := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
	}))
	t.Cleanup(handler.Close)

	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"webhooks", "listen", "--addr", "127.0.0.1:0", "--forward-to", handler.URL + "/hooks", "--partner-file", ""},
			getenv, strings.NewReader(""), out, out)
	}()
	var endpoint, secret string
	re := regexp.MustCompile(`registered as endpoint (\S+), signing secret (whsec_\S+) `)
	testwait.Until(t, "listen registers its endpoint", func() bool {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			endpoint, secret = m[1], m[2]
		}
		return endpoint != "" || strings.Contains(out.String(), "emi webhooks listen:") && !strings.Contains(out.String(), "receiving")
	})
	if endpoint == "" {
		t.Fatalf("listen printed:\n%s", out.String())
	}

	var trig syncBuffer
	if err := run(context.Background(), []string{"webhooks", "trigger", "card.status_changed"}, getenv, strings.NewReader(""), &trig, &trig); err != nil {
		t.Fatalf("trigger: %v\n%s", err, trig.String())
	}
	m := regexp.MustCompile(`triggered card\.status_changed: event (\S+) `).FindStringSubmatch(trig.String())
	if m == nil {
		t.Fatalf("trigger printed %q", trig.String())
	}
	event := m[1]
	var req *http.Request
	var body []byte
	testwait.Until(t, "the event forwarded to the handler", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i, b := range bodies {
			if strings.Contains(string(b), event) {
				req, body = got[i], b
			}
		}
		return req != nil
	})
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, req.Header); err != nil || req.URL.Path != "/hooks" || req.Header.Get("webhook-id") != event {
		t.Fatalf("the forwarded event (%s, webhook-id %s) does not verify with the printed secret: %v", req.URL.Path, req.Header.Get("webhook-id"), err)
	}
	testwait.Until(t, "listen's line for the event", func() bool {
		return strings.Contains(out.String(), "card.status_changed "+event+": signature verified, forwarded to "+handler.URL+"/hooks: HTTP 200")
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("listen ended with %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "deleted the temporary endpoint "+endpoint) {
		t.Fatalf("listen did not delete its endpoint:\n%s", out.String())
	}
	var left int
	if err := env.App.DB.Get(&left, `SELECT count(*) FROM webhook_endpoints WHERE partner_id = $1 AND deleted_at IS NULL`, p.ID); err != nil || left != 0 {
		t.Fatalf("%d endpoints left after listen stopped (%v)", left, err)
	}

	err = run(context.Background(), []string{"webhooks", "trigger", "card.exploded"}, getenv, strings.NewReader(""), &trig, &trig)
	if err == nil || !strings.Contains(err.Error(), "15001") || !strings.Contains(err.Error(), "type: must be one of") {
		t.Fatalf("trigger of an unknown type: %v", err)
	}
	prod := apptest.New(t, apptest.Options{NoSanctions: true, Configure: func(c *config.Config) { c.Mode = config.ModeProduction }})
	pp := prod.NewPartner(t, emi.PartnerCreate{Name: "Live"})
	live := map[string]string{"EMI_API_KEY": pp.APIKey, "EMI_API_SECRET": pp.APISecret, "EMI_API_URL": prod.Server.URL}
	err = run(context.Background(), []string{"webhooks", "trigger", "card.activated"}, func(k string) string { return live[k] }, strings.NewReader(""), &trig, &trig)
	if err == nil || !strings.Contains(err.Error(), "is not a sandbox") {
		t.Fatalf("trigger against production: %v", err)
	}
}
