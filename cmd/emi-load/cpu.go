package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Where the machine's cores go during a compared run, so that for a target
// missed the report shows what is left and why it cannot go. The load
// generator, emi serve and PostgreSQL share the cores, and pgbench's C
// client costs far less than emi-load, so a raw throughput ratio mixes
// three programs. cpuMeter splits the CPU time of one run between them from
// /proc, so the report can show what one request costs each, and what ratio
// the server side alone reaches.

// clockTick is the unit of /proc/<pid>/stat's times. Linux reports them in
// USER_HZ, which is 100 on every architecture Go supports (the kernel's ABI
// fixes it whatever CONFIG_HZ is).
const clockTick = 10 * time.Millisecond

// cpuUse is the CPU time spent during one run, by who spent it.
type cpuUse struct {
	Server   time.Duration // emi serve (zero for a pgbench run)
	Client   time.Duration // the load generator: emi-load or pgbench
	Database time.Duration // the PostgreSQL cluster's processes
	Busy     time.Duration // every core, from /proc/stat (other programs included)
	Wall     time.Duration
	Cores    int
}

// per returns d per unit of n, in microseconds.
func per(d time.Duration, n int) float64 {
	if n <= 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}

// procStat reads the CPU times of a process: its own (utime + stime) and
// that of its waited-for children (cutime + cstime), and its parent's pid.
func procStat(pid int) (own, children time.Duration, ppid int, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")) // #nosec G304 -- /proc of a pid we were given
	if err != nil {
		return 0, 0, 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields that follow start after its last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 15 {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	num := func(n int) int64 {
		v, perr := strconv.ParseInt(f[n-3], 10, 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("/proc/%d/stat field %d: %w", pid, n, perr)
		}
		return v
	}
	ppid = int(num(4))
	own = time.Duration(num(14)+num(15)) * clockTick
	children = time.Duration(num(16)+num(17)) * clockTick
	return own, children, ppid, err
}

// clusterCPU is the CPU time of a PostgreSQL cluster so far: the
// postmaster's own, its live children's (backends, walwriter, …), and that
// of the children it has reaped (a backend whose client disconnected during
// the run is counted there, so a run's delta keeps it).
func clusterCPU(postmaster int) (time.Duration, error) {
	own, reaped, _, err := procStat(postmaster)
	if err != nil {
		return 0, err
	}
	total := own + reaped
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == postmaster {
			continue
		}
		o, _, ppid, err := procStat(pid)
		if err != nil || ppid != postmaster {
			continue // gone meanwhile, or another program's
		}
		total += o
	}
	return total, nil
}

// machineBusy is the busy time of every core so far (/proc/stat's first
// line: all but idle and iowait).
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy int64
	for i, v := range f[1:] {
		// user, nice, system, idle, iowait, irq, softirq, steal, guest,
		// guest_nice: idle, iowait and steal are not this machine's work,
		// and guest time is already inside user.
		if i == 3 || i == 4 || i >= 7 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		busy += n
	}
	return time.Duration(busy) * clockTick, nil
}

// cpuMeter measures one run. server and client are pids (0: not measured
// this way); postmaster is the cluster's.
type cpuMeter struct {
	server, client, postmaster int
	start                      cpuUse
	at                         time.Time
}

func (m *cpuMeter) sample() (cpuUse, error) {
	var u cpuUse
	var err error
	if m.server > 0 {
		if u.Server, _, _, err = procStat(m.server); err != nil {
			return u, err
		}
	}
	if m.client > 0 {
		if u.Client, _, _, err = procStat(m.client); err != nil {
			return u, err
		}
	}
	if u.Database, err = clusterCPU(m.postmaster); err != nil {
		return u, err
	}
	u.Busy, err = machineBusy()
	return u, err
}

// startCPU begins a measurement.
func startCPU(server, client, postmaster int) (*cpuMeter, error) {
	m := &cpuMeter{server: server, client: client, postmaster: postmaster, at: time.Now()}
	s, err := m.sample()
	if err != nil {
		return nil, err
	}
	m.start = s
	return m, nil
}

// stop ends the measurement; clientCPU, when not zero, is the client's
// whole CPU time (a client that exited: pgbench), used instead of its pid's.
func (m *cpuMeter) stop(clientCPU time.Duration) (cpuUse, error) {
	end, err := m.sample()
	if err != nil {
		return cpuUse{}, err
	}
	u := cpuUse{
		Server:   end.Server - m.start.Server,
		Client:   end.Client - m.start.Client,
		Database: end.Database - m.start.Database,
		Busy:     end.Busy - m.start.Busy,
		Wall:     time.Since(m.at),
		Cores:    numCores(),
	}
	if clientCPU > 0 {
		u.Client = clientCPU
	}
	return u, nil
}

// numCores counts the cores /proc/stat lists (cpu0, cpu1, …).
func numCores() int {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "cpu") && len(l) > 3 && l[3] >= '0' && l[3] <= '9' {
			n++
		}
	}
	return n
}

// serverSideCapacity is what the cores would serve per second if the
// client ran elsewhere: cores / (server + database CPU per request). It is
// an estimate (it assumes CPU is the bound and that a request costs the
// same CPU without the client competing for the cores).
func serverSideCapacity(u cpuUse, requests int) float64 {
	cost := u.Server + u.Database
	if requests <= 0 || cost <= 0 || u.Cores <= 0 {
		return 0
	}
	return float64(u.Cores) * float64(requests) / cost.Seconds()
}
