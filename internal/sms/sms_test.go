package sms

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeGateway is a local SMS gateway: it records what it receives and
// answers as configured.
func fakeGateway(t *testing.T, status int, answer string) (*httptest.Server, *[]map[string]string, *[]string) {
	t.Helper()
	var got []map[string]string
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("gateway got %s with %q", r.Method, r.Header.Get("Content-Type"))
		}
		var m map[string]string
		_ = json.NewDecoder(r.Body).Decode(&m)
		got = append(got, m)
		auth = append(auth, r.Header.Get("Authorization"))
		w.WriteHeader(status)
		_, _ = w.Write([]byte(answer))
	}))
	t.Cleanup(srv.Close)
	return srv, &got, &auth
}

func TestGatewaySends(t *testing.T) {
	srv, got, auth := fakeGateway(t, http.StatusAccepted, `{"id":"msg-42"}`)
	g := NewGateway(srv.URL, "tok")
	ref, err := g.Send(context.Background(), "+359888123456", "Your PIN is 7305")
	if err != nil || ref != "msg-42" {
		t.Fatalf("Send: %q, %v", ref, err)
	}
	if len(*got) != 1 || (*got)[0]["to"] != "+359888123456" || (*got)[0]["text"] != "Your PIN is 7305" || (*auth)[0] != "Bearer tok" {
		t.Fatalf("gateway received %v with %v", *got, *auth)
	}
	if g.Name() != "http" {
		t.Fatal(g.Name())
	}
}

func TestGatewayFailuresNeverCarryTheText(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		answer string
	}{
		"refused":      {http.StatusBadRequest, `{"error":"Your PIN is 7305 is bad"}`},
		"server error": {http.StatusInternalServerError, `oops 7305`},
		"no id":        {http.StatusOK, `{}`},
		"not json":     {http.StatusOK, `<html>7305</html>`},
	} {
		srv, _, _ := fakeGateway(t, tc.status, tc.answer)
		_, err := NewGateway(srv.URL, "").Send(context.Background(), "+359888123456", "Your PIN is 7305")
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if strings.Contains(err.Error(), "7305") || strings.Contains(err.Error(), "+359888123456") {
			t.Errorf("%s: the error carries the text or number: %v", name, err)
		}
	}
	_, err := NewGateway("http://127.0.0.1:1/unreachable", "").Send(context.Background(), "+359888123456", "Your PIN is 7305")
	if err == nil || strings.Contains(err.Error(), "7305") {
		t.Fatalf("unreachable gateway: %v", err)
	}
}

func TestSandboxAndUnconfigured(t *testing.T) {
	ref, err := Sandbox{}.Send(context.Background(), "+1", "x")
	if err != nil || !strings.HasPrefix(ref, "sandbox-") {
		t.Fatalf("sandbox: %q %v", ref, err)
	}
	if _, err := (Unconfigured{}).Send(context.Background(), "+1", "x"); err == nil {
		t.Fatal("unconfigured provider sends")
	}
}
