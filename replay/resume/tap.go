package resume

import (
	"bytes"
	"sync"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/prompt"
)

// maxAssistantText bounds the assistant text a run keeps for its
// structured output: the newest text wins.
const maxAssistantText = 4 << 20

// textTap reads a CLI's JSON event stream as it is written: the assistant
// text goes to the completion watcher and is kept for the structured
// output; any other line is activity, which restarts the completion
// timeout.
type textTap struct {
	text    func(line []byte) string
	watch   *prompt.Watcher
	mu      sync.Mutex
	partial []byte
	skip    bool // inside a line longer than launch.MaxLine
	kept    []byte
}

func (t *textTap) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !t.skip && len(t.partial)+len(p) <= launch.MaxLine {
				t.partial = append(t.partial, p...)
			} else {
				t.skip, t.partial = true, nil
			}
			break
		}
		if !t.skip {
			t.line(append(t.partial, p[:i]...))
		}
		t.partial, t.skip, p = t.partial[:0], false, p[i+1:]
	}
	return n, nil
}

func (t *textTap) line(l []byte) {
	s := t.text(l)
	if s == "" {
		t.watch.Activity()
		return
	}
	_, _ = t.watch.WriteString(s + "\n")
	t.kept = append(t.kept, s...)
	t.kept = append(t.kept, '\n')
	if over := len(t.kept) - maxAssistantText; over > 0 {
		t.kept = append(t.kept[:0], t.kept[over:]...)
	}
}

// Text is the assistant text seen so far.
func (t *textTap) Text() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.kept)
}
