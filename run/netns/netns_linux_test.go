package netns

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func newNS(t *testing.T) *NS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a network namespace needs root")
	}
	ns, err := New()
	if err != nil {
		t.Skipf("network namespaces are not available here: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// A listener made in the namespace is reached by a process started in it,
// and not from the host's loopback at the same port; the process sees lo
// as its only interface, and the test's threads stay in their namespace.
func TestListenerAndProcessInside(t *testing.T) {
	ns := newNS(t)
	before, _ := os.Readlink("/proc/self/ns/net")
	l, err := ns.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, "hello from inside")
			c.Close()
		}
	}()

	if c, err := net.DialTimeout("tcp4", l.Addr().String(), time.Second); err == nil {
		// Something of the host's may hold the port; it must not be ours.
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if strings.Contains(line, "hello from inside") {
			t.Fatal("the namespace's listener is reachable from the host's loopback")
		}
	}

	cmd := exec.Command("bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3; cat /proc/net/dev | tail -n +3 | cut -d: -f1", port))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := ns.Do(cmd.Start); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	got := strings.Fields(out.String())
	if strings.Join(got, " ") != "hello from inside lo" {
		t.Errorf("the process inside printed %q, want the greeting and lo alone", out.String())
	}
	for i := 0; i < 20; i++ { // other threads, and this one after Do
		if now, _ := os.Readlink("/proc/thread-self/ns/net"); now != before {
			t.Fatalf("a thread of the test was left in %s (was %s)", now, before)
		}
	}
}
