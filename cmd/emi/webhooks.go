package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"emi/internal/emi"
)

// webhooksHelp is `emi help webhooks`.
const webhooksHelp = `emi webhooks listen [--addr 127.0.0.1:9999] [--secret whsec_...] [--forward-to URL]
                   [--events TYPE,TYPE] [--api-url URL] [--partner-file FILE]
emi webhooks trigger TYPE [--api-url URL] [--partner-file FILE]

Developer tools for a sandbox, as "stripe listen" and "stripe trigger" are.

listen receives webhooks on --addr (any path) and prints one line per
event: its time, type and id, whether its Standard Webhooks signature
verifies, and what became of it. A message that does not verify gets 400,
so emi retries it.

  Without --forward-to it answers every verified POST with 200 and prints
  the event's data; --secret (or EMI_WEBHOOK_SECRET) is the endpoint's
  secret (make run's demo partner keeps it in .dev/partner.json as
  webhook_secret). Needs no database and no API key.

  With --forward-to URL it relays each verified event to URL (a POST with
  the same body and the same webhook-id, webhook-timestamp and
  webhook-signature headers, so your handler verifies it as it will in
  production) and answers emi with your handler's status (502 when it
  cannot be reached), so emi retries what your handler refuses. Without
  --secret it registers a temporary endpoint for the partner through the
  API (webhook_endpoint_create, url http://ADDR/, filtered by --events when
  given), prints its signing secret for your handler, and deletes it when
  it stops (DELETE /v2/webhooks/{endpoint}); with --secret it relays what
  an endpoint you registered yourself receives.

trigger makes the sandbox emit a sample event of TYPE (sandbox_event_trigger)
to the partner's endpoints whose filter takes it, and prints its id. The
event has the documented shape of TYPE and data.sandbox_sample true; its
tokens name nothing of the partner. A production server refuses it (404).

The API calls are signed with the partner's key: EMI_API_KEY and
EMI_API_SECRET, else the api_key and api_secret of --partner-file (default
.dev/partner.json, what make run writes). --api-url defaults to EMI_API_URL,
else http://127.0.0.1:8080. The sandbox delivers over plain http to loopback
on its allowed ports only (EMI_SANDBOX_WEBHOOK_PORTS; by default EMI_ADDR's
port + 1 and 9999), so listen runs on the machine of emi serve. Stop it with
Ctrl-C.
`

// cmdWebhooks runs `emi webhooks ...`.
func cmdWebhooks(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, webhooksHelp)
		return usageError{"usage: emi webhooks listen|trigger ..."}
	}
	switch args[0] {
	case "listen":
		return webhooksListen(ctx, args[1:], getenv, stdout, stderr)
	case "trigger":
		return webhooksTrigger(ctx, args[1:], getenv, stdout, stderr)
	}
	fmt.Fprint(stderr, webhooksHelp)
	return usageError{"usage: emi webhooks listen|trigger ..."}
}

// apiFlags are the flags of the subcommands that call the API.
func apiFlags(fs *flag.FlagSet, getenv func(string) string) (apiURL, partnerFile *string) {
	apiURL = fs.String("api-url", cmp.Or(getenv("EMI_API_URL"), "http://127.0.0.1:8080"), "the emi API's base URL")
	partnerFile = fs.String("partner-file", ".dev/partner.json", "the partner's credentials when EMI_API_KEY and EMI_API_SECRET are not set")
	return apiURL, partnerFile
}

// webhooksTrigger runs `emi webhooks trigger TYPE`.
func webhooksTrigger(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("webhooks trigger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiURL, partnerFile := apiFlags(fs, getenv)
	// The event type may come before or after the flags.
	var typ string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		typ, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if typ == "" && fs.NArg() == 1 {
		typ = fs.Arg(0)
	} else if fs.NArg() > 0 || typ == "" {
		return usageError{"usage: emi webhooks trigger TYPE (an event type of the catalogue, e.g. card.status_changed)"}
	}
	c, err := newPartnerClient(*apiURL, *partnerFile, getenv)
	if err != nil {
		return err
	}
	a, err := c.do(ctx, http.MethodPost, "/v2/sandbox/events", "sandbox_event_trigger", map[string]string{"type": typ})
	if err != nil {
		if a.Code == emi.ErrRouteNotFound.Code {
			return fmt.Errorf("emi webhooks trigger: %s is not a sandbox: sandbox_event_trigger exists only with EMI_MODE=sandbox", c.base)
		}
		return fmt.Errorf("emi webhooks trigger %s: %w", typ, err)
	}
	var ev struct {
		Event string `json:"event"`
		Type  string `json:"type"`
	}
	if err := json.Unmarshal(a.Data, &ev); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "triggered %s: event %s (sent to your endpoints whose filter takes it; events_list has it too)\n", ev.Type, ev.Event)
	return nil
}

