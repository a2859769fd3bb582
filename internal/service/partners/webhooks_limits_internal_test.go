package partners

import "testing"

// The limit per host counts one host under every spelling a URL can give
// it, or the limit could be passed by spelling one host many ways: case, a
// trailing dot, the port, the path and query, and the IPv6 forms of an IPv4
// address.
func TestEndpointHostIsTheHostAsDialled(t *testing.T) {
	for _, tc := range []struct{ url, host string }{
		{"https://Hooks.Example.com/a", "hooks.example.com"},
		{"https://hooks.example.com.:8443/b?x=1#f", "hooks.example.com"},
		{"  HTTPS://HOOKS.EXAMPLE.COM ", "hooks.example.com"},
		{"http://127.0.0.1:9/x", "127.0.0.1"},
		{"http://[::ffff:127.0.0.1]:9/x", "127.0.0.1"},
		{"http://[0:0:0:0:0:0:0:1]/x", "::1"},
		{"http://[fe80::1%25eth0]/x", "fe80::1"},
		{"::not a url", ""},
	} {
		if got := endpointHost(tc.url); got != tc.host {
			t.Errorf("endpointHost(%q) = %q, want %q", tc.url, got, tc.host)
		}
	}
}
