package copilot

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
)

// rgPath finds ripgrep: Copilot ships its own, the replay needs one on PATH
// (testdata/e2e/install-clis.sh installs it).
func (s *session) rgPath() (string, error) {
	if s.rgBin == "" {
		p, err := exec.LookPath("rg")
		if err != nil {
			return "", fmt.Errorf("copilot: grep and glob need ripgrep (rg) on PATH: %w", err)
		}
		s.rgBin = p
	}
	return s.rgBin, nil
}

// rg runs ripgrep in dir; exit 1 is "no match", not a failure.
func (s *session) rg(ctx context.Context, dir string, argv []string) (string, int, error) {
	bin, err := s.rgPath()
	if err != nil {
		return "", 0, err
	}
	res, err := s.r.Shell(ctx, run.ShellRequest{Argv: append([]string{bin}, argv...), Dir: dir})
	if err != nil && res.Pid == 0 {
		return "", 0, fmt.Errorf("copilot: rg: %w", err)
	}
	return strings.TrimRight(s.shown(res.Stdout.String()), "\n"), res.ExitCode, nil
}

// grep is ripgrep over path (default the cwd) with Copilot's options:
// output_mode files_with_matches (the default), content or count, -n, -i,
// -A/-B/-C, glob and type. Matches come sorted by path so the replay is
// deterministic (ripgrep's parallel walk is not).
func (s *session) grep(ctx context.Context, args gjson.Result) (trajectory.Fresh, error) {
	argv := []string{"--sort", "path", "--no-heading", "--color", "never"}
	switch args.Get("output_mode").Str {
	case "content":
		if args.Get("-n").Bool() {
			argv = append(argv, "-n")
		}
		for _, k := range []string{"-A", "-B", "-C"} {
			if v := args.Get(gjson.Escape(k)); v.Type == gjson.Number {
				argv = append(argv, k, v.Raw)
			}
		}
	case "count":
		argv = append(argv, "-c")
	default:
		argv = append(argv, "-l")
	}
	if args.Get("-i").Bool() {
		argv = append(argv, "-i")
	}
	if g := args.Get("glob").Str; g != "" {
		argv = append(argv, "--glob", g)
	}
	if t := args.Get("type").Str; t != "" {
		argv = append(argv, "--type", t)
	}
	// Without a path ripgrep searches the cwd and names files "./…", as
	// Copilot's results do; a path given is searched as given.
	path := "."
	if p := args.Get("path").Str; p != "" {
		path = s.real(p)
	}
	argv = append(argv, "-e", args.Get("pattern").Str, path)
	out, code, err := s.rg(ctx, s.ws, argv)
	if err != nil {
		return trajectory.Fresh{}, err
	}
	if code == 1 && out == "" {
		return ok("No matches found."), nil
	}
	return ok(out), nil
}

// glob lists the files matching pattern under path (default the cwd), as
// ripgrep's --files with the pattern as a glob: relative, "./"-prefixed.
func (s *session) glob(ctx context.Context, args gjson.Result) (trajectory.Fresh, error) {
	dir := s.ws
	if p := args.Get("path").Str; p != "" {
		dir = s.real(p)
	}
	out, code, err := s.rg(ctx, dir, []string{"--files", "--sort", "path", "--glob", args.Get("pattern").Str, "."})
	if err != nil {
		return trajectory.Fresh{}, err
	}
	if code == 1 && out == "" {
		return ok("No files matched the pattern."), nil
	}
	return ok(out), nil
}

func ok(text string) trajectory.Fresh { return trajectory.Fresh{Content: text} }
