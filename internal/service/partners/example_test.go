package partners_test

import (
	"emi/internal/service/partners"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// A partner signs a request like this (contract §2). The partners' guide
// (web/docs/guides/partners.md) shows this worked example, and the SDKs'
// signing (web/docs/sdk) is tested against the same hash. It was computed independently:
//
//	printf '%s' 'ak_test1700000000aml_check{"first_name":"Elin","last_name":"Sandqvist"}' \
//	  | openssl dgst -sha256 -hmac secret
func ExampleSignature() {
	apiKey, apiSecret := "ak_test", "secret"
	body := []byte(`{"first_name": "Elin", "last_name": "Sandqvist"}`)
	ts := strconv.FormatInt(time.Unix(1700000000, 0).Unix(), 10) // use time.Now() in real code

	req, _ := http.NewRequest(http.MethodPost, "http://localhost:8080/v1/aml", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-hash", partners.Signature([]byte(apiSecret), apiKey, ts, "aml_check", body))
	fmt.Println(req.Header.Get("x-hash"))
	// Output: 1291af22afd1baf39d542abfa0fb666bbf103b7b90a586b45fd4fc54cdaf39b2
}

// ExampleSignatureV2 signs contract §2's version 2: method, request target
// (path and query) and nonce are signed, and the body exactly as sent,
// whitespace included. The request carries x-signature-version: 2 and
// x-nonce.
func ExampleSignatureV2() {
	apiKey, apiSecret := "ak_test", "secret"
	body := []byte(`{"first_name": "Kim", "last_name": "Jong Un"}`)
	ts := strconv.FormatInt(time.Unix(1700000000, 0).Unix(), 10) // use time.Now() in real code
	nonce := "0b6f2c1e"                                          // optional: lets one request be sent twice in a second

	req, _ := http.NewRequest(http.MethodPost, "http://localhost:8080/v1/aml", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-signature-version", "2")
	req.Header.Set("x-nonce", nonce)
	req.Header.Set("x-hash", partners.SignatureV2([]byte(apiSecret), apiKey, ts, "aml_check",
		req.Method, req.URL.RequestURI(), nonce, body))
	fmt.Println(req.Header.Get("x-hash"))

	// A GET signs its method and target; it has no body.
	get := partners.SignatureV2([]byte(apiSecret), apiKey, ts, "accounts_list", "GET", "/v2/accounts/2/10?program=account_eur", "", nil)
	fmt.Println(get)
	// Output:
	// 9f073bacf8709109750c88321614efee7ae453280b2a5b36572cc22dd04b90ea
	// 9f3477039cba68a5a83a427a99a87b315fd195294fe7a759998080060a986d97
}
