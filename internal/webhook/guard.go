package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Resolver looks up the addresses of a host name. *net.Resolver implements
// it; tests pass a fake that answers without sending any traffic.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Guard decides which webhook URLs and addresses emi may connect to. The zero
// value is the production policy: https only, public addresses only, host
// names resolved by net.DefaultResolver. A Guard is a value and safe for
// concurrent use as long as its Resolver is.
type Guard struct {
	// AllowLoopbackHTTP allows loopback addresses (127.0.0.0/8, ::1) on
	// the LoopbackPorts and, for URLs whose host resolves to loopback
	// only, plain http://. It is set in sandbox mode (contract §10:
	// EMI_MODE=sandbox) and in tests. Every other non-public address is
	// refused even then.
	AllowLoopbackHTTP bool
	// LoopbackPorts are the only ports a loopback address may be reached
	// on (EMI_SANDBOX_WEBHOOK_PORTS); none when empty. A hosted sandbox
	// serves many partners on one machine, where loopback also reaches
	// emi itself, its database and whatever else listens there: a
	// partner's webhook must not become a way to poke at them.
	LoopbackPorts []PortRange
	// Reserved are ports never reached on loopback, even when LoopbackPorts
	// lists them: emi's own listeners and the database's port. Copies of
	// the Guard share it, so `emi serve` can add the port it got from the
	// system (EMI_ADDR=…:0) once it listens; nil means none.
	Reserved *ReservedPorts
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
}

// PortRange is an inclusive range of TCP ports.
type PortRange struct{ From, To uint16 }

// String writes r as "8081" or "9000-9010".
func (r PortRange) String() string {
	if r.From == r.To {
		return strconv.Itoa(int(r.From))
	}
	return strconv.Itoa(int(r.From)) + "-" + strconv.Itoa(int(r.To))
}

// ReservedPorts is a set of ports, each with what listens there ("emi's own
// port (EMI_ADDR)"), safe for concurrent use.
type ReservedPorts struct {
	mu    sync.RWMutex
	ports map[uint16]string
}

// NewReservedPorts returns an empty set.
func NewReservedPorts() *ReservedPorts { return &ReservedPorts{ports: map[uint16]string{}} }

// Add reserves port, saying what it is; a port already reserved keeps its
// first description. Port 0 is ignored.
func (r *ReservedPorts) Add(port uint16, what string) {
	if port == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.ports[port]; !ok {
		r.ports[port] = what
	}
}

// lookup returns what port is, and whether it is reserved (false for a nil
// set).
func (r *ReservedPorts) lookup(port uint16) (string, bool) {
	if r == nil {
		return "", false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	what, ok := r.ports[port]
	return what, ok
}

// BlockedError reports a connection refused because the address is not a
// public internet address, or is a loopback address on a port the sandbox
// does not deliver to.
type BlockedError struct {
	// Host is the host name or address literal of the URL.
	Host string
	// Addr is the refused address.
	Addr netip.Addr
	// Kind says what sort of address Addr is, e.g. "loopback".
	Kind string
	// Port is the refused port of a loopback address (0 otherwise), and
	// Reason why it is refused.
	Port   uint16
	Reason string
}

// Kinds of address with a rule of their own.
const (
	kindLoopback = "a loopback"
	// kindPublic is refused only for a plain http URL.
	kindPublic = "a public"
)

// Error returns a sentence a partner can act on, starting with "blocked
// address".
func (e *BlockedError) Error() string {
	what := e.Addr.String()
	if e.Port != 0 {
		at := netip.AddrPortFrom(e.Addr, e.Port).String()
		if e.Host != "" && e.Host != e.Addr.String() {
			at = e.Host + " (" + at + ")"
		}
		return "blocked address: " + at + " is a loopback port " + e.Reason
	}
	if e.Host != "" && e.Host != what {
		what = e.Host + " resolves to " + what + ", which"
	}
	if e.Kind == kindPublic {
		return "blocked address: " + what + " is not loopback; plain http:// is allowed only to this machine in sandbox mode: use https://"
	}
	return "blocked address: " + what + " is " + e.Kind + " address; webhooks are delivered only to public internet addresses"
}

// loopbackOnlyKey marks a context whose dials may reach loopback only: the
// request is plain http, which the guard allows to loopback only.
type loopbackOnlyKey struct{}

// CheckURL reports whether rawURL may be registered as a webhook endpoint.
// It returns nil for an absolute https URL without user name or password
// whose host resolves, through g.Resolver, to public addresses only; with
// AllowLoopbackHTTP, loopback addresses pass too and so does http:// when
// every address is loopback. It returns ctx.Err() if ctx ends first; any
// other error's message is written for the person who typed the URL and can
// be shown next to the field as it is.
func (g Guard) CheckURL(ctx context.Context, rawURL string) error {
	u, err := g.parseURL(rawURL)
	if err != nil {
		return err
	}
	host := u.Hostname()
	port := urlPort(u)
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return err
	}
	for _, a := range addrs {
		if err := g.check(host, a, port, u.Scheme == "http"); err != nil {
			return err
		}
	}
	return nil
}

