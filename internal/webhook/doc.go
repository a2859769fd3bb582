// Package webhook sends one webhook attempt the way the Standard Webhooks
// specification describes, and holds the rules around it that need no
// database: signatures and secrets, the SSRF guard, the HTTP client and the
// retry schedule. The outbox, the attempt log and the worker loop live
// elsewhere (contract §9; checks W1, W3 and W6 of
// shared/design/security-checks.md).
//
// # Signatures
//
// Sign computes the webhook-signature header: for every secret of the
// message, "v1," + base64(HMAC-SHA256(secret, id + "." + unix timestamp +
// "." + body)), separated by single spaces, so that during a secret rotation
// a receiver holding either the old or the new secret can verify. The body is
// signed as the exact bytes sent; nothing is re-serialised. Secrets are shown
// as "whsec_" + base64 of 32 random bytes (NewSecret) and read back with
// ParseSecret.
//
// # SSRF guard
//
// Partners choose the URL, so without a guard emi could be made to call its
// own network: the database, the cloud metadata service at 169.254.169.254,
// an admin port on loopback. Guard refuses them twice:
//
//   - CheckURL runs when an endpoint is registered and gives the person
//     typing the URL a message they can act on;
//   - Guard.DialContext and Guard.Control run on every connection the Client
//     makes and look at the IP address actually dialled, so a host name that
//     resolved to a public address at registration and to 127.0.0.1 at
//     delivery (DNS rebinding) is still refused.
//
// Only public unicast addresses pass. Loopback is allowed when
// AllowLoopbackHTTP is set (sandbox mode, `make run` and the tests), and then
// plain http:// is allowed too, but to loopback only, and only on the
// LoopbackPorts the operator allows (EMI_SANDBOX_WEBHOOK_PORTS), never on a
// Reserved one (emi's own listeners, the database), which both checks see:
// the port is part of the URL at registration and of the address dialled.
//
// # Delivery
//
// Client.Deliver makes one POST and reports what happened as an
// emi.WebhookResult: 2xx is success, anything else (a redirect included: it
// is never followed) is a failure to retry. It never returns a Go error: a
// failure without an HTTP answer is described in Result.Error in words a
// partner can read in the delivery log.
//
// # Retries
//
// Schedule is the Standard Webhooks example schedule: immediately, then 5 s,
// 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h after successive
// failures, each delay spread by ±20 % so that deliveries that failed
// together (an endpoint that was down) do not all come back at the same
// moment. The schedule adds up to 75.5 h (Horizon). Jitter alone could bring
// the last attempt forward to about 60 h, short of the contract's "at least
// 3 days", so DelayAfter, which knows how long ago the first attempt was,
// stretches the last delay to keep the final attempt at least RetryWindow
// after the first.
package webhook
