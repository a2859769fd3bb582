package webhook

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeResolver answers from a table and sends no traffic. Unknown names are
// "not found". It may be changed between calls (DNS rebinding).
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]string
	lookups int
}

func newFakeResolver(answers map[string][]string) *fakeResolver {
	return &fakeResolver{answers: answers}
}

func (f *fakeResolver) set(host string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[host] = addrs
}

func (f *fakeResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	addrs, ok := f.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, net.IPAddr{IP: net.ParseIP(a)})
	}
	return out, nil
}

func testResolver() *fakeResolver {
	return newFakeResolver(map[string][]string{
		"hooks.example.com":   {"93.184.216.34"},
		"dual.example.com":    {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
		"localhost":           {"127.0.0.1", "::1"},
		"loopback.test":       {"127.0.0.1"},
		"private.test":        {"10.0.0.5"},
		"metadata.test":       {"169.254.169.254"},
		"cgnat.test":          {"100.64.0.1"},
		"ula.test":            {"fd00::1"},
		"mapped.test":         {"::ffff:192.168.0.1"},
		"public-private.test": {"93.184.216.34", "10.0.0.1"},
		"private-public.test": {"fd00::1", "93.184.216.34"},
		"empty.test":          {},
	})
}

func TestGuardCheckURL(t *testing.T) {
	type tc struct {
		name string
		url  string
		// want is "" for an accepted URL, else a part of the error.
		want string
	}
	production := []tc{
		{"a public https host is accepted", "https://hooks.example.com/emi", ""},
		{"a public https host with a port and query is accepted", "https://hooks.example.com:8443/emi?x=1", ""},
		{"a host with public IPv4 and IPv6 addresses is accepted", "https://dual.example.com/emi", ""},
		{"a public IPv4 literal is accepted", "https://93.184.216.34/emi", ""},
		{"a public IPv6 literal is accepted", "https://[2606:2800:220:1:248:1893:25c8:1946]/emi", ""},
		{"an upper-case scheme is accepted", "HTTPS://hooks.example.com/emi", ""},

		{"127.0.0.1 is refused", "https://127.0.0.1/", "loopback"},
		{"another loopback address is refused", "https://127.9.9.9:8443/", "loopback"},
		{"10.1.2.3 is refused", "https://10.1.2.3/", "private network"},
		{"172.16.0.1 is refused", "https://172.16.0.1/", "private network"},
		{"172.31.255.255 is refused", "https://172.31.255.255/", "private network"},
		{"192.168.1.1 is refused", "https://192.168.1.1/", "private network"},
		{"the cloud metadata address is refused", "https://169.254.169.254/latest/meta-data/", "link-local"},
		{"carrier-grade NAT is refused", "https://100.64.0.1/", "carrier-grade NAT"},
		{"0.0.0.0 is refused", "https://0.0.0.0/", "this network"},
		{"an address in 0.0.0.0/8 is refused", "https://0.1.2.3/", "this network"},
		{"IPv4 multicast is refused", "https://224.0.0.1/", "multicast"},
		{"the broadcast address is refused", "https://255.255.255.255/", "reserved"},
		{"IPv6 loopback is refused", "https://[::1]/", "loopback"},
		{"the IPv6 unspecified address is refused", "https://[::]/", "unspecified"},
		{"IPv6 unique local fd00::1 is refused", "https://[fd00::1]/", "unique local"},
		{"IPv6 link-local fe80::1 is refused", "https://[fe80::1]/", "link-local"},
		{"IPv6 link-local with a zone is refused", "https://[fe80::1%25eth0]/", "link-local"},
		{"IPv6 multicast is refused", "https://[ff02::1]/", "multicast"},
		{"IPv4-mapped loopback is refused", "https://[::ffff:127.0.0.1]/", "loopback"},
		{"IPv4-mapped private is refused", "https://[::ffff:10.0.0.1]/", "private network"},
		{"IPv4-mapped metadata is refused", "https://[::ffff:169.254.169.254]/", "link-local"},
		{"IPv4-mapped carrier-grade NAT is refused", "https://[::ffff:100.64.0.1]/", "carrier-grade NAT"},
		{"IPv4-mapped 0.0.0.0 is refused", "https://[::ffff:0.0.0.0]/", "this network"},
		{"IPv4-compatible loopback is refused", "https://[::127.0.0.1]/", "IPv4-compatible"},
		{"NAT64 of a private address is refused", "https://[64:ff9b::a00:1]/", "private network (RFC 1918) (NAT64)"},
		{"6to4 of loopback is refused", "https://[2002:7f00:1::]/", "loopback (6to4)"},

		{"a host name resolving to loopback is refused", "https://loopback.test/", "loopback.test resolves to 127.0.0.1"},
		{"localhost is refused", "https://localhost:8080/", "loopback"},
		{"a host name resolving to a private address is refused", "https://private.test/", "private network"},
		{"a host name resolving to the metadata address is refused", "https://metadata.test/", "169.254.169.254"},
		{"a host name resolving to carrier-grade NAT is refused", "https://cgnat.test/", "carrier-grade NAT"},
		{"a host name resolving to IPv6 unique local is refused", "https://ula.test/", "unique local"},
		{"a host name resolving to a mapped private address is refused", "https://mapped.test/", "private network"},
		{"a host name resolving to a public and a private address is refused", "https://public-private.test/", "10.0.0.1"},
		{"a host name resolving to a private and a public address is refused", "https://private-public.test/", "fd00::1"},

		{"plain http to a public host is refused", "http://hooks.example.com/emi", "must start with https://"},
		{"plain http to loopback is refused", "http://127.0.0.1:9999/x", "must start with https://"},
		{"another scheme is refused", "ftp://hooks.example.com/emi", "not ftp://"},
		{"a user name and password are refused", "https://user:pass@hooks.example.com/emi", "remove the user name and password"},
		{"a user name alone is refused", "https://user@hooks.example.com/emi", "remove the user name and password"},
		{"an empty URL is refused", "", "the URL is empty"},
		{"a URL without scheme is refused", "hooks.example.com/emi", "not a valid absolute URL"},
		{"a URL without host is refused", "https:///emi", "not a valid absolute URL"},
		{"an opaque URL is refused", "https:hooks.example.com", "not a valid absolute URL"},
		{"an unparsable URL is refused", "https://hooks.example.com:port/", "not a valid absolute URL"},
		{"an unknown host is refused", "https://nosuch.test/", "does not exist"},
		{"a host without addresses is refused", "https://empty.test/", "no IP address"},
		{"a decimal IPv4 address is refused", "https://2130706433/", "neither a host name nor a dotted IPv4 address"},
		{"a hex IPv4 address is refused", "https://0x7f000001/", "neither a host name"},
		{"a short IPv4 address is refused", "https://127.1/", "neither a host name"},
	}
	sandbox := []tc{
		{"plain http to 127.0.0.1 is accepted", "http://127.0.0.1:9999/x", ""},
		{"plain http to localhost is accepted", "http://localhost:9999/x", ""},
		{"plain http to IPv6 loopback is accepted", "http://[::1]:9999/x", ""},
		{"https to loopback is accepted", "https://127.0.0.1:9999/x", ""},
		{"https to a public host is accepted", "https://hooks.example.com/emi", ""},
		{"plain http to 10.0.0.1 is still refused", "http://10.0.0.1/", "private network"},
		{"https to 10.0.0.1 is still refused", "https://10.0.0.1/", "private network"},
		{"the metadata address is still refused", "http://169.254.169.254/", "link-local"},
		{"0.0.0.0 is still refused", "http://0.0.0.0:9999/", "this network"},
		{"IPv6 unique local is still refused", "http://[fd00::1]/", "unique local"},
		{"plain http to a public host is refused", "http://hooks.example.com/emi", "plain http:// is allowed only to this machine"},
		{"a user name and password are still refused", "http://u:p@127.0.0.1:9999/", "remove the user name"},

		// Loopback on the operator's ports only, never emi's own or the
		// database's (a partner's webhook must not reach them).
		{"an allowed port in a range is accepted", "http://127.0.0.1:8081/x", ""},
		{"a loopback port not allowed is refused", "http://127.0.0.1:7000/x", "127.0.0.1:7000 is a loopback port this sandbox does not deliver webhooks to"},
		{"the list of allowed ports is given", "http://localhost:22/", "EMI_SANDBOX_WEBHOOK_PORTS: 9999, 8000-8100, 5000-6000"},
		{"a URL without a port is port 80", "http://localhost/x", "localhost (127.0.0.1:80) is a loopback port"},
		{"https without a port is port 443", "https://127.0.0.1/x", "127.0.0.1:443"},
		{"emi's own port is refused even when allowed", "http://127.0.0.1:8080/x", "it is emi's own port (EMI_ADDR)"},
		{"emi's own port on IPv6 loopback is refused", "http://[::1]:8080/x", "emi's own port"},
		{"emi's own port on mapped loopback is refused", "http://[::ffff:127.0.0.1]:8080/x", "emi's own port"},
		{"emi's own port through a name is refused", "https://loopback.test:8080/x", "loopback.test (127.0.0.1:8080)"},
		{"the database's port is refused even when allowed", "http://localhost:5432/", "it is the database's port (DATABASE_URL)"},
	}
	for _, mode := range []struct {
		name  string
		guard Guard
		cases []tc
	}{
		{"production", Guard{Resolver: testResolver()}, production},
		{"sandbox", Guard{AllowLoopbackHTTP: true, Resolver: testResolver(), LoopbackPorts: []PortRange{{9999, 9999}, {8000, 8100}, {5000, 6000}},
			Reserved: testReserved()}, sandbox},
	} {
		t.Run(mode.name, func(t *testing.T) {
			for _, c := range mode.cases {
				t.Run(c.name, func(t *testing.T) {
					err := mode.guard.CheckURL(context.Background(), c.url)
					switch {
					case c.want == "" && err != nil:
						t.Fatalf("CheckURL(%q) = %v, want accepted", c.url, err)
					case c.want == "":
						return
					case err == nil:
						t.Fatalf("CheckURL(%q) accepted, want an error containing %q", c.url, c.want)
					case !strings.Contains(err.Error(), c.want):
						t.Fatalf("CheckURL(%q) = %q, want it to contain %q", c.url, err, c.want)
					}
					// The message is shown next to the URL field: one
					// sentence, no Go internals.
					for _, internal := range []string{"\n", "dial ", "lookup ", "parse ", "%!", "net/url", "*"} {
						if strings.Contains(err.Error(), internal) {
							t.Errorf("message %q contains %q", err, internal)
						}
					}
				})
			}
		})
	}

	t.Run("a blocked address is reported as a *BlockedError", func(t *testing.T) {
		err := Guard{Resolver: testResolver()}.CheckURL(context.Background(), "https://metadata.test/")
		var blocked *BlockedError
		if !errors.As(err, &blocked) || blocked.Addr != netip.MustParseAddr("169.254.169.254") || blocked.Host != "metadata.test" {
			t.Fatalf("CheckURL = %#v, want a *BlockedError for 169.254.169.254", err)
		}
	})

	t.Run("a canceled context is returned as it is", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := Guard{Resolver: testResolver()}.CheckURL(ctx, "https://hooks.example.com/")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("CheckURL = %v, want context.Canceled", err)
		}
	})

	t.Run("an address literal is not looked up", func(t *testing.T) {
		r := testResolver()
		_ = Guard{Resolver: r}.CheckURL(context.Background(), "https://10.0.0.1/")
		_ = Guard{Resolver: r}.CheckURL(context.Background(), "https://[::1]/")
		if r.lookups != 0 {
			t.Fatalf("%d lookups for address literals", r.lookups)
		}
	})
}

