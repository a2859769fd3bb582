package httpx

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A 500 caused by the client hanging up (its request context cancelled,
// so the handler's database calls fail with "context canceled") is logged
// as a warning marked client_gone; any other 500 stays an error. Found by
// the load harness: every run's end logged dozens of ERROR lines for
// answers nobody received.
func TestAccessLogClientGoneIsNotAnError(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	h := AccessLog(logger, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.Context().Err(); err != nil {
			Fields(r.Context()).SetError(err)
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v2/partner", nil).WithContext(ctx))
	gone := buf.String()
	if !strings.Contains(gone, `"level":"WARN"`) || !strings.Contains(gone, `"client_gone":true`) || !strings.Contains(gone, `"status":500`) {
		t.Fatalf("client gone: %s", gone)
	}

	buf.Reset()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v2/partner", nil))
	if got := buf.String(); !strings.Contains(got, `"level":"ERROR"`) || strings.Contains(got, "client_gone") {
		t.Fatalf("a server fault: %s", got)
	}
}
