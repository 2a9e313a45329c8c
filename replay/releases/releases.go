// Package releases is the release watch: for every package in
// replay/tested/versions.txt (and the packages its agents moved to) it asks
// the package's registry for its newest release, and says how far the
// tested releases are behind and whether a package stopped while its agent
// goes on elsewhere. It only informs: nothing here fails a build.
package releases

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pvisor/pvisor/replay/tested"
)

// Info is what a registry says of one package.
type Info struct {
	Latest     string    // the release the registry installs by default
	Versions   []string  // every published release, any order
	Deprecated string    // the registry's deprecation notice of Latest, if any
	LatestAt   time.Time // when Latest was published (zero when the registry does not say)
}

// Registry looks packages up; Lookup's errors are shown in the row.
type Registry interface {
	Lookup(ctx context.Context, registry, pkg string) (*Info, error)
}

// Row is one package of the table.
type Row struct {
	Agent          string `json:"agent"`
	Package        string `json:"package"`
	Registry       string `json:"registry"`
	TestedNewest   string `json:"tested_newest,omitempty"` // "" for a successor with no tested line
	RegistryNewest string `json:"registry_newest,omitempty"`
	// Behind counts the releases newer than TestedNewest (pre-releases
	// left out); -1 when unknown.
	Behind int    `json:"behind"`
	Notice string `json:"notice,omitempty"`
	Error  string `json:"error,omitempty"`
}

// staleAfter: a package with no release for this long while its
// successor publishes has stopped.
const staleAfter = 60 * 24 * time.Hour

// Check builds the table for releases and successors, in file order.
func Check(ctx context.Context, reg Registry, rels []tested.Release, succ []tested.Successor, now time.Time) []Row {
	type key struct{ agent, pkg string }
	var order []key
	rows := map[key]*Row{}
	add := func(agent, pkg, registry string) *Row {
		k := key{agent, pkg}
		if r, ok := rows[k]; ok {
			return r
		}
		rows[k] = &Row{Agent: agent, Package: pkg, Registry: registry, Behind: -1}
		order = append(order, k)
		return rows[k]
	}
	for _, rel := range rels {
		r := add(rel.Agent, rel.Package, rel.Registry)
		if r.TestedNewest == "" || tested.MustSemver(rel.Version).Compare(tested.MustSemver(r.TestedNewest)) > 0 {
			r.TestedNewest = rel.Version
		}
	}
	for _, s := range succ {
		reg := tested.RegistryNPM
		if r, ok := rows[key{s.Agent, s.From}]; ok {
			reg = r.Registry
		}
		add(s.Agent, s.From, reg)
		add(s.Agent, s.To, reg)
	}
	infos := map[key]*Info{}
	for _, k := range order {
		r := rows[k]
		info, err := reg.Lookup(ctx, r.Registry, r.Package)
		if err != nil {
			r.Error = err.Error()
			continue
		}
		infos[k] = info
		r.RegistryNewest = info.Latest
		if r.TestedNewest != "" {
			r.Behind = newerThan(info.Versions, r.TestedNewest)
		}
		if info.Deprecated != "" {
			r.Notice = "deprecated: " + info.Deprecated
		}
	}
	for _, s := range succ {
		from, to := rows[key{s.Agent, s.From}], rows[key{s.Agent, s.To}]
		fi, ti := infos[key{s.Agent, s.From}], infos[key{s.Agent, s.To}]
		if fi == nil || ti == nil {
			continue
		}
		moved := fmt.Sprintf("moved to %s (newest %s)", s.To, ti.Latest)
		if !fi.LatestAt.IsZero() && now.Sub(fi.LatestAt) > staleAfter && ti.LatestAt.After(fi.LatestAt) {
			moved = fmt.Sprintf("stopped at %s (%s); %s", fi.Latest, fi.LatestAt.Format("2006-01-02"), moved)
		}
		from.Notice = joinNotice(from.Notice, moved)
		if to.TestedNewest == "" {
			to.Notice = joinNotice(to.Notice, "successor of "+s.From+", no release of it is tested")
		}
	}
	out := make([]Row, 0, len(order))
	for _, k := range order {
		out = append(out, *rows[k])
	}
	return out
}

