package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// debugListener listens on addr for the profiling endpoint, which must be
// a loopback address: pprof shows goroutine stacks, memory and command
// lines, so it is never reachable from another machine. An address that
// is not an IP literal (a host name could resolve anywhere) or not
// loopback is refused.
func debugListener(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("EMI_DEBUG_ADDR %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("EMI_DEBUG_ADDR %q: must be a loopback IP address such as 127.0.0.1:6060", addr)
	}
	return net.Listen("tcp", addr)
}

// debugServer serves net/http/pprof, and nothing else, on its own mux
// (never on the public one, whatever registered on http.DefaultServeMux).
func debugServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
