package egress

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParsePattern(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Pattern
	}{
		{"*", Pattern{Any: true}},
		{"api.OpenAI.com", Pattern{Host: "api.openai.com"}},
		{"api.openai.com:443", Pattern{Host: "api.openai.com", Port: 443}},
		{"*.github.com", Pattern{Suffix: "github.com"}},
		{"127.0.0.1:8080", Pattern{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: 8080}},
		{"10.0.0.0/8", Pattern{Prefix: netip.MustParsePrefix("10.0.0.0/8")}},
		{"[::1]:80", Pattern{Prefix: netip.MustParsePrefix("::1/128"), Port: 80}},
		{"::1", Pattern{Prefix: netip.MustParsePrefix("::1/128")}},
	} {
		got, err := ParsePattern(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		tc.want.Text = tc.in
		if got != tc.want {
			t.Errorf("%q: got %+v, want %+v", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "https://x.com", "x.com:https", "x.com:99999", "a*.com", "x.com/path", "bad host", "x.com:+1"} {
		if _, err := ParsePattern(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	if _, err := ParsePolicy(PolicyPublic, []string{"x.com"}); err == nil || !strings.Contains(err.Error(), "require --overlaynet-policy allowlist") {
		t.Errorf("allow entries with public: %v", err)
	}
	if _, err := ParsePolicy("open", nil); err == nil {
		t.Error("unknown policy accepted")
	}
}

func TestDecide(t *testing.T) {
	pol, err := ParsePolicy(PolicyAllowlist, []string{"127.0.0.1:8080", "*.example.com:443", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	p := New(pol, Options{})
	defer p.Close()
	for _, tc := range []struct {
		host    string
		port    int
		allowed bool
		reason  string
	}{
		{"127.0.0.1", 8080, true, "allowlist"},
		{"127.0.0.1", 8081, false, "not-allowlisted"},
		{"127.0.0.2", 8080, false, "not-allowlisted"},
		{"example.com", 443, false, "not-allowlisted"}, // *.suffix covers subdomains only
		{"a.example.com", 80, false, "not-allowlisted"},
		// A name rule needs a public address: localhost is the host's own.
		{"localhost", 80, false, "private-address"},
	} {
		_, d := p.decide(tc.host, tc.port)
		if d.allowed != tc.allowed || d.reason != tc.reason {
			t.Errorf("%s:%d: got %+v, want allowed=%v reason=%s", tc.host, tc.port, d, tc.allowed, tc.reason)
		}
	}
	pub := New(Policy{Name: PolicyPublic}, Options{})
	defer pub.Close()
	for _, h := range []string{"127.0.0.1", "10.1.2.3", "169.254.169.254", "192.168.1.1", "100.64.0.1", "::1", "fe80::1"} {
		if _, d := pub.decide(h, 80); d.allowed || d.reason != "private-address" {
			t.Errorf("public %s: %+v", h, d)
		}
	}
	if ap, d := pub.decide("8.8.8.8", 53); !d.allowed || ap.String() != "8.8.8.8:53" {
		t.Errorf("public 8.8.8.8: %+v %v", d, ap)
	}
	deny := New(Policy{Name: PolicyDeny}, Options{})
	defer deny.Close()
	if _, d := deny.decide("8.8.8.8", 53); d.allowed || d.reason != "policy-deny" {
		t.Errorf("deny: %+v", d)
	}
}

// serveProxy starts p on a loopback listener and returns a client that
// uses it.
func serveProxy(t *testing.T, p *Proxy) *http.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.ServeListener(l)
	t.Cleanup(func() { l.Close(); p.Close() })
	u, _ := url.Parse("http://" + l.Addr().String())
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}, Timeout: 10 * time.Second}
}

// listenOn starts a test HTTP server on addr (another loopback address
// than 127.0.0.1 when asked).
func listenOn(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	s := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func hello(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	fmt.Fprint(w, "hello from "+r.Host)
}

func TestProxyAllowlistForwardsAndJournals(t *testing.T) {
	allowed := listenOn(t, "127.0.0.1:0", http.HandlerFunc(hello))
	other := listenOn(t, "127.0.0.2:0", http.HandlerFunc(hello))
	aHost := strings.TrimPrefix(allowed.URL, "http://")
	pol, err := ParsePolicy(PolicyAllowlist, []string{aHost})
	if err != nil {
		t.Fatal(err)
	}
	p := New(pol, Options{})
	p.SetCall(Call{Step: 2, CallID: "call_1", Tool: "Bash"})
	client := serveProxy(t, p)

	req, _ := http.NewRequest("POST", allowed.URL+"/secret-path?token=abc", strings.NewReader("request-body"))
	req.Header.Set("Authorization", "Bearer sk-very-secret")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "hello from") {
		t.Fatalf("allowed: %d %q", resp.StatusCode, body)
	}
	resp, err = client.Get(other.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "not-allowlisted") {
		t.Fatalf("denied: %d %q", resp.StatusCode, body)
	}
	p.Close()
	j := p.Journal()
	if len(j) != 2 {
		t.Fatalf("journal: %+v", j)
	}
	a, d := j[0], j[1]
	if !a.Allowed || a.Kind != "http" || a.Method != "POST" || a.Reason != "allowlist" || a.Rule != aHost || a.BytesUp == 0 || a.BytesDown == 0 {
		t.Errorf("allowed entry: %+v", a)
	}
	if a.Call == nil || a.Call.CallID != "call_1" || a.Call.Step != 2 {
		t.Errorf("call: %+v", a.Call)
	}
	if d.Allowed || d.Host != "127.0.0.2" || d.Reason != "not-allowlisted" || d.BytesUp != 0 {
		t.Errorf("denied entry: %+v", d)
	}
	raw, _ := json.Marshal(j)
	for _, leak := range []string{"sk-very-secret", "Bearer", "secret-path", "token=abc", "request-body"} {
		if strings.Contains(string(raw), leak) {
			t.Errorf("journal holds %q: %s", leak, raw)
		}
	}
	s := p.Summary()
	if s.Attempts != 2 || s.Allowed != 1 || s.Denied != 1 || len(s.Hosts) != 2 {
		t.Errorf("summary: %+v", s)
	}
}

func TestProxyConnectTunnel(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	pol, _ := ParsePolicy(PolicyAllowlist, []string{"127.0.0.1"})
	p := New(pol, Options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go p.ServeListener(l)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// The head and the first tunnelled bytes in one write, as a TLS client
	// may send them.
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic c2VjcmV0\r\n\r\nping", echo.Addr(), echo.Addr())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo: %q %v", got, err)
	}
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, br)
	c.Close()
	p.Close()
	j := p.Journal()
	if len(j) != 1 || !j[0].Allowed || j[0].Kind != "connect" || j[0].BytesUp != 4 || j[0].BytesDown != 4 {
		t.Fatalf("journal: %+v", j)
	}
	if raw, _ := json.Marshal(j); strings.Contains(string(raw), "c2VjcmV0") {
		t.Errorf("journal holds the proxy credentials: %s", raw)
	}
}

func TestProxyPublicAndDeny(t *testing.T) {
	srv := listenOn(t, "127.0.0.3:0", http.HandlerFunc(hello))
	// Only in this test: 127.0.0.3 stands in for a public address, since
	// every test connection stays on loopback.
	old := isPublicAddr
	isPublicAddr = func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.3") }
	defer func() { isPublicAddr = old }()

	pub := New(Policy{Name: PolicyPublic}, Options{})
	client := serveProxy(t, pub)
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("public: %d", resp.StatusCode)
	}
	resp, err = client.Get("http://127.0.0.1:9/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("public to a private address: %d", resp.StatusCode)
	}
	pub.Close()
	if s := pub.Summary(); s.Allowed != 1 || s.Denied != 1 {
		t.Errorf("public summary: %+v", s)
	}

	deny := New(Policy{Name: PolicyDeny}, Options{MaxJournal: 2})
	client = serveProxy(t, deny)
	for i := 0; i < 3; i++ {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("deny: %d", resp.StatusCode)
		}
	}
	deny.Close()
	if j, s := deny.Journal(), deny.Summary(); len(j) != 2 || s.Denied != 3 || s.JournalDropped != 1 || j[0].Reason != "policy-deny" {
		t.Errorf("deny: journal %+v summary %+v", j, s)
	}
}

func TestServeListenerRefusesNonLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip(err)
	}
	defer l.Close()
	p := New(Policy{Name: PolicyDeny}, Options{})
	defer p.Close()
	if err := p.ServeListener(l); err == nil || !strings.Contains(err.Error(), "only a loopback") {
		t.Fatalf("got %v", err)
	}
}

// FuzzParsePattern: allowlist entries come from user config; no entry may
// panic, and an accepted one must not cover more than it says: an entry
// naming a port never matches another port.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"*", "a.com:443", "*.b.org", "10.0.0.0/8:22", "[::1]:80", "::1", "x:0", "[", "*.:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePattern(s)
		if err != nil {
			return
		}
		if p.Port != 0 && (p.matchName("a.com", p.Port%65535+1) || p.matchAddr(netip.MustParseAddr("10.0.0.1"), p.Port%65535+1)) {
			t.Fatalf("%q (%+v) matches a port it does not name", s, p)
		}
		if p.Host != "" && !validHostName(p.Host) || p.Suffix != "" && !validHostName(p.Suffix) {
			t.Fatalf("%q: invalid host kept: %+v", s, p)
		}
	})
}
