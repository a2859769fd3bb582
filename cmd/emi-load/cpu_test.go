package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// The CPU accounting reads the right fields of /proc: this process's
// parent, CPU time that grows while it works, the machine's busy time;
// and the report's per-request figures and server-side estimate follow
// from them.
var busySink int

func TestCPUAccounting(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system: the report leaves the CPU columns out")
	}
	own0, _, ppid, err := procStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if ppid != os.Getppid() {
		t.Fatalf("parent pid %d, want %d", ppid, os.Getppid())
	}
	busy0, err := machineBusy()
	if err != nil {
		t.Fatal(err)
	}
	// Work until the process's CPU time has grown by 50 ms (the machine may
	// be shared, so wall time says little), within 20 s.
	var own1 time.Duration
	for deadline := time.Now().Add(20 * time.Second); own1-own0 < 50*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("own CPU time grew %v in 20 s of work", own1-own0)
		}
		for x := 0; x < 1e6; x++ {
			busySink += x
		}
		if own1, _, _, err = procStat(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	// Both counters tick at USER_HZ (100/s), sampled at slightly different
	// moments and summed per CPU by the kernel: the machine's total may lag
	// this process's by a tick or two (it read +40 ms for 50 ms under a
	// full make test). A machine count that missed this process's work
	// would lag by all of it.
	const ticks = 20 * time.Millisecond
	if busy1, _ := machineBusy(); busy1 < busy0+(own1-own0)-ticks {
		t.Fatalf("machine busy +%v while this process used %v", busy1-busy0, own1-own0)
	}
	if numCores() < 1 {
		t.Fatal("no cores in /proc/stat")
	}

	// 1,000 requests costing 2 s of emi serve and 3 s of PostgreSQL on 2
	// cores: 5 ms of server-side CPU per request, so 2 / 5 ms = 400/s.
	u := cpuUse{Server: 2 * time.Second, Client: time.Second, Database: 3 * time.Second, Busy: 5 * time.Second, Wall: 3 * time.Second, Cores: 2}
	if got := serverSideCapacity(u, 1000); got < 399.9 || got > 400.1 {
		t.Fatalf("server-side capacity %.1f/s, want 400", got)
	}
	pg := cpuUse{Database: time.Second, Client: time.Second / 10, Busy: 2 * time.Second, Wall: time.Second, Cores: 2}
	row := ratioRow{t: targets[2], emi: Stats{Count: 1000, Rate: 333}, emiCPU: u, pg: pgbenchResult{TPS: 1000, Transactions: 1000, CPU: pg}}
	if got := row.serverRatio(); got < 0.199 || got > 0.201 {
		t.Fatalf("server-side ratio %.3f, want 0.2 (400/s against 2,000/s)", got)
	}
	var b bytes.Buffer
	renderCPU(&b, []ratioRow{row})
	for _, want := range []string{"| account_details | 16 | emi | 333 | 2000 µs | 1000 µs | 3000 µs | 1.67 of 2 | 400/s |", "0.20 (target 0.80)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	renderCPU(&b, []ratioRow{{t: targets[2]}})
	if b.Len() != 0 {
		t.Fatalf("no CPU figures, yet the report shows:\n%s", b.String())
	}
}
