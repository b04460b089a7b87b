package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Credential is a connection as http steps use it: the headers carrying its secret and the
// host patterns (see ParseHostPattern) of the only hosts they may be sent to. A
// credential with no hosts is sent nowhere.
type Credential struct {
	Hosts  []string
	Header http.Header
}

// HostPattern is one host a connection is bound to: an exact host name or IP address, or
// "*.domain" for every name under domain (any depth, not domain itself), with an optional
// scheme and port. A secret must not cross the network in cleartext by default, so a
// pattern without a scheme matches https only and one without a port the scheme's default
// port (443, or 80 for "http://"). A loopback host ("localhost", 127.0.0.0/8, ::1) never
// leaves the machine: without a scheme it matches http and https, without a port any port.
type HostPattern struct {
	Scheme string // "http", "https", or "" (https only, unless loopback)
	Host   string // lower case; "*.domain" for a wildcard; an IPv6 address without brackets
	Port   uint16 // 0: the scheme's default port, or any port on a loopback host
}

// MaxHostLength is the longest host name a host pattern may give.
const MaxHostLength = 253

// ParseHostPattern parses "host", "*.domain", "1.2.3.4", "[::1]", each with an optional
// "http://" or "https://" before it and ":port" after it, and returns it normalised
// (lower case, no trailing dot).
func ParseHostPattern(s string) (HostPattern, error) {
	scheme, rest, err := splitScheme(s)
	if err != nil {
		return HostPattern{}, err
	}
	host, port, err := splitPort(rest)
	if err != nil {
		return HostPattern{}, err
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return HostPattern{}, errors.New("an IPv6 zone is not allowed")
		}
		return HostPattern{Scheme: scheme, Host: ip.Unmap().String(), Port: port}, nil
	}
	host = normalHost(host)
	name, wildcard := strings.CutPrefix(host, "*.")
	if !validHostName(name) || (wildcard && !strings.Contains(name, ".")) {
		return HostPattern{}, errors.New(`must be a host name, "*.domain" or an IP address, with an optional "http://" or "https://" and ":port"`)
	}
	return HostPattern{Scheme: scheme, Host: host, Port: port}, nil
}

// splitScheme cuts an optional "http://" or "https://" (any case) off s.
func splitScheme(s string) (scheme, rest string, err error) {
	i := strings.Index(s, "://")
	if i < 0 {
		return "", s, nil
	}
	scheme = strings.ToLower(s[:i])
	if scheme != "http" && scheme != "https" {
		return "", "", fmt.Errorf("scheme %q is not http or https", s[:i])
	}
	return scheme, s[i+len("://"):], nil
}

// String gives the pattern in the form ParseHostPattern reads.
func (p HostPattern) String() string {
	host := p.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p.Scheme != "" {
		host = p.Scheme + "://" + host
	}
	if p.Port == 0 {
		return host
	}
	return host + ":" + strconv.Itoa(int(p.Port))
}

// Matches says whether a request to u may carry a credential bound to p.
func (p HostPattern) Matches(u *url.URL) bool {
	loopback := p.loopback()
	switch {
	case p.Scheme != "" && u.Scheme != p.Scheme,
		p.Scheme == "" && u.Scheme != "https" && !loopback,
		p.Port != 0 && p.Port != effectivePort(u),
		p.Port == 0 && !loopback && effectivePort(u) != defaultPort(u.Scheme):
		return false
	}
	host := normalHost(u.Hostname())
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	}
	if domain, ok := strings.CutPrefix(p.Host, "*."); ok {
		return strings.HasSuffix(host, "."+domain)
	}
	return host == p.Host
}

// loopback says whether p names this machine: "localhost" or a loopback address.
func (p HostPattern) loopback() bool {
	if p.Host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(p.Host)
	return err == nil && ip.IsLoopback()
}

func effectivePort(u *url.URL) uint16 {
	if p := u.Port(); p != "" {
		n, _ := strconv.ParseUint(p, 10, 16)
		return uint16(n)
	}
	return defaultPort(u.Scheme)
}

func defaultPort(scheme string) uint16 {
	if scheme == "https" {
		return 443
	}
	return 80
}

// splitPort splits an optional ":port" (1-65535; 0 when absent) off s, and the brackets
// off an IPv6 address.
func splitPort(s string) (string, uint16, error) {
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return "", 0, fmt.Errorf("port %q is not 1-65535", p)
		}
		return h, uint16(n), nil
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		return s[1 : len(s)-1], 0, nil
	}
	return s, 0, nil
}

// normalHost is a host name as compared: lower case, without a trailing dot.
func normalHost(s string) string {
	return strings.ToLower(strings.TrimSuffix(s, "."))
}

// validHostName accepts DNS names: dot-separated labels of letters, digits and hyphens, not
// starting or ending with a hyphen, 1-63 characters each, MaxHostLength in all.
func validHostName(s string) bool {
	if s == "" || len(s) > MaxHostLength {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// boundTo says whether a credential bound to patterns may be sent to u.
func boundTo(patterns []HostPattern, u *url.URL) bool {
	for _, p := range patterns {
		if p.Matches(u) {
			return true
		}
	}
	return false
}

// maxCachedHostLists bounds an engine's cache of parsed connection hosts; when full it
// starts over.
const maxCachedHostLists = 1024

// hostCache parses each list of connection hosts once, the first time a step uses it, so
// steps match their URL against patterns already parsed.
type hostCache struct {
	mu    sync.Mutex
	lists map[string][]HostPattern
}

func newHostCache() *hostCache { return &hostCache{lists: map[string][]HostPattern{}} }

// patterns returns hosts parsed. A host that does not parse is an error, never skipped:
// the step fails rather than match fewer hosts than the connection shows.
func (c *hostCache) patterns(hosts []string) ([]HostPattern, error) {
	key := strings.Join(hosts, "\x00")
	c.mu.Lock()
	ps, ok := c.lists[key]
	c.mu.Unlock()
	if ok {
		return ps, nil
	}
	ps = make([]HostPattern, len(hosts))
	for i, h := range hosts {
		p, err := ParseHostPattern(h)
		if err != nil {
			return nil, fmt.Errorf("host %q: %w", h, err)
		}
		ps[i] = p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lists) >= maxCachedHostLists {
		clear(c.lists)
	}
	c.lists[key] = ps
	return ps, nil
}

// secretHeaders are dropped from a request redirected to another origin, whatever set them.
var secretHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Cookie2"}

type connectionHeadersKey struct{}

// withConnectionHeaders records in ctx the names of the headers a connection added to a
// request, for checkRedirect.
func withConnectionHeaders(ctx context.Context, h http.Header) context.Context {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	return context.WithValue(ctx, connectionHeadersKey{}, names)
}

// checkRedirect follows up to 10 redirects like Go's default, and drops every connection
// header, Authorization and cookies when a redirect leaves the origin of the first request
// (Go's client keeps custom headers across hosts). Each redirect's address is checked
// again when it is dialled.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if origin(req.URL) == origin(via[0].URL) {
		return nil
	}
	names, _ := req.Context().Value(connectionHeadersKey{}).([]string)
	for _, name := range append(names, secretHeaders...) {
		req.Header.Del(name)
	}
	return nil
}

func origin(u *url.URL) string {
	return u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + strconv.Itoa(int(effectivePort(u)))
}
