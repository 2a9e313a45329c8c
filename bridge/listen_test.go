package bridge

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pvisor/pvisor/run/netns"
)

// The bridge serves its own address inside a loopback-only network
// namespace too: a client there gets the same checked answers, and Close
// ends that listener with the first. Another address is refused.
func TestServeAlsoInANamespace(t *testing.T) {
	_, root := newFake(t)
	s := startBridge(t, Options{Upstream: newUpstream(t, Chat, root)})
	other, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := s.ServeAlso(other); err == nil || !strings.Contains(err.Error(), "must be on "+s.Addr()) {
		t.Errorf("a listener on another address: %v", err)
	}

	if os.Geteuid() != 0 {
		t.Skip("a network namespace needs root")
	}
	ns, err := netns.New()
	if err != nil {
		t.Skipf("network namespaces are not available here: %v", err)
	}
	defer ns.Close()
	l, err := ns.Listen(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingListener{Listener: l}
	if err := s.ServeAlso(counted); err != nil {
		t.Fatal(err)
	}
	// The connection is made on a thread inside the namespace (a dial to an
	// IP literal connects on the calling goroutine); the client then uses it.
	var conn net.Conn
	if err := ns.Do(func() (err error) { conn, err = net.Dial("tcp4", s.Addr()); return err }); err != nil {
		t.Fatalf("dial from inside the namespace: %v", err)
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true,
		DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}
	res, err := (&http.Client{Transport: tr}).Do(newReq(t, s, http.MethodPost, pathFor(Chat), requestBody(Chat, false)))
	if err != nil {
		t.Fatalf("from inside the namespace: %v", err)
	}
	res.Body.Close()
	if n := counted.n.Load(); n != 1 {
		t.Errorf("the namespace's listener accepted %d connections, want 1", n)
	}
	if res.StatusCode != http.StatusOK {
		t.Errorf("from inside the namespace: %s", res.Status)
	}
	s.Close() // waits for the handler, which records the exchange as it ends
	if n := len(s.Records()); n != 1 {
		t.Errorf("%d records, want the one request", n)
	}
	if _, err := l.Accept(); err == nil {
		t.Error("the namespace's listener is still open after Close")
	}
}

type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}
