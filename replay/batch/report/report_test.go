package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

var shards = []string{"testdata/in/shard-a", "testdata/in/shard-b"}

func TestReportGolden(t *testing.T) {
	rep, err := Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := Write(rep, out); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.json", "report.md", "report.html"} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "golden", name)
		if *update {
			os.MkdirAll(filepath.Dir(golden), 0o755)
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (run with -update after checking the change)", name, golden)
		}
	}
}

func TestAggregates(t *testing.T) {
	rep, err := Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 16 {
		t.Fatalf("%d runs, want 8 + 8", len(rep.Runs))
	}
	var g *Group
	for i := range rep.Groups {
		if x := &rep.Groups[i]; x.Agent == "codex" && x.Upstream == "openai-responses/gpt-5.5" && x.AfterStep == 3 {
			g = x
		}
	}
	if g == nil {
		t.Fatalf("no codex × openai-responses/gpt-5.5 × 3 group in %+v", rep.Groups)
	}
	// Repeats 1..3 compared: names equal in 1 and 3, exact only in 3;
	// repeat 4 failed with a rate limit.
	if g.Runs != 4 || g.Compared != 3 || g.Failed != 1 || g.FailuresByCategory["model_rate_limit"] != 1 {
		t.Errorf("counts: %+v", g)
	}
	if *g.ToolNameAgreement != 0.6667 || *g.ExactToolAgreement != 0.3333 {
		t.Errorf("agreement %v / %v, want 0.6667 / 0.3333", *g.ToolNameAgreement, *g.ExactToolAgreement)
	}
	if s := g.TextSimilarity; s.N != 3 || s.Median != 0.82 || s.Min != 0.31 || s.Max != 0.97 || s.Histogram[3] != 1 || s.Histogram[8] != 1 || s.Histogram[9] != 1 {
		t.Errorf("similarity %+v", s)
	}
	// 4 runs × the 5 calls of the real replay after step 3: 1 exact, 4 equal once normalised.
	if o := g.Observations; o.Calls != 20 || o.Exact != 4 || o.NormalizedExact != 16 || o.Different != 0 {
		t.Errorf("observations %+v", o)
	}
}

func TestShardsMergeByRunID(t *testing.T) {
	once, err := Build(shards[:1])
	if err != nil {
		t.Fatal(err)
	}
	twice, err := Build([]string{shards[0], shards[0]})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(once.Runs)
	b, _ := json.Marshal(twice.Runs)
	if !bytes.Equal(a, b) {
		t.Error("a run id present in two dirs was counted twice")
	}
	if _, err := Build([]string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "not a batch output dir") {
		t.Errorf("err = %v", err)
	}
}

func TestHTMLIsSelfContainedWithThePlots(t *testing.T) {
	rep, err := Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	page := string(HTML(rep))
	for _, id := range []string{`id="plot-agreement"`, `id="plot-similarity"`, `id="plot-drift"`} {
		if !strings.Contains(page, id) {
			t.Errorf("missing %s", id)
		}
	}
	for _, external := range []string{"<script", "src=", "@import", "url(", "<link"} {
		if strings.Contains(page, external) {
			t.Errorf("page refers to something outside itself: %s", external)
		}
	}
}
