package main

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
	"os"
	"strconv"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/partners"
)

// partnerClient calls the partner API as a partner's code does: signed with
// the API key and secret (contract §2, signature version 2, which binds
// the method and the path), so the developer tools of `emi webhooks` use
// exactly the operations, rules and limits a partner has.
type partnerClient struct {
	base, key, secret string
	http              *http.Client
}

// apiAnswer is an answer envelope.
type apiAnswer struct {
	Status  int
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Data    json.RawMessage  `json:"data"`
	Errors  []emi.FieldError `json:"errors"`
}

// Error describes a refused call for a person.
func (a apiAnswer) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d, code %d %s", a.Status, a.Code, a.Message)
	for _, f := range a.Errors {
		fmt.Fprintf(&b, "; %s: %s", f.Field, f.Message)
	}
	return b.String()
}

// newPartnerClient reads the partner's credentials: EMI_API_KEY and
// EMI_API_SECRET, else the api_key and api_secret of partnerFile (the
// .dev/partner.json `make run` writes, as `emi partner create --json`
// prints it). The secret is never taken from the command line, where
// other users of the machine and the shell history would see it.
func newPartnerClient(base, partnerFile string, getenv func(string) string) (*partnerClient, error) {
	c := &partnerClient{base: strings.TrimRight(base, "/"), key: getenv("EMI_API_KEY"), secret: getenv("EMI_API_SECRET"),
		http: &http.Client{Timeout: 30 * time.Second}}
	if c.key == "" && c.secret == "" && partnerFile != "" {
		b, err := os.ReadFile(partnerFile) // #nosec G304 -- the developer names the credentials file (default .dev/partner.json)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if err == nil {
			var f struct {
				APIKey    string `json:"api_key"`
				APISecret string `json:"api_secret"`
			}
			if err := json.Unmarshal(b, &f); err != nil {
				return nil, fmt.Errorf("%s: %w", partnerFile, err)
			}
			c.key, c.secret = f.APIKey, f.APISecret
		}
	}
	if c.key == "" || c.secret == "" {
		return nil, usageError{"no API credentials: set EMI_API_KEY and EMI_API_SECRET (or run from the directory of make run's .dev/partner.json, or name it with --partner-file)"}
	}
	return c, nil
}

// do sends one signed call and decodes the envelope; a refusal (code
// other than 0) is returned as the apiAnswer error.
func (c *partnerClient) do(ctx context.Context, method, path, operation string, body any) (apiAnswer, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return apiAnswer{}, err
		}
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	nb := make([]byte, 12)
	_, _ = rand.Read(nb)
	nonce := hex.EncodeToString(nb)
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(raw))
	if err != nil {
		return apiAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", c.key)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-signature-version", "2")
	req.Header.Set("x-nonce", nonce)
	req.Header.Set("x-hash", partners.SignatureV2([]byte(c.secret), c.key, ts, operation, method, path, nonce, raw))
	res, err := c.http.Do(req)
	if err != nil {
		return apiAnswer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return apiAnswer{}, err
	}
	a := apiAnswer{Status: res.StatusCode}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("%s %s: HTTP %d, not an emi answer: %.200s", method, path, res.StatusCode, b)
	}
	if a.Code != 0 {
		return a, a
	}
	return a, nil
}
