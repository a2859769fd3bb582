// Package partners is emi's API clients: partners and their API keys
// (Partners), HMAC request authentication with its replay guard (Auth,
// Signature), and webhooks: endpoints, secrets and their rotation, delivery
// with retries and replay (Webhooks). It imports only the kernel.
package partners