// webhooksListen runs `emi webhooks listen`.
func webhooksListen(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("webhooks listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9999", "address to listen on")
	secret := fs.String("secret", getenv("EMI_WEBHOOK_SECRET"), "the endpoint's signing secret (whsec_...)")
	forward := fs.String("forward-to", "", "relay each verified event to this URL")
	events := fs.String("events", "", "the temporary endpoint's event filter, comma separated (default: every type)")
	apiURL, partnerFile := apiFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{"emi webhooks listen takes no arguments: " + strings.Join(fs.Args(), " ")}
	}
	if *forward != "" {
		if u, err := url.Parse(*forward); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError{"--forward-to must be an http or https URL"}
		}
	}
	if *events != "" && (*forward == "" || *secret != "") {
		return usageError{"--events filters the temporary endpoint: it needs --forward-to and no --secret"}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	var (
		wh       *standardwebhooks.Webhook
		api      *partnerClient
		endpoint string
	)
	if *forward != "" && *secret == "" {
		// A temporary endpoint of the partner's, pointing here.
		if api, err = newPartnerClient(*apiURL, *partnerFile, getenv); err != nil {
			return err
		}
		in := map[string]any{"url": "http://" + ln.Addr().String() + "/", "description": "emi webhooks listen --forward-to " + *forward}
		if *events != "" {
			in["event_types"] = strings.Split(*events, ",")
		}
		a, err := api.do(ctx, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", in)
		if err != nil {
			return fmt.Errorf("emi webhooks listen: registering http://%s/ as a webhook endpoint: %w", ln.Addr(), err)
		}
		var ep struct {
			Token  string `json:"token"`
			Secret string `json:"secret"`
		}
		if err := json.Unmarshal(a.Data, &ep); err != nil || ep.Token == "" {
			return fmt.Errorf("emi webhooks listen: webhook_endpoint_create answered %s", a.Data)
		}
		endpoint, *secret = ep.Token, ep.Secret
		defer func() {
			// The endpoint goes with the listener, so test runs leave no
			// dead endpoint retried for days.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, err := api.do(dctx, http.MethodDelete, "/v2/webhooks/"+endpoint, "webhook_endpoint_delete", nil); err != nil {
				fmt.Fprintf(stderr, "emi webhooks listen: deleting the temporary endpoint %s: %v (delete it with DELETE /v2/webhooks/%s)\n", endpoint, err, endpoint)
				return
			}
			fmt.Fprintf(stdout, "deleted the temporary endpoint %s\n", endpoint)
		}()
	}
	if *secret != "" {
		if wh, err = standardwebhooks.NewWebhook(*secret); err != nil {
			return usageError{"--secret is not a whsec_ secret"}
		}
	}
	fmt.Fprintf(stdout, "emi webhooks listen: receiving on http://%s/ (any path)", ln.Addr())
	switch {
	case endpoint != "":
		fmt.Fprintf(stdout, "; registered as endpoint %s, signing secret %s (for your handler); forwarding to %s", endpoint, *secret, *forward)
	case *forward != "":
		fmt.Fprintf(stdout, "; forwarding to %s", *forward)
	}
	if wh == nil {
		fmt.Fprint(stdout, "; no --secret: signatures are not checked")
	}
	fmt.Fprintln(stdout)
	relay := &http.Client{Timeout: 10 * time.Second}
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
		outcome := ""
		if *forward != "" && status == http.StatusOK {
			status, outcome = forwardEvent(r.Context(), relay, *forward, body, r.Header)
		}
		mu.Lock()
		defer mu.Unlock()
		if *forward != "" {
			if outcome == "" {
				outcome = "not forwarded"
			}
			fmt.Fprintf(stdout, "%s %s %s: %s, %s\n", time.Now().UTC().Format(time.TimeOnly), ev.Type, ev.ID, verdict, outcome)
		} else {
			var pretty bytes.Buffer
			if json.Indent(&pretty, ev.Data, "  ", "  ") != nil {
				pretty.Reset()
				pretty.Write(body)
			}
			fmt.Fprintf(stdout, "%s %s %s (webhook-id %s): %s\n  %s\n", time.Now().UTC().Format(time.TimeOnly), ev.Type, ev.ID,
				r.Header.Get("webhook-id"), verdict, pretty.String())
		}
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

// forwardEvent relays one event to target with its Standard Webhooks
// headers, and returns the status to answer emi with (the handler's, or
// 502 when it cannot be reached) and a description for the event's line.
func forwardEvent(ctx context.Context, c *http.Client, target string, body []byte, h http.Header) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return http.StatusBadGateway, "not forwarded: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	for _, k := range []string{"webhook-id", "webhook-timestamp", "webhook-signature", "user-agent"} {
		if v := h.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	res, err := c.Do(req)
	if err != nil {
		return http.StatusBadGateway, "forwarding failed: " + err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	_ = res.Body.Close()
	return res.StatusCode, fmt.Sprintf("forwarded to %s: HTTP %d", target, res.StatusCode)
}
