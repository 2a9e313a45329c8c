package store

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/opencode/store/storetest"
)

// testdata/<version>/ holds what the real CLI of that version wrote:
// import.db.gz, the database after `opencode import` of the e2e recording
// (testdata/e2e/sessions/opencode@<version>/export.json) run in the
// recording's repository, and export.json, what `opencode export` then
// printed (testdata/README.md says how they were made).
var versions = []string{"1.18.20", "1.18.33"}

func recording(t *testing.T, v string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "e2e", "sessions", "opencode@"+v, "export.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// imported is a private copy of the database the real import filled.
func imported(t *testing.T, v string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "opencode.db")
	storetest.DB(t, v, p)
	return p
}

// template is the imported database emptied: the real CLI's schema and
// migration records, no session.
func template(t *testing.T, v string) string {
	t.Helper()
	p := imported(t, v)
	d, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Clear(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExportIsTheCLIsBytes(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", v, "export.json"))
			if err != nil {
				t.Fatal(err)
			}
			d, err := OpenReadOnly(imported(t, v))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			got, ok, err := d.Export(gjson.GetBytes(want, "info.id").Str)
			if err != nil || !ok {
				t.Fatalf("Export: ok=%v err=%v", ok, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("export differs from the CLI's (%d vs %d bytes)\n%s", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

// TestWriteIsTheImportsRows writes each recording into the emptied
// database and compares every row with the real import's, table by table.
// The CLI takes the clock for message.time_updated and both part times;
// message and part data hold the same JSON, but the CLI writes the keys
// in the order of its schema classes and pvisor in the export's order
// (OpenCode reads data with JSON.parse, so the order has no effect, and
// the export after a continuation prints whichever order is stored).
func TestWriteIsTheImportsRows(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			real, err := OpenReadOnly(imported(t, v))
			if err != nil {
				t.Fatal(err)
			}
			defer real.Close()
			doc := recording(t, v)
			sid := gjson.GetBytes(doc, "info.id").Str
			var place Place
			var path string
			if err := real.db.QueryRow(`SELECT project_id, directory, path FROM session WHERE id = ?`, sid).Scan(&place.ProjectID, &place.Directory, &path); err != nil {
				t.Fatal(err)
			}
			place.Worktree = place.Directory
			if path != "" {
				t.Fatalf("fixture imported outside the repository's top level (path %q)", path)
			}
			ours, err := Open(template(t, v))
			if err != nil {
				t.Fatal(err)
			}
			defer ours.Close()
			const now = 1234567890123
			if got, err := ours.Write(doc, place, now); err != nil || got != sid {
				t.Fatalf("Write = %q, %v", got, err)
			}
			if _, err := ours.Write(doc, place, now); err == nil {
				t.Errorf("writing the session twice succeeded")
			}
			compareTable(t, "session", rows(t, real.db, `SELECT * FROM session ORDER BY rowid`), rows(t, ours.db, `SELECT * FROM session ORDER BY rowid`), nil, nil)
			compareTable(t, "message", rows(t, real.db, `SELECT * FROM message ORDER BY rowid`), rows(t, ours.db, `SELECT * FROM message ORDER BY rowid`),
				map[string]bool{"time_updated": true}, map[string]bool{"data": true})
			compareTable(t, "part", rows(t, real.db, `SELECT * FROM part ORDER BY rowid`), rows(t, ours.db, `SELECT * FROM part ORDER BY rowid`),
				map[string]bool{"time_created": true, "time_updated": true}, map[string]bool{"data": true})
			for _, r := range rows(t, ours.db, `SELECT time_updated FROM message UNION ALL SELECT time_created FROM part`) {
				if r["time_updated"] != int64(now) && r["time_created"] != int64(now) {
					t.Errorf("a clock field is %v, not now", r)
				}
			}
			// What pvisor then reads back is the CLI's export, as JSON.
			want, _ := os.ReadFile(filepath.Join("testdata", v, "export.json"))
			got, ok, err := ours.Export(sid)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			if !jsonEqual(got, want) {
				t.Errorf("export of the written session is not the CLI's export\n%s", firstDiff(got, want))
			}
		})
	}
}

func TestFindIsByExactID(t *testing.T) {
	p := imported(t, "1.18.33")
	d, err := OpenReadOnly(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const sid = "ses_dd667972effeIl1TDXAj2ZWXpJ"
	s, ok, err := d.Find(sid)
	if err != nil || !ok || s.ID != sid || s.Messages != 7 || s.Parts != 27 || s.Version != "1.18.33" || s.Directory == "" {
		t.Fatalf("Find(%s) = %+v, %v, %v", sid, s, ok, err)
	}
	// A message id, a prefix, and a text every message quotes are no
	// sessions.
	var msg string
	if err := d.db.QueryRow(`SELECT id FROM message LIMIT 1`).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{msg, sid[:len(sid)-1], "fake-model", "ses_unknown"} {
		if s, ok, err := d.Find(id); ok || err != nil {
			t.Errorf("Find(%q) = %+v, %v, %v; want not found", id, s, ok, err)
		}
	}
}

func TestOtherSchemaIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, sql, table string
	}{
		{"extra column", `ALTER TABLE session ADD COLUMN color text`, "session"},
		{"missing table", `DROP TABLE part`, "part"},
		{"renamed column", `ALTER TABLE message RENAME COLUMN data TO body`, "message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := imported(t, "1.18.20")
			raw, err := sql.Open("sqlite", p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(tc.sql); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			d, err := Open(p)
			var se *SchemaError
			if !errors.As(err, &se) || se.Table != tc.table {
				t.Fatalf("Open = %v, %v; want a SchemaError for %s", d, err, tc.table)
			}
		})
	}
}

func TestJSNumberAndString(t *testing.T) {
	for f, want := range map[float64]string{0: "0", 1: "1", -3: "-3", 0.5: "0.5", 0.0012345: "0.0012345", 1e-7: "1e-7",
		1.5e-8: "1.5e-8", 123456789012: "123456789012", 1e21: "1e+21", 2.5e22: "2.5e+22"} {
		if got := jsNumber(f); got != want {
			t.Errorf("jsNumber(%v) = %s, want %s", f, got, want)
		}
	}
	for s, want := range map[string]string{"a\"b\\c": `"a\"b\\c"`, "\n\t\r\b\f": `"\n\t\r\b\f"`, "\x01\x1f": `"\u0001\u001f"`,
		"<&>": `"<&>"`, "\u2028é": "\"\u2028é\"", "\xff": "\"\uFFFD\""} {
		if got := jsString(s); got != want {
			t.Errorf("jsString(%q) = %s, want %s", s, got, want)
		}
	}
}

func rows(t *testing.T, db *sql.DB, q string) []map[string]any {
	t.Helper()
	r, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cols, _ := r.Columns()
	var out []map[string]any
	for r.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b)
			}
			m[c] = vals[i]
		}
		out = append(out, m)
	}
	return out
}

