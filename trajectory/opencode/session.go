package opencode

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"

	"github.com/tidwall/gjson"

	store "github.com/pvisor/pvisor/trajectory/session"
)

// Exports knows the cwd an `opencode export` document records. OpenCode
// keeps its sessions in SQLite, so they are located and restored through
// its CLI (export/import), not as files: this is only the rewriter.
func Exports() store.Rewriter { return exports{} }

type exports struct{}

func (exports) Agent() string { return AgentName }

// Origin is info.directory and the OpenCode version that wrote the export.
func (exports) Origin(r io.Reader) (store.Origin, error) {
	doc, err := io.ReadAll(io.LimitReader(r, store.MaxDocumentBytes))
	if err != nil {
		return store.Origin{}, err
	}
	res := gjson.GetManyBytes(bytes.TrimSpace(doc), "info.directory", "info.version")
	return store.Origin{Cwd: res[0].Str, CLIVersion: res[1].Str}, nil
}

// Describe says where the CLI keeps sessions and what Rewrite replaces.
func (exports) Describe() string {
	return "SQLite under <home>/.local/share/opencode (else XDG_DATA_HOME), read by locate and show; rewrite, of an 'opencode export' document: info.directory and each message's path.cwd and path.root"
}

// Rewrite replaces info.directory and each message's path.cwd and
// path.root that are exactly from; tool inputs and outputs keep theirs.
func (exports) Rewrite(w io.Writer, r io.Reader, from, to string) (int, error) {
	if err := store.CheckRewrite(from, to); err != nil {
		return 0, err
	}
	return store.RewriteDocument(w, r, to, func(doc []byte) ([]store.Span, error) {
		var spans []store.Span
		add := func(v gjson.Result) error {
			s, ok, err := store.StringAt(v, from)
			if ok {
				spans = append(spans, s)
			}
			return err
		}
		if err := add(gjson.GetBytes(doc, "info.directory")); err != nil {
			return nil, err
		}
		var err error
		gjson.GetBytes(doc, "messages").ForEach(func(_, m gjson.Result) bool {
			for _, p := range []string{"info.path.cwd", "info.path.root"} {
				if err = add(m.Get(p)); err != nil {
					return false
				}
			}
			return true
		})
		return spans, err
	})
}

// ExportDir is where pvisor keeps export documents inside OpenCode's data
// directory: the files a restore imports and a capture after a run stores.
const ExportDir = "pvisor-exports"

// Bundled is OpenCode's sessions as pvisor moves them: one export document
// per session, <data dir>/pvisor-exports/<id>.json, which the CLI imports
// into (and exports from) its database. The data directory is
// <home>/.local/share/opencode, or $XDG_DATA_HOME/opencode.
func Bundled() store.Store { return bundled{} }

type bundled struct{ exports }

func (bundled) Root(home string, getenv func(string) string) (string, error) {
	data := filepath.Join(home, ".local", "share")
	if home == "" {
		if data = getenv("XDG_DATA_HOME"); data == "" {
			h := getenv("HOME")
			if h == "" {
				return "", errors.New("neither XDG_DATA_HOME nor HOME is set: pass --home")
			}
			data = filepath.Join(h, ".local", "share")
		}
	}
	return filepath.Abs(filepath.Join(data, "opencode"))
}

func (bundled) Locate(root, id string) (*store.Located, error) {
	main, err := store.FindOne(AgentName, root, id, filepath.Join(ExportDir, "*.json"),
		func(base string) bool { return base == id+".json" })
	if err != nil {
		return nil, err
	}
	return &store.Located{Agent: AgentName, ID: id, Root: root, Main: main}, nil
}

// Place keeps the document where it is: the session's directory is inside
// it, and opencode import takes it from there.
func (bundled) Place(rel, _ string) string { return rel }

// DatabaseFiles are OpenCode's SQLite database and its journal files in
// the data directory.
var DatabaseFiles = []string{"opencode.db", "opencode.db-wal", "opencode.db-shm"}
