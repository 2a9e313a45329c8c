package report

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pvisor/pvisor/replay/batch"
)

func writeRecord(t *testing.T, dir, id, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(batch.RecordsDir(dir), id+".json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Issue 24 #10: a torn record, a symlinked one, a FIFO and one under
// another run's name are named with their reason, not silently dropped;
// #11: record strings cannot inject markup into report.md.
func TestReportNamesSkippedRecordsAndEscapesStrings(t *testing.T) {
	dir := t.TempDir()
	runs := batch.RecordsDir(dir)
	if err := os.MkdirAll(runs, 0o700); err != nil {
		t.Fatal(err)
	}
	hostile := "x</script><script>alert(1)</script>|`[a](javascript:b)`"
	writeRecord(t, dir, "good", `{"run_id":"good","agent":"claude-code","trajectory":"`+
		strings.ReplaceAll(hostile, `"`, `\"`)+`","after_step":1,"repeat":1,"exit_code":0,"result":{}}`)
	writeRecord(t, dir, "torn", `{"run_id":"torn","agent":"claude-c`)
	writeRecord(t, dir, "other", `{"run_id":"good","agent":"claude-code","after_step":1,"repeat":1,"result":{}}`)
	if err := os.Symlink(filepath.Join(runs, "good.json"), filepath.Join(runs, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(runs, "fifo.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := Build([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || len(rep.Skipped) != 4 {
		t.Fatalf("%d runs, %d skipped (%+v): want 1 and 4", len(rep.Runs), len(rep.Skipped), rep.Skipped)
	}
	why := map[string]string{}
	for _, s := range rep.Skipped {
		why[filepath.Base(s.File)] = s.Reason
	}
	for name, want := range map[string]string{"torn.json": "not a whole run record", "link.json": "it is a symlink",
		"fifo.json": "a named pipe", "other.json": "holds run good, not other"} {
		if !strings.Contains(why[name], want) {
			t.Errorf("%s: reason %q, want %q", name, why[name], want)
		}
	}
	out := t.TempDir()
	if err := Write(rep, out); err != nil {
		t.Fatal(err)
	}
	mdText, _ := os.ReadFile(filepath.Join(out, "report.md"))
	htmlText, _ := os.ReadFile(filepath.Join(out, "report.html"))
	for name, text := range map[string]string{"report.md": string(mdText), "report.html": string(htmlText)} {
		if strings.Contains(text, "<script>") || name == "report.md" && strings.Contains(strings.ReplaceAll(text, `\]`, ""), "](javascript:") {
			t.Errorf("%s holds the record's markup raw:\n%s", name, text)
		}
		if !strings.Contains(text, "4 record file(s) skipped") || !strings.Contains(text, "torn.json") {
			t.Errorf("%s does not name the skipped records:\n%s", name, text)
		}
	}
	if !strings.Contains(string(mdText), `x&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;\|`) {
		t.Errorf("report.md cell not escaped as expected:\n%s", mdText)
	}
}