// testReserved is emi's own port 8080 and the database's 5432.
func testReserved() *ReservedPorts {
	r := NewReservedPorts()
	r.Add(8080, "emi's own port (EMI_ADDR)")
	r.Add(5432, "the database's port (DATABASE_URL)")
	r.Add(8080, "a second description is ignored")
	return r
}

func TestGuardControl(t *testing.T) {
	tests := []struct {
		name      string
		sandbox   bool
		address   string
		wantBlock bool
	}{
		{"a public IPv4 address may be dialled", false, "93.184.216.34:443", false},
		{"a public IPv6 address may be dialled", false, "[2606:2800:220:1:248:1893:25c8:1946]:443", false},
		{"loopback may not be dialled", false, "127.0.0.1:443", true},
		{"IPv6 loopback may not be dialled", false, "[::1]:443", true},
		{"mapped loopback may not be dialled", false, "[::ffff:127.0.0.1]:443", true},
		{"a private address may not be dialled", false, "10.1.2.3:443", true},
		{"the metadata address may not be dialled", false, "169.254.169.254:80", true},
		{"carrier-grade NAT may not be dialled", false, "100.64.0.1:443", true},
		{"a unique local address may not be dialled", false, "[fd00::1]:443", true},
		{"a zoned link-local address may not be dialled", false, "[fe80::1%eth0]:443", true},
		{"0.0.0.0 may not be dialled", false, "0.0.0.0:443", true},
		{"in sandbox mode loopback may be dialled", true, "127.0.0.1:8081", false},
		{"in sandbox mode IPv6 loopback may be dialled", true, "[::1]:8081", false},
		{"in sandbox mode a loopback port not allowed may not be dialled", true, "127.0.0.1:22", true},
		{"in sandbox mode emi's own port may not be dialled", true, "127.0.0.1:8080", true},
		{"in sandbox mode the database's port may not be dialled", true, "[::1]:5432", true},
		{"in sandbox mode a private address may still not be dialled", true, "192.168.1.1:80", true},
		{"in sandbox mode 0.0.0.0 may still not be dialled", true, "0.0.0.0:8080", true},
		{"an address that is not ip:port is refused", false, "hooks.example.com:443", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Guard{AllowLoopbackHTTP: tc.sandbox, LoopbackPorts: []PortRange{{5000, 9000}}, Reserved: testReserved()}.Control("tcp", tc.address, nil)
			if (err != nil) != tc.wantBlock {
				t.Fatalf("Control(%q) = %v, want blocked %v", tc.address, err, tc.wantBlock)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "blocked address") {
				t.Fatalf("Control error %q does not start with %q", err, "blocked address")
			}
		})
	}
}

