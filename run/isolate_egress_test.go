package run

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/run/egress"
)

// TestIsolationEgress: a tool in its own network namespace reaches an
// allowlisted loopback server only through the proxy, is refused another,
// cannot go around the proxy, and every attempt is journaled for the call
// current when the tool started.
func TestIsolationEgress(t *testing.T) {
	requireIsolation(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello-egress") })
	listen := func(addr string) string {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("listen %s: %v", addr, err)
		}
		s := &httptest.Server{Listener: l, Config: &http.Server{Handler: hello}}
		s.Start()
		t.Cleanup(s.Close)
		return l.Addr().String()
	}
	allowed, other := listen("127.0.0.1:0"), listen("127.0.0.2:0")
	tlsSrv := httptest.NewUnstartedServer(hello)
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	secure := tlsSrv.Listener.Addr().String()
	pol, err := egress.ParsePolicy(egress.PolicyAllowlist, []string{allowed, secure})
	if err != nil {
		t.Fatal(err)
	}
	proxy := egress.New(pol, egress.Options{})
	defer proxy.Close()
	proxy.SetCall(egress.Call{Step: 1, CallID: "c1", Tool: "shell"})
	r := newTestRunner(t, Options{Env: []string{"PATH=/usr/bin:/bin"}, Isolation: Isolation{Enabled: true, Egress: proxy}})
	script := fmt.Sprintf(`echo "proxy=$HTTP_PROXY"; curl -s -m 5 http://%s/a; echo; curl -s -m 5 -o /dev/null -w '%%{http_code}\n' http://%s/b; curl -s -m 3 --noproxy '*' http://%s/c || echo bypass-failed; curl -sk -m 5 https://%s/d; echo; grep -c : /proc/net/dev`, allowed, other, allowed, secure)
	res, err := r.Shell(context.Background(), ShellRequest{Command: script, Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	out := res.Stdout.String()
	want := "proxy=" + egress.ProxyURL + "\nhello-egress\n403\nbypass-failed\nhello-egress\n1\n"
	if out != want {
		t.Fatalf("tool output %q (stderr %q), want %q", out, res.Stderr.String(), want)
	}
	proxy.Close()
	j := proxy.Journal()
	if len(j) != 3 {
		t.Fatalf("journal %+v", j)
	}
	if c := j[2]; !c.Allowed || c.Kind != "connect" || c.BytesUp == 0 || c.BytesDown == 0 {
		t.Errorf("HTTPS tunnel entry %+v", c)
	}
	if !j[0].Allowed || j[0].Host+":"+fmt.Sprint(j[0].Port) != allowed || j[0].BytesDown == 0 || j[0].Call == nil || j[0].Call.CallID != "c1" {
		t.Errorf("allowed entry %+v", j[0])
	}
	if j[1].Allowed || !strings.HasPrefix(other, j[1].Host+":") || j[1].Reason != "not-allowlisted" {
		t.Errorf("denied entry %+v", j[1])
	}
}

func TestEgressNeedsIsolation(t *testing.T) {
	p := egress.New(egress.Policy{Name: egress.PolicyDeny}, egress.Options{})
	defer p.Close()
	if _, err := NewRunner(Options{Isolation: Isolation{Egress: p}}); err == nil {
		t.Fatal("an egress proxy without isolation was accepted: tools would share the host network")
	}
}

// TestIsolationEgressAttribution: a background process left by one call
// that connects while the next call runs is still the first call's.
func TestIsolationEgressAttribution(t *testing.T) {
	requireIsolation(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	proxy := egress.New(egress.Policy{Name: egress.PolicyDeny}, egress.Options{})
	defer proxy.Close()
	r := newTestRunner(t, Options{Env: []string{"PATH=/usr/bin:/bin"}, Isolation: Isolation{Enabled: true, Egress: proxy}})
	proxy.SetCall(egress.Call{Step: 1, CallID: "first"})
	if _, err := r.Shell(context.Background(), ShellRequest{Command: "(sleep 0.5; curl -s -m 5 http://198.51.100.7/x) >/dev/null 2>&1 &", Dir: "/"}); err != nil {
		t.Fatal(err)
	}
	proxy.SetCall(egress.Call{Step: 2, CallID: "second"})
	if _, err := r.Shell(context.Background(), ShellRequest{Command: "sleep 1.5; curl -s -m 5 http://198.51.100.8/y >/dev/null", Dir: "/"}); err != nil {
		t.Fatal(err)
	}
	proxy.Close()
	got := map[string]string{}
	for _, e := range proxy.Journal() {
		if e.Call != nil {
			got[e.Host] = e.Call.CallID
		}
	}
	if got["198.51.100.7"] != "first" || got["198.51.100.8"] != "second" {
		t.Errorf("attribution %v, want the background curl on the first call", got)
	}
}
