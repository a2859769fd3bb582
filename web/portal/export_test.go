package portal

import "net/http"

// UnguardedHandler is p's back office built again with the route guards
// off, so that a test can show that the services refuse on their own, for
// the same reason, what the guards refuse.
func UnguardedHandler(p *Portal) http.Handler {
	return newPortal(p.deps, true).Handler()
}
