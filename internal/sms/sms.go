// Package sms sends text messages to cardholders (card_send_pin) through
// a provider: the sandbox provider, which delivers nothing and lets the
// back office's SMS outbox (the sms_messages table, written by the card
// service with secrets masked) stand for the phone; or an HTTP gateway.
//
// The gateway contract is the common shape of SMS APIs: POST {to, text}
// as JSON to the configured URL with "Authorization: Bearer <token>",
// answered 2xx with {"id": "..."}. Anything else is a failure the card
// service records and reports (12011). The message text holds the PIN, so
// neither the request body nor the gateway's answer is ever logged or put
// in an error.
package sms

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Sandbox accepts every message and delivers nothing.
type Sandbox struct{}

// Name implements service.SMSProvider.
func (Sandbox) Name() string { return "sandbox" }

// Send implements service.SMSProvider: a sandbox message id.
func (Sandbox) Send(_ context.Context, _, _ string) (string, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "sandbox-" + hex.EncodeToString(b), nil
}

// Unconfigured refuses every message: production without a gateway.
type Unconfigured struct{}

// Name implements service.SMSProvider.
func (Unconfigured) Name() string { return "none" }

// Send implements service.SMSProvider.
func (Unconfigured) Send(context.Context, string, string) (string, error) {
	return "", errors.New("no SMS gateway is configured (EMI_SMS_URL)")
}

// Gateway sends through an HTTP SMS gateway.
type Gateway struct {
	URL    string
	Token  string
	Client *http.Client
}

// NewGateway returns a gateway client with a 10 s timeout.
func NewGateway(url, token string) *Gateway {
	return &Gateway{URL: url, Token: token, Client: &http.Client{Timeout: 10 * time.Second}}
}

// Name implements service.SMSProvider.
func (g *Gateway) Name() string { return "http" }

// Send implements service.SMSProvider.
func (g *Gateway) Send(ctx context.Context, to, text string) (string, error) {
	body, err := json.Marshal(map[string]string{"to": to, "text": text})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("sms gateway request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if g.Token != "" {
		req.Header.Set("Authorization", "Bearer "+g.Token)
	}
	resp, err := g.Client.Do(req)
	if err != nil {
		// The URL error names the URL, never the body.
		return "", fmt.Errorf("sms gateway: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("sms gateway answered %d", resp.StatusCode)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.ID == "" {
		return "", errors.New("sms gateway answered without a message id")
	}
	if len(out.ID) > 200 {
		out.ID = out.ID[:200]
	}
	return out.ID, nil
}