// urlPort is the port u connects to: its own, or its scheme's (parseURL
// allows http and https only; url.Parse refuses a port that is not a
// number).
func urlPort(u *url.URL) uint16 {
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(p)
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}

// parseURL returns rawURL parsed, with its scheme in lower case, or an error
// for a person if it is not absolute, has user information, or its scheme is
// neither https nor (with AllowLoopbackHTTP) http. It does not resolve the
// host: Deliver calls it on every attempt and leaves addresses to the dialer.
func (g Guard) parseURL(rawURL string) (*url.URL, error) {
	const example = "enter a full URL such as https://hooks.example.com/emi"
	if strings.TrimSpace(rawURL) == "" {
		return nil, errors.New("the URL is empty: " + example)
	}
	u, err := url.Parse(rawURL)
	if err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "" {
		return nil, errors.New("the URL is not a valid absolute URL: " + example)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.AllowLoopbackHTTP:
	case u.Scheme == "http":
		return nil, errors.New("the URL must start with https:// (plain http:// would send events unencrypted)")
	default:
		return nil, fmt.Errorf("the URL must start with https://, not %s://", u.Scheme)
	}
	if u.User != nil {
		return nil, errors.New("remove the user name and password from the URL: deliveries are authenticated by their signature")
	}
	host := u.Hostname()
	if host == "" {
		return nil, errors.New("the URL has no host name: " + example)
	}
	if _, err := netip.ParseAddr(host); err != nil && oddNumericHost(host) {
		// Forms like 2130706433, 0x7f.1 or 127.1 are IPv4 addresses to some
		// resolvers and invalid names to others; neither is a real endpoint.
		return nil, fmt.Errorf("the host %q is neither a host name nor a dotted IPv4 address: use a host name", host)
	}
	return u, nil
}

// oddNumericHost reports whether host's last label is numeric (decimal or
// 0x hex). No top-level domain is numeric, so such a host is an IP address in
// a non-standard spelling.
func oddNumericHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	label := host[strings.LastIndexByte(host, '.')+1:]
	if label == "" {
		return false
	}
	if l := strings.ToLower(label); strings.HasPrefix(l, "0x") {
		return strings.Trim(l[2:], "0123456789abcdef") == ""
	}
	return strings.Trim(label, "0123456789") == ""
}

// resolve returns the addresses of host: the address itself for a literal,
// else what g.Resolver answers. It returns an error for a person when the
// lookup fails or finds nothing.
func (g Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.WithZone("")}, nil
	}
	var r Resolver = net.DefaultResolver
	if g.Resolver != nil {
		r = g.Resolver
	}
	ips, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return nil, fmt.Errorf("the host %s does not exist (no DNS record): check the spelling", host)
		}
		return nil, fmt.Errorf("the host %s could not be looked up in DNS: try again later", host)
	}
	addrs := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		// net.IP holds IPv4 addresses in 16 bytes; Unmap gives them
		// back their IPv4 form, which is also the address dialled.
		if a, ok := netip.AddrFromSlice(ip.IP); ok {
			addrs = append(addrs, a.Unmap())
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("the host %s has no IP address in DNS: check the spelling", host)
	}
	return addrs, nil
}

// check returns a *BlockedError if port of a, an address of host, may not
// be connected to under g; loopbackOnly refuses public addresses too (a
// plain http URL). It returns nil otherwise.
func (g Guard) check(host string, a netip.Addr, port uint16, loopbackOnly bool) error {
	kind := classify(a)
	switch {
	case kind == kindLoopback && g.AllowLoopbackHTTP:
		return g.checkLoopbackPort(host, a, port)
	case kind == "" && !loopbackOnly:
		return nil
	case kind == "":
		kind = kindPublic
	}
	return &BlockedError{Host: host, Addr: a.WithZone(""), Kind: kind}
}

// checkLoopbackPort returns a *BlockedError unless port is one of the
// LoopbackPorts and not Reserved.
func (g Guard) checkLoopbackPort(host string, a netip.Addr, port uint16) error {
	blocked := &BlockedError{Host: host, Addr: a.WithZone(""), Kind: kindLoopback, Port: port}
	if what, ok := g.Reserved.lookup(port); ok {
		blocked.Reason = "emi never delivers webhooks to: it is " + what
		return blocked
	}
	for _, r := range g.LoopbackPorts {
		if port >= r.From && port <= r.To {
			return nil
		}
	}
	allowed := make([]string, len(g.LoopbackPorts))
	for i, r := range g.LoopbackPorts {
		allowed[i] = r.String()
	}
	list := "none"
	if len(allowed) > 0 {
		list = strings.Join(allowed, ", ")
	}
	blocked.Reason = "this sandbox does not deliver webhooks to; it delivers to loopback only on the ports its operator allows (EMI_SANDBOX_WEBHOOK_PORTS: " + list + ")"
	return blocked
}

