package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// series is the record of one kind of thing measured: a request (by its
// signed operation name) or a flow (by its scenario name).
type series struct {
	lat   []time.Duration
	codes map[string]int
	// errs counts failures: transport errors, any 5xx, and answers the
	// flow did not expect.
	errs int
}

// recorder collects series from every client of a run.
type recorder struct {
	mu     sync.Mutex
	series map[string]*series
	late   int // open loop: flows that started after their intended time
}

func newRecorder() *recorder { return &recorder{series: map[string]*series{}} }

func (r *recorder) get(name string) *series {
	s := r.series[name]
	if s == nil {
		s = &series{codes: map[string]int{}}
		r.series[name] = s
	}
	return s
}

// add records one outcome: a latency (when the thing completed), the
// answer it got and whether it counts as an error.
func (r *recorder) add(name string, lat time.Duration, completed bool, answer string, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.get(name)
	if completed {
		s.lat = append(s.lat, lat)
	}
	if answer != "" {
		s.codes[answer]++
	}
	if failed {
		s.errs++
	}
}

func (r *recorder) addLate() {
	r.mu.Lock()
	r.late++
	r.mu.Unlock()
}

// Stats are the figures of one series.
type Stats struct {
	Name               string
	Count              int
	Rate               float64 // per second of the run
	P50, P95, P99, Max time.Duration
	Errors             int
	Codes              map[string]int
}

// percentile is the nearest-rank percentile of sorted durations (p in
// [0, 1]): the smallest value with at least p of the values at or below it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p + 0.999999999)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func (s *series) stats(name string, elapsed time.Duration) Stats {
	lat := slices.Clone(s.lat)
	slices.Sort(lat)
	st := Stats{Name: name, Count: len(lat), Errors: s.errs, Codes: maps.Clone(s.codes)}
	if elapsed > 0 {
		st.Rate = float64(len(lat)) / elapsed.Seconds()
	}
	if len(lat) > 0 {
		st.P50, st.P95, st.P99, st.Max = percentile(lat, .50), percentile(lat, .95), percentile(lat, .99), lat[len(lat)-1]
	}
	return st
}

// Result is one scenario run.
type Result struct {
	Scenario string
	Shape    string // "32 clients" or "200/s open loop, ≤ 256 in flight"
	Elapsed  time.Duration
	Late     int
	// Repeats counts requests whose key had sent the identical request in
	// the same second: they went with signature version 2 and a nonce.
	Repeats int64
	// Flows are per scenario flow (one entry per flow kind: a mixed run
	// has several); Requests per signed operation.
	Flows, Requests []Stats
}

// Total is the sum over the flows (throughput, errors, all latencies).
func (r *recorder) result(scenario, shape string, flows []string, elapsed time.Duration) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{Scenario: scenario, Shape: shape, Elapsed: elapsed, Late: r.late}
	isFlow := map[string]bool{}
	for _, f := range flows {
		isFlow["flow "+f] = true
	}
	for _, name := range slices.Sorted(maps.Keys(r.series)) {
		s := r.series[name]
		if isFlow[name] {
			res.Flows = append(res.Flows, s.stats(strings.TrimPrefix(name, "flow "), elapsed))
		} else {
			res.Requests = append(res.Requests, s.stats(name, elapsed))
		}
	}
	if len(res.Flows) > 1 {
		all := &series{codes: map[string]int{}}
		for _, f := range flows {
			if s := r.series["flow "+f]; s != nil {
				all.lat = append(all.lat, s.lat...)
				all.errs += s.errs
				for k, v := range s.codes {
					all.codes[k] += v
				}
			}
		}
		res.Flows = append(res.Flows, all.stats("total", elapsed))
	}
	return res
}

// Total is the scenario's headline: its flows (a single flow, or the
// "total" of a mixed run).
func (res Result) Total() Stats {
	if len(res.Flows) == 0 {
		return Stats{Name: "total"}
	}
	return res.Flows[len(res.Flows)-1]
}

func ms(d time.Duration) string {
	switch {
	case d == 0:
		return "—"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// codesText lists the answers: "HTTP 201 code 0 ×1200, HTTP 409 code 18001 ×3".
func codesText(codes map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(codes)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, codes[k]))
	}
	return strings.Join(parts, ", ")
}

// writeText prints a result for a person at a terminal.
func writeText(out io.Writer, res Result) {
	fmt.Fprintf(out, "scenario %s, %s, %s", res.Scenario, res.Shape, res.Elapsed.Round(time.Millisecond))
	if strings.Contains(res.Shape, "open loop") {
		fmt.Fprintf(out, ", late starts %d", res.Late)
	}
	if res.Repeats > 0 {
		fmt.Fprintf(out, ", identical requests in one second (signed v2 with a nonce) %d", res.Repeats)
	}
	fmt.Fprintln(out)
	line := func(kind string, s Stats) {
		fmt.Fprintf(out, "  %-7s %-22s %7d  %8.1f/s  p50 %-9s p95 %-9s p99 %-9s max %-9s errors %d\n",
			kind, s.Name, s.Count, s.Rate, ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max), s.Errors)
		if len(s.Codes) > 0 {
			fmt.Fprintf(out, "          %s\n", codesText(s.Codes))
		}
	}
	for _, s := range res.Flows {
		line("flow", s)
	}
	for _, s := range res.Requests {
		line("request", s)
	}
}
