package prompt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pvisor/pvisor/replay/prompt"
)

// A prompt file with an argument, a built-in and a command run in the
// workspace.
func ExampleResolve() {
	dir, _ := os.MkdirTemp("", "prompt-example")
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "task.md")
	os.WriteFile(file, []byte("Fix {{ISSUE}} ({{AGENT}}): !`echo tests fail`\n"), 0o644)

	exec, _ := prompt.NewExecutor(prompt.ExecOptions{Env: []string{"PATH=/usr/bin:/bin"}})
	defer exec.Close()
	src := prompt.Source{File: file, Args: []prompt.Arg{{Key: "ISSUE", Value: "#7"}}}
	res, err := prompt.Resolve(context.Background(), src, prompt.BuiltIns{prompt.KeyAgent: "codex"}, dir, exec)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(res.Text)
	fmt.Println(res.Expansions[0].Command, res.Expansions[0].ExitCode)
	// Output:
	// Fix #7 (codex): tests fail
	// echo tests fail 0
}

// The watcher over a stream cut anywhere, with a clock the caller moves.
func ExampleWatcher() {
	now := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	w, _ := prompt.NewWatcher(prompt.Completion{Timeout: time.Minute}, func() time.Time { return now })
	w.WriteString("All done. <promise>COMP")
	fmt.Println(w.State())
	w.WriteString("LETE</promise>")
	fmt.Println(w.State(), w.Matched())
	now = now.Add(time.Minute)
	fmt.Println(w.State())
	// Output:
	// waiting
	// completing <promise>COMPLETE</promise>
	// done
}