// classify returns "" for a public unicast address and otherwise what it is,
// with its article ("a loopback", "a private network (RFC 1918)"…). IPv4
// addresses written as IPv6 (mapped, NAT64, 6to4) are judged by the IPv4
// address inside.
func classify(a netip.Addr) string {
	a = a.WithZone("").Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case netip.MustParsePrefix("64:ff9b::/96").Contains(a):
			if k := classify(netip.AddrFrom4([4]byte(b[12:16]))); k != "" {
				return k + " (NAT64)"
			}
		case netip.MustParsePrefix("2002::/16").Contains(a):
			if k := classify(netip.AddrFrom4([4]byte(b[2:6]))); k != "" {
				return k + " (6to4)"
			}
		}
	}
	for _, r := range blockedRanges() {
		if r.prefix.Contains(a) {
			return r.kind
		}
	}
	return ""
}

type blockedRange struct {
	prefix netip.Prefix
	kind   string
}

// blockedRanges returns the non-public ranges, most specific first (::1
// and :: before ::/96). Built on each call rather than held in a package
// variable: it costs far less than the DNS lookup or connection around it.
func blockedRanges() []blockedRange {
	p := netip.MustParsePrefix
	return []blockedRange{
		{p("0.0.0.0/8"), `a "this network" (0.0.0.0/8)`},
		{p("10.0.0.0/8"), "a private network (RFC 1918)"},
		{p("100.64.0.0/10"), "a carrier-grade NAT (100.64.0.0/10)"},
		{p("127.0.0.0/8"), kindLoopback},
		{p("169.254.0.0/16"), "a link-local (cloud metadata)"},
		{p("172.16.0.0/12"), "a private network (RFC 1918)"},
		{p("192.0.0.0/24"), "an IETF protocol"},
		{p("192.0.2.0/24"), "a documentation"},
		{p("192.168.0.0/16"), "a private network (RFC 1918)"},
		{p("198.18.0.0/15"), "a benchmarking"},
		{p("198.51.100.0/24"), "a documentation"},
		{p("203.0.113.0/24"), "a documentation"},
		{p("224.0.0.0/4"), "a multicast"},
		{p("240.0.0.0/4"), "a reserved (240.0.0.0/4)"},
		{p("::/128"), "an unspecified"},
		{p("::1/128"), kindLoopback},
		{p("::/96"), "a deprecated IPv4-compatible"},
		{p("64:ff9b:1::/48"), "a local NAT64"},
		{p("100::/64"), "a discard-only"},
		{p("2001::/32"), "a Teredo tunnel"},
		{p("2001:db8::/32"), "a documentation"},
		{p("fc00::/7"), "a unique local (private IPv6)"},
		{p("fe80::/10"), "a link-local"},
		{p("fec0::/10"), "a site-local (private IPv6)"},
		{p("ff00::/8"), "a multicast"},
	}
}

// DialContext connects like net.Dialer.DialContext, but resolves the host
// with g.Resolver and refuses, with a *BlockedError, a host that has any
// address g forbids, before connecting anywhere. Control checks the address
// once more as the socket connects. It returns an error for a person when the
// host cannot be resolved, and the last connection error when no address
// answers. ctx bounds the lookup and the connection.
func (g Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	portNum, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("blocked address: cannot check port %q of %s", port, host)
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	loopbackOnly, _ := ctx.Value(loopbackOnlyKey{}).(bool)
	// All addresses are checked before any is dialled: a host that resolves
	// to one public and one private address is refused as a whole, as
	// CheckURL refuses it, rather than working or not by the order of the
	// DNS answer.
	for _, a := range addrs {
		if err := g.check(host, a, uint16(portNum), loopbackOnly); err != nil {
			return nil, err
		}
	}
	d := net.Dialer{ControlContext: g.controlContext}
	var lastErr error
	for _, a := range addrs {
		if (network == "tcp4" && !a.Unmap().Is4()) || (network == "tcp6" && a.Unmap().Is4()) {
			continue
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("the host %s has no %s address", host, network)
	}
	return nil, lastErr
}

// Control is a net.Dialer.Control function: it returns a *BlockedError when
// address, the "ip:port" about to be connected to, is one g forbids, and nil
// otherwise. Because it sees the address actually dialled, a dialer using it
// cannot be sent to a forbidden address by a DNS answer that changed since
// the URL was checked.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	return g.controlContext(context.Background(), network, address, nil)
}

func (g Guard) controlContext(ctx context.Context, network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("blocked address: cannot check %q (%s)", address, network)
	}
	loopbackOnly, _ := ctx.Value(loopbackOnlyKey{}).(bool)
	return g.check("", ap.Addr(), ap.Port(), loopbackOnly)
}
