package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"emi/internal/app"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/postgres/pgtest"
	"emi/internal/service/kernel"
	"emi/internal/testwait"
)

// hookSink counts webhook deliveries by id and checks duplicates carry the
// first copy's body.
type hookSink struct {
	*httptest.Server
	mu         sync.Mutex
	bodies     map[string][32]byte
	dups       int
	mismatched int
}

func newHookSink(t *testing.T) *hookSink {
	h := &hookSink{bodies: map[string][32]byte{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		time.Sleep(2 * time.Millisecond) // a receiver that takes a moment: deliveries are in flight
		id, sum := r.Header.Get("webhook-id"), sha256.Sum256(b)
		h.mu.Lock()
		if prev, seen := h.bodies[id]; seen {
			h.dups++
			if prev != sum {
				h.mismatched++
			}
		} else {
			h.bodies[id] = sum
		}
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookSink) received() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.bodies) }

// port is the sink's port, for EMI_SANDBOX_WEBHOOK_PORTS.
func (h *hookSink) port(t *testing.T) string {
	t.Helper()
	_, port, err := net.SplitHostPort(h.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// deliveryRig is a migrated database with one partner whose endpoint is the
// sink, events committed before any server runs, and the built binary.
type deliveryRig struct {
	vars map[string]string
	bin  string
	sink *hookSink
}

func newDeliveryRig(t *testing.T, events int) *deliveryRig {
	t.Helper()
	r := &deliveryRig{sink: newHookSink(t), vars: map[string]string{"DATABASE_URL": pgtest.URL(t), "EMI_MASTER_KEY": newKey(),
		"EMI_MODE": "sandbox", "EMI_ADDR": "127.0.0.1:0", "EMI_WORKERS": "4", "EMI_JOB_LEASE": "2s", "EMI_LOG_LEVEL": "warn"}}
	// The sink listens on a port the system picked: the sandbox delivers to
	// the loopback ports it is told to, never emi's own or the database's.
	r.vars["EMI_SANDBOX_WEBHOOK_PORTS"] = r.sink.port(t)
	if _, _, err := runCmd(t, r.vars, "migrate"); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, r.vars, "partner", "create", "--name", "Delivery Rig", "--webhook-url", r.sink.URL+"/hooks", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var creds struct{ Merchant string }
	if err := json.Unmarshal([]byte(out), &creds); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(env(r.vars), "db", "key")
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, io.Discard), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var partnerID string
	if err := a.DB.Get(&partnerID, `SELECT id FROM partners WHERE master_merchant = $1`, creds.Merchant); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < events; i++ {
		err := a.DB.InTx(context.Background(), func(ctx context.Context) error {
			_, err := a.Events.Emit(ctx, partnerID, emi.EventCardStatusChanged, "card", kernel.NewToken(), map[string]any{"status": "inactive"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	r.bin = filepath.Join(t.TempDir(), "emi")
	if b, err := exec.Command("go", "build", "-o", r.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return r
}

// serve starts `emi serve` and returns once it serves.
func (r *deliveryRig) serve(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd, _ := startServe(t, r.bin, r.vars, nil)
	return cmd
}

func (r *deliveryRig) waitAll(events int, stall time.Duration) {
	// It waits as long as deliveries keep arriving and gives up once none
	// came for stall: a busy machine delivers slower (a fixed 60 s bound
	// failed with 1,260 of 2,000 delivered beside a CPU hog), a stuck
	// delivery still fails the test.
	last, seen := time.Now(), r.sink.received()
	for seen < events && time.Since(last) < stall {
		time.Sleep(20 * time.Millisecond)
		if n := r.sink.received(); n != seen {
			last, seen = time.Now(), n
		}
	}
}

// W4: 1,000 events; the serving process is killed with SIGKILL while it
// delivers them and started again. The receiver must see every event id at
// least once, and a duplicate must carry the same body as the first copy.
func TestWebhookDeliverySurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two processes")
	}
	t.Parallel()
	const events = 1000
	r := newDeliveryRig(t, events)
	first := r.serve(t)
	// The kill comes while deliveries are in flight: a short fixed pause,
	// and no failure if a third never arrives (atKill says what did).
	testwait.Try(func() bool { return r.sink.received() >= events/3 }, testwait.Every(5*time.Millisecond))
	atKill := r.sink.received()
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if atKill >= events {
		t.Fatalf("all %d events were delivered before the kill: the test proves nothing", events)
	}
	second := r.serve(t)
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	r.waitAll(events, 60*time.Second)
	r.sink.mu.Lock()
	defer r.sink.mu.Unlock()
	t.Logf("killed after %d of %d events; %d duplicate deliveries after the restart", atKill, events, r.sink.dups)
	if len(r.sink.bodies) != events {
		t.Fatalf("the receiver saw %d distinct events, want %d: events were lost", len(r.sink.bodies), events)
	}
	if r.sink.mismatched != 0 {
		t.Fatalf("%d duplicates carried another body than the first copy", r.sink.mismatched)
	}
}

// W5: two `emi serve` processes on one database drain 2,000 events: every
// event arrives, duplicates stay under 0.1 %, and no delivery has two
// attempts whose times overlap.
func TestTwoServeProcessesDeliverEachEventOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two processes")
	}
	t.Parallel()
	const events = 2000
	r := newDeliveryRig(t, events)
	start := time.Now()
	a, b := r.serve(t), r.serve(t)
	defer func() {
		for _, p := range []*exec.Cmd{a, b} {
			_ = p.Process.Signal(syscall.SIGTERM)
			_ = p.Wait()
		}
	}()
	r.waitAll(events, 60*time.Second)
	elapsed := time.Since(start)
	r.sink.mu.Lock()
	got, dups := len(r.sink.bodies), r.sink.dups
	r.sink.mu.Unlock()
	t.Logf("2 processes delivered %d events in %s (%.0f events/s incl. start-up), %d duplicates", got, elapsed.Round(time.Millisecond), float64(got)/elapsed.Seconds(), dups)
	if got != events {
		t.Fatalf("%d of %d events delivered", got, events)
	}
	if dups*1000 >= events {
		t.Fatalf("%d duplicates, want under 0.1 %%", dups)
	}
	db, err := sql.Open("postgres", r.vars["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var overlaps int
	if err := db.QueryRow(`SELECT count(*) FROM webhook_attempts x JOIN webhook_attempts y
		ON x.delivery_id = y.delivery_id AND x.id < y.id
		AND y.started_at < x.started_at + make_interval(secs => x.latency_ms / 1000.0)`).Scan(&overlaps); err != nil {
		t.Fatal(err)
	}
	if overlaps != 0 {
		t.Fatalf("%d pairs of attempts of one delivery overlap in time", overlaps)
	}
}
