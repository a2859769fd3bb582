// Command sign calls the emi partner API with signature version 2, using
// only Go's standard library: partner_details (GET) and aml_check (POST).
//
//	EMI_URL={base_url} EMI_API_KEY=... EMI_API_SECRET=... go run .
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

// sign returns x-hash: HMAC-SHA256 over api_key + timestamp + operation +
// METHOD + path (with its query) + nonce + the body exactly as sent.
func sign(secret, key, ts, operation, method, target, nonce string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(key + ts + operation + method + target + nonce))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func call(method, path, operation string, body []byte) error {
	key, secret := os.Getenv("EMI_API_KEY"), os.Getenv("EMI_API_SECRET")
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	n := make([]byte, 8)
	if _, err := rand.Read(n); err != nil {
		return err
	}
	nonce := hex.EncodeToString(n)
	req, err := http.NewRequest(method, os.Getenv("EMI_URL")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-api-key", key)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-signature-version", "2")
	req.Header.Set("x-nonce", nonce)
	req.Header.Set("x-hash", sign(secret, key, ts, operation, method, req.URL.RequestURI(), nonce, body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	fmt.Printf("%s %s: HTTP %d %s", method, path, res.StatusCode, answer)
	return err
}

func main() {
	if err := call("GET", "/v2/partner", "partner_details", nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	body := []byte(`{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE"}`)
	if err := call("POST", "/v1/aml", "aml_check", body); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
