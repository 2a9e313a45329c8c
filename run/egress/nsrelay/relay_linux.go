// Package nsrelay names where the tool init's side of the egress proxy
// listens: 127.0.0.1:Port inside the tool's network namespace, where it
// hands every connection to the proxy outside. The relay itself is in
// package run/toolinit, which the init's start cost keeps free of package
// net and of the proxy's HTTP packages.
package nsrelay

import "github.com/pvisor/pvisor/run/toolinit"

// Port is where a tool's init listens, on 127.0.0.1 inside the tool's
// network namespace, for the tools' proxy requests.
const Port = toolinit.RelayPort

// NamespaceAddr is Port as an address.
const NamespaceAddr = toolinit.RelayAddr

// ProxyURL is the proxy as the tools' environment names it.
const ProxyURL = toolinit.ProxyURL
