package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

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