func TestGuardDialContext(t *testing.T) {
	// None of these dials may reach the network: each is refused after the
	// fake lookup, before connecting.
	tests := []struct {
		name    string
		sandbox bool
		address string
		want    string
	}{
		{"a host name resolving to loopback is refused", false, "loopback.test:443", "loopback.test resolves to 127.0.0.1"},
		{"a host name resolving to a public and a private address is refused", false, "public-private.test:443", "10.0.0.1"},
		{"a host name resolving to the metadata address is refused in sandbox mode", true, "metadata.test:80", "link-local"},
		{"an unknown host name is refused", false, "nosuch.test:443", "does not exist"},
		{"a private address literal is refused", false, "10.0.0.1:443", "private network"},
		{"emi's own port through a name is refused in sandbox mode", true, "loopback.test:8080", "emi's own port"},
		{"the database's port is refused in sandbox mode", true, "127.0.0.1:5432", "the database's port"},
		{"a port that is not a number is refused", true, "loopback.test:http", "cannot check port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := Guard{AllowLoopbackHTTP: tc.sandbox, LoopbackPorts: []PortRange{{1, 65535}}, Reserved: testReserved(), Resolver: testResolver()}.DialContext(context.Background(), "tcp", tc.address)
			if err == nil {
				_ = conn.Close()
				t.Fatalf("DialContext(%q) connected", tc.address)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DialContext(%q) = %q, want it to contain %q", tc.address, err, tc.want)
			}
		})
	}

	t.Run("a plain http dial in sandbox mode to a public address is refused", func(t *testing.T) {
		ctx := context.WithValue(context.Background(), loopbackOnlyKey{}, true)
		_, err := Guard{AllowLoopbackHTTP: true, LoopbackPorts: []PortRange{{80, 80}}, Resolver: testResolver()}.DialContext(ctx, "tcp", "hooks.example.com:80")
		var blocked *BlockedError
		if !errors.As(err, &blocked) || !strings.Contains(err.Error(), "plain http://") {
			t.Fatalf("DialContext = %v, want a blocked public address", err)
		}
	})

	t.Run("a loopback listener is reached in sandbox mode through the resolver", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		n, _ := strconv.ParseUint(port, 10, 16)
		allowed := []PortRange{{uint16(n), uint16(n)}}
		conn, err := Guard{AllowLoopbackHTTP: true, LoopbackPorts: allowed, Resolver: testResolver()}.DialContext(context.Background(), "tcp", "loopback.test:"+port)
		if err != nil {
			t.Fatalf("DialContext = %v", err)
		}
		_ = conn.Close()
		// Reserved once emi serve knows it listens there: refused, also
		// when allowed (copies of the guard share the set).
		reserved := NewReservedPorts()
		g := Guard{AllowLoopbackHTTP: true, LoopbackPorts: allowed, Reserved: reserved, Resolver: testResolver()}
		reserved.Add(uint16(n), "emi's own port (the address emi serve listens on)")
		if conn, err := g.DialContext(context.Background(), "tcp", "loopback.test:"+port); err == nil || !strings.Contains(err.Error(), "emi's own port") {
			if conn != nil {
				_ = conn.Close()
			}
			t.Fatalf("DialContext to a reserved port = %v", err)
		}
	})
}
