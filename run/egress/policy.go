// Package egress is the only way out of a replayed tool's network
// namespace: an HTTP forward and HTTPS CONNECT proxy that decides every
// connection attempt by a policy and journals it (host, port, bytes each
// way, allowed or denied, and which replayed call made it).
//
// The proxy never listens on a network address of the host. Each tool's
// init (package run) listens on NamespaceAddr inside the tool's own
// network namespace, whose only interface is lo, and hands every accepted
// connection to the proxy as a file descriptor over a socketpair (Attach,
// Relay). Nothing in the namespace can reach anything else, so no traffic
// bypasses the policy, and no process outside the namespace can reach the
// proxy. The package knows nothing about agents.
package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Policy names, as pVisor's --overlaynet-policy spells them.
const (
	// PolicyPublic allows any public address and records it; private,
	// loopback and link-local destinations (the host's own services, a
	// cloud metadata endpoint) are denied, as pVisor's hostname rules
	// need an explicit private-address grant.
	PolicyPublic = "public"
	// PolicyDeny refuses every attempt and records it.
	PolicyDeny = "deny"
	// PolicyAllowlist allows only destinations matching Allow.
	PolicyAllowlist = "allowlist"
)

// Policy decides connection attempts.
type Policy struct {
	Name  string
	Allow []Pattern
}

// Pattern is one allowlist entry: `*`, a host name, `*.suffix`, an IP
// address or CIDR block, each with an optional `:port` (IPv6 in brackets
// when a port follows: `[::1]:8080`). Without a port it covers every port.
type Pattern struct {
	Text   string
	Any    bool         // `*`
	Host   string       // exact host name, lowercase
	Suffix string       // `*.example.com` → "example.com": subdomains only
	Prefix netip.Prefix // an IP (a /32 or /128) or a CIDR block
	Port   int          // 0: any port
}

// ParsePolicy builds a policy from its name and allowlist entries, with
// pVisor's rule that entries need the allowlist policy.
func ParsePolicy(name string, allow []string) (Policy, error) {
	switch name {
	case PolicyPublic, PolicyDeny, PolicyAllowlist:
	default:
		return Policy{}, fmt.Errorf("overlaynet policy %q: must be public, deny or allowlist", name)
	}
	if name != PolicyAllowlist && len(allow) > 0 {
		return Policy{}, fmt.Errorf("OverlayNet allow entries require --overlaynet-policy allowlist (policy is %s)", name)
	}
	p := Policy{Name: name}
	for _, a := range allow {
		pat, err := ParsePattern(a)
		if err != nil {
			return Policy{}, err
		}
		p.Allow = append(p.Allow, pat)
	}
	return p, nil
}

// ParsePattern reads one allowlist entry.
func ParsePattern(s string) (Pattern, error) {
	p := Pattern{Text: s}
	bad := func(why string) (Pattern, error) {
		return Pattern{}, fmt.Errorf("overlaynet allow entry %q: %s (use host, *.suffix, an IP or CIDR, each with an optional :port)", s, why)
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return bad("empty")
	}
	if strings.Contains(t, "://") || strings.Contains(t, "/") && !cidrLike(t) {
		return bad("a URL, not a host")
	}
	host := t
	// A port is split off unless the colons belong to a bare IPv6 address.
	if strings.HasPrefix(t, "[") {
		end := strings.Index(t, "]")
		if end < 0 {
			return bad("unclosed [")
		}
		host = t[1:end]
		rest := t[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return bad("text after ]")
			}
			port, err := parsePort(rest[1:])
			if err != nil {
				return bad(err.Error())
			}
			p.Port = port
		}
	} else if strings.Count(t, ":") == 1 {
		h, port, _ := strings.Cut(t, ":")
		n, err := parsePort(port)
		if err != nil {
			return bad(err.Error())
		}
		host, p.Port = h, n
	}
	switch {
	case host == "*":
		p.Any = true
	case strings.HasPrefix(host, "*."):
		suffix := normalizeHost(host[2:])
		if !validHostName(suffix) {
			return bad("not a host name after *.")
		}
		p.Suffix = suffix
	case strings.Contains(host, "*"):
		return bad("only a leading *. wildcard is supported")
	default:
		if pre, err := netip.ParsePrefix(host); err == nil {
			p.Prefix = pre.Masked()
		} else if ip, err := netip.ParseAddr(host); err == nil {
			p.Prefix = netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen())
		} else if h := normalizeHost(host); validHostName(h) {
			p.Host = h
		} else {
			return bad("not a host name, IP address or CIDR block")
		}
	}
	return p, nil
}

func cidrLike(s string) bool {
	h, _, _ := strings.Cut(strings.TrimPrefix(s, "["), "]")
	_, err := netip.ParsePrefix(h)
	if err == nil {
		return true
	}
	if i := strings.LastIndex(s, ":"); i > 0 {
		_, err = netip.ParsePrefix(s[:i])
	}
	return err == nil
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strings.TrimLeft(s, "0123456789") != "" {
		// A port that cannot be read must not widen the grant to every port.
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return n, nil
}

// normalizeHost lowercases a host name and drops one trailing dot.
func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// validHostName: letters, digits, '-', '_' and '.', at most 253 bytes, so a
// hostile request cannot put control characters into the journal.
func validHostName(h string) bool {
	if h == "" || len(h) > 253 || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// matchName reports whether pattern p covers the requested host name (or
// IP literal) and port, before any resolution.
func (p Pattern) matchName(host string, port int) bool {
	if p.Port != 0 && p.Port != port {
		return false
	}
	switch {
	case p.Any:
		return true
	case p.Host != "":
		return host == p.Host
	case p.Suffix != "":
		return strings.HasSuffix(host, "."+p.Suffix)
	}
	return false
}

// matchAddr reports whether an IP or CIDR pattern covers addr:port.
func (p Pattern) matchAddr(addr netip.Addr, port int) bool {
	if p.Port != 0 && p.Port != port {
		return false
	}
	return p.Prefix.IsValid() && p.Prefix.Contains(addr.Unmap())
}

// isPublicAddr reports whether addr is a public unicast address: not
// loopback, private, link-local, shared (100.64/10), multicast,
// documentation or otherwise reserved. A variable so that a test can treat
// a loopback address as public (all test traffic stays on loopback).
var isPublicAddr = func(addr netip.Addr) bool {
	a := addr.Unmap()
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
		"64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20", "fc00::/7",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()