// compareTable demands the same rows in the same (rowid) order; clock
// columns are skipped, asJSON columns compared as JSON values.
func compareTable(t *testing.T, table string, want, got []map[string]any, clock, asJSON map[string]bool) {
	t.Helper()
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("%s: %d rows, the CLI wrote %d", table, len(got), len(want))
	}
	for i := range want {
		for c, w := range want[i] {
			g := got[i][c]
			switch {
			case clock[c]:
			case asJSON[c]:
				if !jsonEqual([]byte(g.(string)), []byte(w.(string))) {
					t.Errorf("%s row %d %s: %v, the CLI wrote %v", table, i, c, g, w)
				}
			case !reflect.DeepEqual(g, w):
				t.Errorf("%s row %d %s: %#v, the CLI wrote %#v", table, i, c, g, w)
			}
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-80)
	return "ours: " + string(a[lo:min(len(a), i+80)]) + "\nCLI:  " + string(b[lo:min(len(b), i+80)])
}

// TestOpenSnapshotReadsTheWAL: a session only in the write-ahead log (the
// CLI still running, or killed) is found, from a copy; the directory is
// not written, neither is a database without a log.
func TestOpenSnapshotReadsTheWAL(t *testing.T) {
	p := imported(t, "1.18.33")
	w, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	for _, q := range []string{`PRAGMA journal_mode=WAL`, `PRAGMA wal_autocheckpoint=0`, `UPDATE session SET title = 'only in the log'`} {
		if _, err := w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Dir(p)
	if st, err := os.Stat(p + "-wal"); err != nil || st.Size() == 0 {
		t.Fatalf("no write-ahead log: %v", err)
	}
	before := snapshotDir(t, dir)
	tmp := t.TempDir()
	d, done, err := OpenSnapshot(dir, tmp)
	if err != nil {
		t.Fatal(err)
	}
	s, ok, err := d.Find("ses_dd667972effeIl1TDXAj2ZWXpJ")
	if err != nil || !ok || s.Title != "only in the log" {
		t.Errorf("Find = %+v, %v, %v", s, ok, err)
	}
	d.Close()
	done()
	if after := snapshotDir(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("the directory changed")
	}
	if e, _ := os.ReadDir(tmp); len(e) != 0 {
		t.Errorf("the copy was left: %v", e)
	}

	plain := filepath.Dir(imported(t, "1.18.20"))
	before = snapshotDir(t, plain)
	d, done, err = OpenSnapshot(plain, tmp)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := d.Find("ses_dcde9ed9dffedKYacsnTgsQHbp"); !ok || err != nil {
		t.Errorf("Find without a log: %v %v", ok, err)
	}
	d.Close()
	done()
	if after := snapshotDir(t, plain); !reflect.DeepEqual(before, after) {
		t.Errorf("the directory without a log changed: %v", after)
	}
}

func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = string(b)
	}
	return out
}
