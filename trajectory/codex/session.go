package codex

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	store "github.com/pvisor/pvisor/trajectory/session"
)

// Sessions is Codex's session store: <CODEX_HOME or
// ~/.codex>/sessions/YYYY/MM/DD/rollout-<ts>-<id>.jsonl. The path does not
// depend on the cwd, so a copy keeps its date directories.
func Sessions() store.Store { return sessions{} }

type sessions struct{}

func (sessions) Agent() string { return AgentName }

func (sessions) Root(home string, getenv func(string) string) (string, error) {
	return store.RootFrom(home, ".codex", "CODEX_HOME", getenv)
}

var rolloutNameRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-(.+)\.jsonl$`)
})

// RolloutID is the session id a rollout file name ends in, if it is one.
func RolloutID(base string) (string, bool) {
	m := rolloutNameRe().FindStringSubmatch(base)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func (sessions) Locate(root, id string) (*store.Located, error) {
	main, err := store.FindOne(AgentName, root, id,
		filepath.Join("sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"),
		func(base string) bool { got, ok := RolloutID(base); return ok && got == id })
	if err != nil {
		return nil, err
	}
	return &store.Located{Agent: AgentName, ID: id, Root: root, Main: main}, nil
}

// Place keeps the rollout's date path: Codex finds a session by id in any
// date directory.
func (sessions) Place(rel, _ string) string { return rel }

// FileID is session_meta's id.
func (sessions) FileID(first []byte) string { return gjson.GetBytes(first, "payload.id").Str }

// NewID is a time-ordered UUID (v7), as Codex makes them.
func (sessions) NewID() string { return store.NewV7() }

// File is the rollout of id under the date of session_meta's timestamp.
func (sessions) File(first []byte, _, id string) (string, error) {
	t, err := time.Parse(time.RFC3339Nano, gjson.GetBytes(first, "payload.timestamp").Str)
	if err != nil {
		return "", fmt.Errorf("session_meta has no timestamp: %w", err)
	}
	t = t.UTC()
	return filepath.Join("sessions", t.Format("2006"), t.Format("01"), t.Format("02"),
		"rollout-"+t.Format("2006-01-02T15-04-05")+"-"+id+".jsonl"), nil
}

// Origin is session_meta's cwd and cli_version.
func (sessions) Origin(r io.Reader) (store.Origin, error) {
	var o store.Origin
	err := store.Scan(r, func(line []byte) bool {
		if gjson.GetBytes(line, "type").Str != "session_meta" {
			return false
		}
		res := gjson.GetManyBytes(line, "payload.cwd", "payload.cli_version")
		o.Cwd, o.CLIVersion = res[0].Str, res[1].Str
		return true
	})
	return o, err
}

// Describe says where the CLI keeps sessions and what Rewrite replaces.
func (sessions) Describe() string {
	return "<home>/.codex (else CODEX_HOME); rewrite: each \"cwd\" key and runtime_workspace_roots entry outside response_items (session_meta, turn_context, world_state, thread settings)"
}

// Rewrite replaces, in every record but the model-visible response_items,
// each value of a key "cwd" and each entry of a "runtime_workspace_roots"
// list that is exactly from: session_meta, turn_context, world_state's
// environments and event_msg's thread settings record the cwd there.
// Values that merely contain it (file:// URLs, the environment context
// text, tool arguments) stay as the model and the CLI saw them.
func (sessions) Rewrite(w io.Writer, r io.Reader, from, to string) (int, error) {
	if err := store.CheckRewrite(from, to); err != nil {
		return 0, err
	}
	return store.RewriteLines(w, r, to, func(_ int, line []byte) ([]store.Span, error) {
		doc := gjson.ParseBytes(line)
		if doc.Get("type").Str == "response_item" {
			return nil, nil
		}
		var spans []store.Span
		var err error
		var walk func(v gjson.Result)
		walk = func(v gjson.Result) {
			v.ForEach(func(k, val gjson.Result) bool {
				switch {
				case k.Str == "cwd" && k.Type == gjson.String:
					err = addSpan(&spans, val, from)
				case k.Str == "runtime_workspace_roots" && val.IsArray():
					val.ForEach(func(_, root gjson.Result) bool {
						err = addSpan(&spans, root, from)
						return err == nil
					})
				case val.IsObject() || val.IsArray():
					walk(val)
				}
				return err == nil
			})
		}
		walk(doc)
		return spans, err
	})
}

func addSpan(spans *[]store.Span, v gjson.Result, from string) error {
	s, ok, err := store.StringAt(v, from)
	if ok {
		*spans = append(*spans, s)
	}
	return err
}
