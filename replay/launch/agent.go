package launch

import (
	"io/fs"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/session"
)

// Agent is one agent as the engine, capture, resume and the CLI see it. Its
// folder (trajectory/<agent>/) builds it; trajectory/agents lists it. Only
// Format is required: an agent without a Launcher is replayed but not
// continued (--replay-only), one without Sessions is not captured by id.
type Agent struct {
	Format trajectory.Format
	// Aliases are other names the agent is asked for by ("pi-agent").
	Aliases []string
	// Launcher continues a replay natively.
	Launcher Launcher
	// Sessions locates, rewrites and captures the agent's sessions by id;
	// Resumable restores them for resume and fork (Sessions, or a store of
	// export documents for an agent whose sessions live in a database);
	// Rewriter moves session files to another cwd.
	Sessions  session.Store
	Resumable session.Store
	Rewriter  session.Rewriter
	// Database, for an agent whose CLI keeps its sessions in a database
	// rather than files, finds them there by id (in Resumable's Root);
	// Resumable then holds export documents, and Resume's Collect and
	// Export move sessions between the two. nil for file-backed agents.
	Database session.Database
	// Resume resumes or forks a restored session (needs Resumable).
	Resume *Resume
	// Native is how pVisor names the agent's native files in a result.
	Native NativeLayout
	// Doctor is the recording pvisor doctor continues with the installed
	// CLI: manifest.json (files: session, repo), the session and
	// repo.tar.gz at its root, or one such directory per release whose
	// format the others cannot continue, named for that release (the
	// doctor picks the installed release's major version). nil: the doctor
	// does not check the agent.
	Doctor fs.FS
}

// Name is the agent's canonical name.
func (a Agent) Name() string { return a.Format.Agent() }

// NativeLayout is how pVisor names one agent's native files: the label in
// format strings ("pi-agent/native-…") and the file names by stage.
type NativeLayout struct {
	Label string
	// Names are the file names, without extension, of the prefix as
	// recorded, as rebuilt and as continued.
	Names [3]string
	// Kind, when set, is the format string's kind of a file of the
	// trajectory's sub-format with extension ext ("" keeps ext).
	Kind func(subFormat, ext string) string
	// Export, when set, marks the agent's session export documents.
	Export *ExportDoc
}

// ExportDoc is an agent's session export document (OpenCode's): a native
// file with extension Ext is typed Format (no version), and the rebuilt one
// is named File and listed as the run's session export too.
type ExportDoc struct{ Ext, File, Format string }

// Sub is dir of an agent's embedded files (its doctor recording); dir
// must be embedded, which the agent's //go:embed line guarantees.
func Sub(files fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(files, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
