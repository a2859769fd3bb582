package service_test

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"emi/internal/service"
)

// A partner signs a request like this (contract §2). The same code is in the
// README. The expected hash was computed independently:
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
	req.Header.Set("x-hash", service.Signature([]byte(apiSecret), apiKey, ts, "aml_check", body))
	fmt.Println(req.Header.Get("x-hash"))
	// Output: 1291af22afd1baf39d542abfa0fb666bbf103b7b90a586b45fd4fc54cdaf39b2
}
