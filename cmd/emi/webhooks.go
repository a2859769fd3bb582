package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// webhooksHelp is `emi help webhooks`.
const webhooksHelp = `emi webhooks listen [--addr 127.0.0.1:9999] [--secret whsec_...]

A small webhook receiver for development, as "stripe listen" is: it
answers every POST with 200, prints each event (type, id, data) and
whether its Standard Webhooks signature verifies with the endpoint's
secret (--secret, or EMI_WEBHOOK_SECRET; make run's demo partner keeps it
in .dev/partner.json as webhook_secret). A message that does not verify
gets 400, so emi retries it. Needs no database. Stop it with Ctrl-C.
`

// cmdWebhooks runs `emi webhooks ...`.
func cmdWebhooks(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "listen" {
		fmt.Fprint(stderr, webhooksHelp)
		return usageError{"usage: emi webhooks listen [--addr HOST:PORT] [--secret whsec_...]"}
	}
	fs := flag.NewFlagSet("webhooks listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9999", "address to listen on")
	secret := fs.String("secret", getenv("EMI_WEBHOOK_SECRET"), "the endpoint's signing secret (whsec_...)")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err.Error()}
	}
	var wh *standardwebhooks.Webhook
	if *secret != "" {
		var err error
		if wh, err = standardwebhooks.NewWebhook(*secret); err != nil {
			return usageError{"--secret is not a whsec_ secret"}
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "emi webhooks listen: receiving on http://%s/ (any path)", ln.Addr())
	if wh == nil {
		fmt.Fprint(stdout, "; no --secret: signatures are not checked")
	}
	fmt.Fprintln(stdout)
	var mu sync.Mutex // one event printed at a time
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST webhooks here", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		verdict, status := "signature not checked", http.StatusOK
		if wh != nil {
			if err := wh.Verify(body, r.Header); err != nil {
				verdict, status = "SIGNATURE INVALID ("+err.Error()+")", http.StatusBadRequest
			} else {
				verdict = "signature verified"
			}
		}
		var ev struct {
			ID   string          `json:"id"`
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal(body, &ev)
		var pretty bytes.Buffer
		if json.Indent(&pretty, ev.Data, "  ", "  ") != nil {
			pretty.Reset()
			pretty.Write(body)
		}
		mu.Lock()
		fmt.Fprintf(stdout, "%s %s %s (webhook-id %s): %s\n  %s\n", time.Now().UTC().Format(time.TimeOnly), ev.Type, ev.ID,
			r.Header.Get("webhook-id"), verdict, pretty.String())
		mu.Unlock()
		w.WriteHeader(status)
	})}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
