package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/partners"
	"emi/internal/testwait"
	"emi/web/api"
)

// BenchmarkAuthMiddleware measures what the partner-API middleware costs per
// request: body limit, HMAC verification (key lookup, secret decryption,
// HMAC), replay guard insert and the envelope, around a handler that does
// nothing. Every iteration is a new signature (a new timestamp), as it must
// be: an identical request would be a replay.
func BenchmarkAuthMiddleware(b *testing.B) {
	env := apptest.New(b, apptest.Options{Routes: func(r chi.Router, a *api.API) {
		a.Handle(r, http.MethodGet, "/v9/noop", api.Operation{Name: "noop", Invalid: emi.ErrValidation, BodyLimit: api.SmallBody},
			func(w http.ResponseWriter, r *http.Request) { api.WriteData(w, r, http.StatusOK, nil) })
	}})
	p := env.NewPartner(b, emi.PartnerCreate{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		env.Clock.Advance(time.Second)
		req := p.HTTPRequest(b, apptest.Request{Method: http.MethodGet, Path: "/v9/noop", Operation: "noop"})
		rec := httptest.NewRecorder()
		env.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkPartnerDetails is a whole authenticated read: the middleware plus
// partner_details' own query.
func BenchmarkPartnerDetails(b *testing.B) {
	env := apptest.New(b, apptest.Options{})
	p := env.NewPartner(b, emi.PartnerCreate{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		env.Clock.Advance(time.Second)
		req := p.HTTPRequest(b, partnerDetails())
		rec := httptest.NewRecorder()
		env.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkAuthenticate is the verification alone (no replay insert).
func BenchmarkAuthenticate(b *testing.B) {
	env := apptest.New(b, apptest.Options{})
	p := env.NewPartner(b, emi.PartnerCreate{})
	ts := strconv.FormatInt(env.Clock.Now().Unix(), 10)
	sr := emi.SignedRequest{APIKey: p.APIKey, Timestamp: ts, Operation: "partner_details",
		Hash: partners.Signature([]byte(p.APISecret), p.APIKey, ts, "partner_details", nil)}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := env.App.Auth.Authenticate(ctx, sr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifySignature is the HMAC over a 1 KiB body alone.
func BenchmarkVerifySignature(b *testing.B) {
	body := make([]byte, 1024)
	for i := range body {
		body[i] = "{ \"ab\":1}"[i%9]
	}
	h := partners.Signature([]byte("as_secret"), "ak_1", "1700000000", "user_create", body)
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		if !partners.VerifySignature([]byte("as_secret"), "ak_1", "1700000000", "user_create", body, h) {
			b.Fatal("verify failed")
		}
	}
}

// BenchmarkAMLCheckAPI is a whole aml_check through the router: middleware,
// validation, screening on the full lists, and the check with its hits
// stored. Half the people are listed, half are not.
func BenchmarkAMLCheckAPI(b *testing.B) {
	env := apptest.New(b, apptest.Options{})
	p := env.NewPartner(b, emi.PartnerCreate{})
	bodies := []map[string]any{
		{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE", "birthday": "1987-03-02"},
		{"first_name": "Kim", "last_name": "Jong Un", "nationality": "KP", "birthday": "1984-01-08"},
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		env.Clock.Advance(time.Second)
		req := p.HTTPRequest(b, apptest.Request{Method: http.MethodPost, Path: "/v1/aml", Operation: "aml_check", JSON: bodies[i%2]})
		rec := httptest.NewRecorder()
		env.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated && rec.Code != http.StatusConflict {
			b.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkUserCreate is a whole user_create with a full profile and no
// documents.
func BenchmarkUserCreate(b *testing.B) {
	env := apptest.New(b, apptest.Options{})
	p := env.NewPartner(b, emi.PartnerCreate{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body := validUser(p)
		req := p.HTTPRequest(b, apptest.Request{Method: http.MethodPost, Path: "/v2/users", Operation: "user_create", JSON: body})
		rec := httptest.NewRecorder()
		env.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkApplicationToApproval measures, in the sandbox flow of contract
// §11 with the worker pool running, the time from application_create's
// answer to the commit of application.approved (polled every millisecond),
// and reports its median and 95th percentile.
func BenchmarkApplicationToApproval(b *testing.B) {
	env := apptest.New(b, apptest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = env.App.RunWorkers(ctx) }()
	p := env.NewPartner(b, emi.PartnerCreate{})
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body := sandboxApplication(p)
		body["fingerprint"] = fmt.Sprintf("fp-%d", i)
		req := p.HTTPRequest(b, apptest.Request{Method: http.MethodPost, Path: "/v3/applications", Operation: "application_create", JSON: body})
		rec := httptest.NewRecorder()
		env.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
		start := time.Now()
		var out struct {
			Data struct {
				Token string `json:"token"`
			} `json:"data"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		// The wait is what the benchmark measures: a fixed 1 ms pause.
		testwait.Until(b, "the approval (application.approved) within 30 s", func() bool {
			var n int
			if err := env.App.DB.Get(&n, `SELECT count(*) FROM events WHERE type = 'application.approved' AND resource_token = $1`, out.Data.Token); err != nil {
				b.Fatal(err)
			}
			return n > 0
		}, testwait.Within(30*time.Second-time.Since(start)), testwait.Every(time.Millisecond))
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(durs[len(durs)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkApplicationCreate1MiB is application_create carrying the whole
// sandbox application with a 1 MiB PDF for its member (1.4 MB of JSON):
// decoding, sniffing, sealing and storing it, from 4 clients at once.
func BenchmarkApplicationCreate1MiB(b *testing.B) {
	env := apptest.New(b, apptest.Options{})
	p := env.NewPartner(b, emi.PartnerCreate{})
	pdf := append(append([]byte{}, pdfBytes...), make([]byte, 1<<20-len(pdfBytes))...)
	doc := []map[string]any{{"file": b64(pdf), "file_type": "pdf", "document_type": "passport"}}
	var n atomic.Int64
	b.SetBytes(1 << 20)
	b.SetParallelism(2) // 2 x GOMAXPROCS clients
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := sandboxApplication(p)
			body["fingerprint"] = fmt.Sprintf("fp-%d", n.Add(1))
			body["members"].([]map[string]any)[0]["documents"] = doc
			req := p.HTTPRequest(b, apptest.Request{Method: http.MethodPost, Path: "/v3/applications", Operation: "application_create", JSON: body})
			rec := httptest.NewRecorder()
			env.Handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusCreated {
				b.Errorf("HTTP %d %s", rec.Code, rec.Body)
				return
			}
		}
	})
}
