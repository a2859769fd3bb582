package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"emi/internal/app"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/postgres/pgtest"
	"emi/internal/service"
)

// W4: 1,000 events; the serving process is killed with SIGKILL while it
// delivers them and started again. The receiver must see every event id at
// least once, and a duplicate must carry the same body as the first copy.
func TestWebhookDeliverySurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two processes")
	}
	t.Parallel()
	const events = 1000

	var mu sync.Mutex
	bodies := map[string][32]byte{}
	dups, mismatched := 0, 0
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		time.Sleep(2 * time.Millisecond) // a receiver that takes a moment: deliveries are in flight at the kill
		id, sum := r.Header.Get("webhook-id"), sha256.Sum256(b)
		mu.Lock()
		if prev, seen := bodies[id]; seen {
			dups++
			if prev != sum {
				mismatched++
			}
		} else {
			bodies[id] = sum
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rc.Close()
	received := func() int { mu.Lock(); defer mu.Unlock(); return len(bodies) }

	vars := map[string]string{"DATABASE_URL": pgtest.URL(t), "EMI_MASTER_KEY": newKey(), "EMI_MODE": "sandbox",
		"EMI_ADDR": "127.0.0.1:0", "EMI_WORKERS": "4", "EMI_JOB_LEASE": "2s", "EMI_LOG_LEVEL": "warn"}
	if _, _, err := runCmd(t, vars, "migrate"); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, vars, "partner", "create", "--name", "Crash Test", "--webhook-url", rc.URL+"/hooks", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var creds struct{ Merchant string }
	if err := json.Unmarshal([]byte(out), &creds); err != nil {
		t.Fatal(err)
	}

	// Commit the events before any server runs.
	cfg, err := config.Load(env(vars), "db", "key")
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, io.Discard), nil)
	if err != nil {
		t.Fatal(err)
	}
	var partnerID string
	if err := a.DB.Get(&partnerID, `SELECT id FROM partners WHERE master_merchant = $1`, creds.Merchant); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < events; i++ {
		err := a.DB.InTx(context.Background(), func(ctx context.Context) error {
			_, err := a.Events.Emit(ctx, partnerID, emi.EventCardStatusChanged, "card", service.NewToken(), map[string]any{"status": "inactive"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	a.Close()

	bin := filepath.Join(t.TempDir(), "emi")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve")
		for k, v := range vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Env = append(cmd.Env, "PATH="+os.Getenv("PATH"))
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until it serves.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving on") {
				go func() { _, _ = io.Copy(io.Discard, stdout) }()
				return cmd
			}
		}
		t.Fatalf("emi serve did not start: %s", stderr.String())
		return nil
	}

	first := start()
	deadline := time.Now().Add(30 * time.Second)
	for received() < events/3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	atKill := received()
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if atKill >= events {
		t.Fatalf("all %d events were delivered before the kill: the test proves nothing", events)
	}

	second := start()
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	deadline = time.Now().Add(60 * time.Second)
	for received() < events && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("killed after %d of %d events; %d duplicate deliveries after the restart", atKill, events, dups)
	if len(bodies) != events {
		t.Fatalf("the receiver saw %d distinct events, want %d: events were lost", len(bodies), events)
	}
	if mismatched != 0 {
		t.Fatalf("%d duplicates carried another body than the first copy", mismatched)
	}
}
