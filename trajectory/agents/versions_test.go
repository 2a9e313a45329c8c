package agents

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/tested"
)

var update = flag.Bool("update", false, "rewrite replay/tested/versions.txt from the agents' folders")

// gatheredMarker ends the hand-written part of replay/tested/versions.txt:
// what follows it is every agent's versions.txt, in registry order.
const gatheredMarker = "# --- gathered from trajectory/<agent>/versions.txt; edit those, not below ---\n"

const testedFile = "../../replay/tested/versions.txt"

// folder is the directory of the package that implements a's format: the
// agent's own folder.
func folder(t *testing.T, format any) string {
	t.Helper()
	typ := reflect.TypeOf(format)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	pkg := typ.PkgPath()
	if !strings.HasPrefix(pkg, "github.com/pvisor/pvisor/trajectory/") {
		t.Fatalf("format %v is not from an agent folder under trajectory/", typ)
	}
	return filepath.Join("..", path.Base(pkg))
}

// TestVersionsGathered holds replay/tested/versions.txt (which the binary
// embeds and the install script reads) to the agents' own versions.txt
// files, and each file's lines to its own agent: the tested releases are a
// fact of the agent's folder, gathered, never edited centrally.
func TestVersionsGathered(t *testing.T) {
	cur, err := os.ReadFile(testedFile)
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := bytes.Cut(cur, []byte(gatheredMarker))
	if !ok {
		t.Fatalf("%s has no line %q", testedFile, strings.TrimSpace(gatheredMarker))
	}
	var want bytes.Buffer
	want.Write(head)
	want.WriteString(gatheredMarker)
	for _, a := range registry {
		dir := folder(t, a.Format)
		own, err := os.ReadFile(filepath.Join(dir, "versions.txt"))
		if os.IsNotExist(err) {
			if a.Launcher != nil {
				t.Errorf("%s can be continued but %s has no versions.txt", a.Format.Agent(), dir)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		rs, ss, err := tested.ParseFile(string(own))
		if err != nil {
			t.Errorf("%s/versions.txt: %v", dir, err)
			continue
		}
		for _, r := range rs {
			if r.Agent != a.Format.Agent() {
				t.Errorf("%s/versions.txt lists %s, an agent other than its folder's %s", dir, r.Agent, a.Format.Agent())
			}
		}
		for _, s := range ss {
			if s.Agent != a.Format.Agent() {
				t.Errorf("%s/versions.txt has a successor line of %s, not %s", dir, s.Agent, a.Format.Agent())
			}
		}
		fmt.Fprintf(&want, "\n# %s (trajectory/%s/versions.txt)\n", a.Format.Agent(), filepath.Base(dir))
		for _, line := range strings.SplitAfter(string(own), "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				want.WriteString(line)
			}
		}
	}
	if *update {
		if err := os.WriteFile(testedFile, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(cur, want.Bytes()) {
		t.Errorf("%s is not what the agents' versions.txt files gather to: run go test ./trajectory/agents -run TestVersionsGathered -update", testedFile)
	}
}
