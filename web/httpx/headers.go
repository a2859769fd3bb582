package httpx

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"emi/internal/emi"
)

// MaxHeaderValue is the longest value accepted in an x-* header of an API
// request. The API's own headers are far shorter (x-hash is 64 characters,
// x-nonce at most 64); the bound leaves room for what proxies add
// (x-forwarded-for chains) while refusing a 10 kB value outright.
const MaxHeaderValue = 4096

// CheckHeaders refuses an API request whose Idempotency-Key or any x-*
// header is not valid UTF-8, holds a control character, or is longer than
// max bytes (MaxHeaderValue for x-* headers, maxIdem for Idempotency-Key).
// Such a value would otherwise travel to PostgreSQL (which refuses invalid
// UTF-8 and NUL with an error, answered 500) or into logs. The answer is
// emi.ErrBadRequest (10005) with one errors entry per header, named in
// lower case, so a client sees which header to fix; the value itself is
// never echoed.
func CheckHeaders(h http.Header, maxIdem int) error {
	var fields []emi.FieldError
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names) // stable error lists
	for _, name := range names {
		lower := strings.ToLower(name)
		limit := MaxHeaderValue
		switch {
		case lower == "idempotency-key":
			limit = maxIdem
		case strings.HasPrefix(lower, "x-"):
		default:
			continue
		}
		for _, v := range h[name] {
			if msg := headerValueProblem(v, limit); msg != "" {
				fields = append(fields, emi.FieldError{Field: lower, Message: msg})
				break
			}
		}
	}
	if len(fields) > 0 {
		return emi.ErrBadRequest.WithFields(fields...).WithDetail("malformed request header")
	}
	return nil
}

// headerValueProblem says what is wrong with a header value, or "".
func headerValueProblem(v string, limit int) string {
	if len(v) > limit {
		return "must be at most " + strconv.Itoa(limit) + " bytes"
	}
	if !utf8.ValidString(v) {
		return "must be valid UTF-8"
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0 {
			return "must not contain control characters"
		}
	}
	return ""
}
