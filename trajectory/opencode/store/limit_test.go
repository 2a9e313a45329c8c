package store

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Issue 24 #2: a session whose rows exceed the capture limit is refused
// from the rows' sizes, before any row is read.
func TestExportRefusesOversizedRows(t *testing.T) {
	v := versions[len(versions)-1]
	d, err := Open(imported(t, v))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	id := gjson.GetBytes(recording(t, v), "info.id").Str
	doc, ok, err := d.Export(id)
	if err != nil || !ok {
		t.Fatalf("Export under the limit: ok=%v err=%v", ok, err)
	}
	var pid string
	if err := d.db.QueryRow(`SELECT id FROM part WHERE session_id = ? LIMIT 1`, id).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	big := `{"type":"text","text":"` + strings.Repeat("a", len(doc)) + `"}`
	if _, err := d.db.Exec(`UPDATE part SET data = ? WHERE id = ?`, big, pid); err != nil {
		t.Fatal(err)
	}
	defer func(n int64) { maxExport = n }(maxExport)
	maxExport = int64(len(doc))
	_, _, err = d.Export(id)
	if err == nil || !strings.Contains(err.Error(), "part "+pid) || !strings.Contains(err.Error(), "over the ") || !strings.Contains(err.Error(), "limit of a capture") {
		t.Fatalf("Export of oversized rows: %v", err)
	}
}
