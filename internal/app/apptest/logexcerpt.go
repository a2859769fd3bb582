package apptest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// LogExcerpt is what a failed test prints of a server's log: the lines that
// explain a failure, not the tail (under load the tail is hundreds of INFO
// access lines written after the fault). It keeps
//
//   - every line at level WARN or ERROR (JSON "level" or text level=), and
//     lines that are not structured at all (a panic's stack, a fatal
//     message, a child process's own output);
//   - every line of a request that answered 5xx or logged at WARN or ERROR,
//     found by its request_id, so the request's own debug lines come with it.
//
// At most max lines are kept, the first ones (the first fault is the cause
// more often than the last); a line at the end says how many were left out
// and how long the whole log was. With no such line it says so and gives
// the last lines of the log, so the output is never empty.
func LogExcerpt(log string, max int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return "(the server logged nothing)"
	}
	failed := map[string]bool{}
	keep := make([]bool, len(lines))
	ids := make([]string, len(lines))
	for i, l := range lines {
		level, status, id := logLineFacts(l)
		ids[i] = id
		if level == "WARN" || level == "ERROR" || level == "?" || status >= 500 {
			keep[i] = true
			if id != "" {
				failed[id] = true
			}
		}
	}
	var out []string
	kept := 0
	for i, l := range lines {
		if !keep[i] && (ids[i] == "" || !failed[ids[i]]) {
			continue
		}
		kept++
		if len(out) < max {
			out = append(out, l)
		}
	}
	if kept == 0 {
		return fmt.Sprintf("(no WARN or ERROR line and no failed request in %d lines; the last %d:)\n%s",
			len(lines), min(len(lines), 20), tail(log, 20))
	}
	if kept > len(out) {
		out = append(out, fmt.Sprintf("(%d more such lines not shown; %d lines in all)", kept-len(out), len(lines)))
	}
	return strings.Join(out, "\n")
}

var textLevel = regexp.MustCompile(`(?:^|\s)level=([A-Z]+)`)
var textStatus = regexp.MustCompile(`(?:^|\s)status=(\d{3})(?:\s|$)`)
var textRequestID = regexp.MustCompile(`(?:^|\s)request_id=("?)([^\s"]+)`)

// logLineFacts reads a line's level, HTTP status (0 when none) and request
// id from slog's JSON or text output. level is "?" for a line that is
// neither.
func logLineFacts(l string) (level string, status int, id string) {
	if strings.HasPrefix(l, "{") {
		var v struct {
			Level     string `json:"level"`
			Status    int    `json:"status"`
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal([]byte(l), &v) == nil {
			return strings.ToUpper(v.Level), v.Status, v.RequestID
		}
	}
	m := textLevel.FindStringSubmatch(l)
	if m == nil {
		return "?", 0, ""
	}
	level = m[1]
	if s := textStatus.FindStringSubmatch(l); s != nil {
		_, _ = fmt.Sscan(s[1], &status)
	}
	if r := textRequestID.FindStringSubmatch(l); r != nil {
		id = r[2]
	}
	return level, status, id
}
