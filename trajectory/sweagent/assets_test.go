package sweagent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// withStatement is the corpus trajectory with its GitHub problem statement
// replaced by ps: as an object, or, as SWE-agent 1.x writes replay_config,
// inside a JSON string.
func withStatement(t *testing.T, ps string, asString bool) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, "6e44b9__sweagenttestrepo-1c2844.traj"))
	if err != nil {
		t.Fatal(err)
	}
	rc := gjson.GetBytes(data, "replay_config")
	old := rc.Get("problem_statement").Raw
	newRC := strings.Replace(rc.Raw, old, ps, 1)
	if asString {
		enc, _ := json.Marshal(newRC)
		newRC = string(enc)
	}
	return bytes.Replace(data, []byte(rc.Raw), []byte(newRC), 1)
}

func assetsRoot(t *testing.T, files map[string]string) *os.Root {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

func TestInlineAssets(t *testing.T) {
	const text = "Fix the <missing> colon & run the tests.\nÜnïcode kept.\n"
	sum := sha256.Sum256([]byte(text))
	for _, asString := range []bool{false, true} {
		name := map[bool]string{false: "object", true: "string"}[asString]
		t.Run(name, func(t *testing.T) {
			in := withStatement(t, `{"path": "issues/1.md", "extra_fields": {"k": 1}, "type": "text_file", "id": "i1"}`, asString)
			out, inlined, err := New().(format).InlineAssets(in, assetsRoot(t, map[string]string{"issues/1.md": text}))
			if err != nil {
				t.Fatal(err)
			}
			if len(inlined) != 1 || inlined[0].Path != "issues/1.md" || inlined[0].Bytes != int64(len(text)) || inlined[0].SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("inlined = %+v", inlined)
			}
			if !json.Valid(out) {
				t.Fatalf("the inlined prefix is not JSON")
			}
			rc := gjson.GetBytes(out, "replay_config")
			if asString {
				if rc.Type != gjson.String {
					t.Fatalf("replay_config became %s, want a string as recorded", rc.Type)
				}
				rc = gjson.Parse(rc.Str)
			}
			ps := rc.Get("problem_statement")
			if ps.Get("type").Str != "text" || ps.Get("text").Str != text || ps.Get("path").Exists() ||
				ps.Get("id").Str != "i1" || ps.Get("extra_fields.k").Int() != 1 {
				t.Errorf("problem_statement = %s", ps.Raw)
			}
			if !asString && !strings.Contains(ps.Raw, `<missing> colon &`) {
				t.Errorf("the text was HTML-escaped: %s", ps.Raw)
			}
			// Only the statement changed: the rest is byte for byte.
			before := gjson.GetBytes(in, "replay_config")
			if !bytes.Equal(out[:before.Index], in[:before.Index]) || !bytes.HasSuffix(out, in[before.Index+len(before.Raw):]) {
				t.Error("bytes outside replay_config changed")
			}
			if got := gjson.GetBytes(out, "trajectory").Raw; got != gjson.GetBytes(in, "trajectory").Raw {
				t.Error("the trajectory changed")
			}
		})
	}
}

func TestInlineAssetsLeavesOtherStatements(t *testing.T) {
	in := withStatement(t, `{"type": "github", "github_url": "https://github.com/SWE-agent/test-repo/issues/1"}`, false)
	out, inlined, err := New().(format).InlineAssets(in, assetsRoot(t, nil))
	if err != nil || len(inlined) != 0 || !bytes.Equal(out, in) {
		t.Errorf("a GitHub statement: %d inlined, changed %v, err %v", len(inlined), !bytes.Equal(out, in), err)
	}
}

func TestInlineAssetsRefuses(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 4<<20+1)
	for _, tc := range []struct {
		name, path string
		files      map[string]string
		link       string // a symlink p.md -> link in the root
		want       string
	}{
		{"absolute", "/etc/passwd", nil, "", "only a relative path"},
		{"dotdot", "../secret", nil, "", "must stay inside"},
		{"symlink out", "p.md", nil, filepath.Join(outside, "secret"), "must stay inside"},
		{"missing", "nope.md", nil, "", "no such file"},
		{"too big", "big.md", map[string]string{"big.md": big}, "", "larger than 4 MiB"},
		{"not utf-8", "bin.md", map[string]string{"bin.md": "\xff\xfe"}, "", "not UTF-8"},
		{"directory", "d", map[string]string{"d/x": "x"}, "", "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := assetsRoot(t, tc.files)
			if tc.link != "" {
				if err := os.Symlink(tc.link, filepath.Join(root.Name(), "p.md")); err != nil {
					t.Fatal(err)
				}
			}
			in := withStatement(t, `{"type": "text_file", "path": "`+tc.path+`"}`, false)
			_, _, err := New().(format).InlineAssets(in, root)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "problem_statement names") {
				t.Errorf("err = %v, want %q naming the field", err, tc.want)
			}
		})
	}
}
