package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The profiling endpoint listens on loopback only: every address that
// could reach it from elsewhere is refused.
func TestDebugListenerIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{":6060", "0.0.0.0:6060", "[::]:6060", "10.1.2.3:6060", "192.168.0.1:0",
		"localhost:6060", "example.com:6060", "127.0.0.1", ""} {
		if ln, err := debugListener(addr); err == nil {
			_ = ln.Close()
			t.Errorf("%q accepted", addr)
		}
	}
	ln, err := debugListener("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := debugServer()
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	res, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), "goroutine") {
		t.Fatalf("pprof index: HTTP %d", res.StatusCode)
	}
}
