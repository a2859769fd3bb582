package apptest

import (
	"fmt"
	"strings"
	"testing"
)

func TestLogExcerptKeepsFaultsAndTheirRequests(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, `{"level":"INFO","msg":"request","status":201,"request_id":"ok-%d"}`+"\n", i)
		if i == 100 {
			b.WriteString(`{"level":"DEBUG","msg":"transfer posting","request_id":"bad-1"}` + "\n")
			b.WriteString(`{"level":"ERROR","msg":"request","status":500,"request_id":"bad-1","error":"deadlock detected"}` + "\n")
			b.WriteString(`{"level":"WARN","msg":"listener reconnect"}` + "\n")
			b.WriteString("panic: boom\n")
			b.WriteString(`time=2026-01-01 level=INFO msg=request status=503 request_id=bad-2` + "\n")
			b.WriteString(`time=2026-01-01 level=DEBUG msg=detail request_id=bad-2` + "\n")
		}
	}
	got := LogExcerpt(b.String(), 200)
	for _, want := range []string{"transfer posting", "deadlock detected", "listener reconnect", "panic: boom", "status=503", "msg=detail"} {
		if !strings.Contains(got, want) {
			t.Errorf("excerpt lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ok-499") || strings.Contains(got, "ok-1\"") {
		t.Errorf("excerpt holds successful requests' lines:\n%s", got)
	}
	if n := strings.Count(got, "\n") + 1; n != 6 {
		t.Errorf("excerpt has %d lines, want 6:\n%s", n, got)
	}
}

func TestLogExcerptBoundsAndFallsBack(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, `{"level":"ERROR","msg":"request","status":500,"request_id":"r%d"}`+"\n", i)
	}
	got := LogExcerpt(b.String(), 10)
	if !strings.Contains(got, "(290 more such lines not shown; 300 lines in all)") || strings.Count(got, "\n") != 10 {
		t.Errorf("bounded excerpt:\n%s", got)
	}
	quiet := `{"level":"INFO","msg":"request","status":200,"request_id":"a"}` + "\n"
	if got := LogExcerpt(quiet, 10); !strings.Contains(got, "no WARN or ERROR line") || !strings.Contains(got, `"request_id":"a"`) {
		t.Errorf("quiet log excerpt:\n%s", got)
	}
	if got := LogExcerpt("", 10); got != "(the server logged nothing)" {
		t.Errorf("empty log: %q", got)
	}
}