func joinNotice(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// newerThan counts the releases above v, pre-releases and unparsable
// versions left out.
func newerThan(versions []string, v string) int {
	base := tested.MustSemver(v)
	n := 0
	for _, s := range versions {
		if strings.Contains(s, "-") {
			continue
		}
		if sv, err := tested.ParseSemver(s); err == nil && sv.Compare(base) > 0 {
			n++
		}
	}
	return n
}

// Clients asks the registries with their own clients (npm view, pip
// index versions), as a user would; each call is bounded.
type Clients struct {
	// Timeout bounds one lookup; 0 means a minute.
	Timeout time.Duration
}

func (c Clients) Lookup(ctx context.Context, registry, pkg string) (*Info, error) {
	t := c.Timeout
	if t == 0 {
		t = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	switch registry {
	case tested.RegistryNPM:
		out, err := run(ctx, "npm", "view", "--json", "--no-update-notifier", pkg, "dist-tags", "versions", "time", "deprecated")
		if err != nil {
			return nil, err
		}
		return ParseNPM(out)
	case tested.RegistryPyPI:
		// Every release, not only those this machine's Python could install
		// (openhands-sdk needs 3.12).
		out, err := run(ctx, "python3", "-m", "pip", "index", "versions", "--disable-pip-version-check", "--ignore-requires-python", pkg)
		if err != nil {
			return nil, err
		}
		return ParsePipIndex(out)
	}
	return nil, fmt.Errorf("no client for the %s registry", registry)
}

func run(ctx context.Context, argv ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok { // the last line says why (pip warns first)
			lines := strings.Split(strings.TrimSpace(string(ee.Stderr)), "\n")
			msg = lines[len(lines)-1]
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: no answer in time", strings.Join(argv[:2], " "))
		}
		return nil, fmt.Errorf("%s: %v %s", strings.Join(argv[:2], " "), err, msg)
	}
	return out, nil
}

// ParseNPM reads `npm view --json PKG dist-tags versions time deprecated`.
func ParseNPM(out []byte) (*Info, error) {
	var v struct {
		DistTags   map[string]string `json:"dist-tags"`
		Versions   json.RawMessage   `json:"versions"`
		Time       map[string]string `json:"time"`
		Deprecated string            `json:"deprecated"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("npm view: %v", err)
	}
	info := &Info{Latest: v.DistTags["latest"], Deprecated: v.Deprecated}
	if err := json.Unmarshal(v.Versions, &info.Versions); err != nil {
		var one string // a package with one release prints a string
		if json.Unmarshal(v.Versions, &one) == nil {
			info.Versions = []string{one}
		}
	}
	if at, err := time.Parse(time.RFC3339, v.Time[info.Latest]); err == nil {
		info.LatestAt = at
	}
	if info.Latest == "" {
		return nil, fmt.Errorf("npm view: no latest release")
	}
	return info, nil
}

// ParsePipIndex reads `pip index versions PKG`: "NAME (LATEST)" and
// "Available versions: a, b, …".
func ParsePipIndex(out []byte) (*Info, error) {
	info := &Info{}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "Available versions:"); ok {
			for _, v := range strings.Split(rest, ",") {
				if v = strings.TrimSpace(v); v != "" {
					info.Versions = append(info.Versions, v)
				}
			}
		} else if i, j := strings.LastIndexByte(line, '('), strings.LastIndexByte(line, ')'); info.Latest == "" && i > 0 && j > i {
			info.Latest = line[i+1 : j]
		}
	}
	if info.Latest == "" && len(info.Versions) > 0 {
		info.Latest = info.Versions[0]
	}
	if info.Latest == "" {
		return nil, fmt.Errorf("pip index versions: no release listed")
	}
	slices.Sort(info.Versions)
	return info, nil
}

// Print writes rows as an aligned table.
func Print(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tPACKAGE\tTESTED NEWEST\tREGISTRY NEWEST\tBEHIND\tNOTICE")
	for _, r := range rows {
		behind := "?"
		if r.Behind >= 0 {
			behind = fmt.Sprint(r.Behind)
		}
		newest, notice := r.RegistryNewest, r.Notice
		if r.Error != "" {
			newest, notice = "?", joinNotice(notice, "lookup failed: "+r.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Agent, r.Package, orDash(r.TestedNewest), newest, behind, notice)
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
