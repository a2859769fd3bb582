// Command sign calls the emi partner API with signature version 1, using
// only Go's standard library: partner_details (GET) and aml_check (POST).
//
//	EMI_URL=http://127.0.0.1:8080 EMI_API_KEY=... EMI_API_SECRET=... go run .
package main

import (
	"bytes"
	"crypto/hmac"
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
// body, the body without space, tab, CR and LF bytes (POST and PUT only).
func sign(secret, key, ts, operation string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(key + ts + operation))
	for _, c := range body {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			mac.Write([]byte{c})
		}
	}
	return hex.EncodeToString(mac.Sum(nil))
}

func call(method, path, operation string, body []byte) error {
	key, secret := os.Getenv("EMI_API_KEY"), os.Getenv("EMI_API_SECRET")
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := http.NewRequest(method, os.Getenv("EMI_URL")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-api-key", key)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-hash", sign(secret, key, ts, operation, body))
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
