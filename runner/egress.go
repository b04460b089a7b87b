package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrEgressDenied is what a dial to an address the egress policy refuses fails with.
var ErrEgressDenied = errors.New("egress denied")

// EgressError says which host and address the egress policy refused, and why. It matches
// ErrEgressDenied.
type EgressError struct {
	Host   string
	Addr   string
	Reason string
}

func (e *EgressError) Error() string {
	return fmt.Sprintf("egress denied: %s resolves to %s, a %s address; allow it with --http-allow", e.Host, e.Addr, e.Reason)
}

// Is makes errors.Is(err, ErrEgressDenied) true.
func (e *EgressError) Is(target error) bool { return target == ErrEgressDenied }

// EgressPolicy decides which addresses http steps may reach. Public unicast addresses are
// always allowed; loopback, private, shared (100.64.0.0/10), link-local, unique-local,
// unspecified, multicast, broadcast and reserved addresses, also when embedded in an IPv6
// address (IPv4-mapped, IPv4-compatible, NAT64, 6to4), only when an allow rule matches.
// The zero value and nil allow public addresses only.
type EgressPolicy struct {
	allow []allowRule
}

// allowRule is one --http-allow entry: a CIDR (any port), or a host name or IP address
// with an optional port (0: any).
type allowRule struct {
	prefix netip.Prefix // valid for CIDR and IP rules
	host   string       // lower-case host name for name rules
	port   uint16
}

// NewEgressPolicy parses allow rules, each "CIDR" or "HOST[:PORT]" (an IPv6 address with a
// port in brackets: "[::1]:8080").
func NewEgressPolicy(allow ...string) (*EgressPolicy, error) {
	p := &EgressPolicy{}
	for _, s := range allow {
		r, err := parseAllowRule(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("http allow rule %q: %w", s, err)
		}
		p.allow = append(p.allow, r)
	}
	return p, nil
}

func parseAllowRule(s string) (allowRule, error) {
	if s == "" {
		return allowRule{}, errors.New("empty")
	}
	if pfx, err := netip.ParsePrefix(s); err == nil {
		return allowRule{prefix: unmapPrefix(pfx).Masked()}, nil
	}
	host, port, err := splitPort(s)
	if err != nil {
		return allowRule{}, err
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.WithZone("").Unmap()
		return allowRule{prefix: netip.PrefixFrom(ip, ip.BitLen()), port: port}, nil
	}
	host = normalHost(host)
	if !validHostName(host) {
		return allowRule{}, errors.New("not a CIDR, IP address or host name")
	}
	return allowRule{host: host, port: port}, nil
}

func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

// deniedRanges are the address ranges http steps may not reach unless allowed, by reason.
var deniedRanges = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved or broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fc00::/7"), "unique local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// deniedReason says why ip is not public, or "" when it is. IPv4 addresses embedded in
// IPv6 ones (mapped, NAT64, 6to4) are judged as the IPv4 address they reach.
func deniedReason(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64Prefix.Contains(ip):
			return embeddedReason(netip.AddrFrom4([4]byte(b[12:16])), "NAT64")
		case sixToFour.Contains(ip):
			return embeddedReason(netip.AddrFrom4([4]byte(b[2:6])), "6to4")
		}
	}
	for _, r := range deniedRanges {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	return ""
}

func embeddedReason(v4 netip.Addr, via string) string {
	if reason := deniedReason(v4); reason != "" {
		return reason + " via " + via
	}
	return ""
}

// Check says whether a step may connect to addr, which the URL host host resolved to:
// nil, or an *EgressError.
func (p *EgressPolicy) Check(host string, addr netip.AddrPort) error {
	reason := deniedReason(addr.Addr())
	if reason == "" || p.allows(host, addr) {
		return nil
	}
	return &EgressError{Host: host, Addr: addr.String(), Reason: reason}
}

func (p *EgressPolicy) allows(host string, addr netip.AddrPort) bool {
	if p == nil {
		return false
	}
	ip := addr.Addr().WithZone("").Unmap()
	host = normalHost(host)
	for _, r := range p.allow {
		if r.port != 0 && r.port != addr.Port() {
			continue
		}
		if (r.prefix.IsValid() && r.prefix.Contains(ip)) || (r.host != "" && r.host == host) {
			return true
		}
	}
	return false
}

// dialContext dials like d, refusing, once the name is resolved and before connecting, every
// address the policy denies. Checking the resolved address (not the URL) also catches host
// names that resolve to private addresses.
func (p *EgressPolicy) dialContext(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, fmt.Errorf("dialing %s: %w", address, err)
		}
		checked := *d
		checked.Control = func(_, resolved string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(resolved)
			if err != nil {
				return &EgressError{Host: host, Addr: resolved, Reason: "unparsable"}
			}
			return p.Check(host, ap)
		}
		return checked.DialContext(ctx, network, address)
	}
}

// newHTTPClient returns the client of http steps: every connection is checked against
// policy at dial time, proxies are not used (a proxy would dial in our stead), response
// headers are bounded, and connection headers never follow a redirect to another origin.
func newHTTPClient(policy *EgressPolicy) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = policy.dialContext(dialer)
	tr.MaxResponseHeaderBytes = MaxResponseHeaderBytes
	return &http.Client{Transport: tr, CheckRedirect: checkRedirect}
}
