package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

var shards = []string{"testdata/in/shard-a", "testdata/in/shard-b"}

func TestReportGolden(t *testing.T) {
	// In a copy of the fixture, with the report in the first dir as
	// 'batch report DIR...' writes it: run links are relative to it.
	goldenDir, err := filepath.Abs(filepath.Join("testdata", "golden"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "testdata", "in"), os.DirFS(filepath.Join("testdata", "in"))); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	rep, err := Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	rep.PvisorVersion = "0.2.0-test"
	out := shards[0]
	if err := Write(rep, out); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.json", "report.md", "report.html"} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join(goldenDir, name)
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

func TestHTMLRunsLinkAndShowFailures(t *testing.T) {
	rep, err := Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	rep.linkBase = shards[0]
	page := string(HTML(rep))
	for _, want := range []string{
		// A run with a result.json links to it; one without, to its record;
		// a run of another dir, relative to the report's dir.
		`<a href="codex-rollout-2026-11-29T23-16-s1-r1-26029e77/result.json">codex-rollout-2026-11-29T23-16-s1-r1-26029e77</a>`,
		`<a href=".batch/runs/pi-2026-11-29T23-16-33-212Z-s3-r1-c6f980ea.json">`,
		`<a href="../shard-b/.batch/runs/codex-rollout-2026-11-29T23-16-s3-r4-m4x.json">`,
		// The failure's message, escaped, beside its category.
		`<td class="failure"><b>model_rate_limit</b>: upstream said 429 &lt;Too Many Requests&gt; &amp; retry-after: &#34;30&#34;</td>`,
		`<td class="failure"><b>model_rate_limit</b>: upstream said 429</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, "<Too Many Requests>") {
		t.Error("a failure message reached the page unescaped")
	}
	long := &RunFailure{Category: "internal_error", Message: strings.Repeat("é", maxFailureRunes+5)}
	if got := failureCell(long); !strings.HasSuffix(got, strings.Repeat("é", 3)+"…") || strings.Count(got, "é") != maxFailureRunes {
		t.Errorf("a long message is not cut at %d runes: %d", maxFailureRunes, strings.Count(got, "é"))
	}
}

func TestReportSaysWhichPvisor(t *testing.T) {
	rep, err := Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	// shard-b's records carry the pvisor that ran them; shard-a's predate
	// the field.
	if !slices.Equal(rep.RunsBy, []string{"–", "0.1.0"}) {
		t.Errorf("runs_by_pvisor = %v", rep.RunsBy)
	}
	rep.PvisorVersion = "0.2.0"
	want := "Runs by pvisor –, 0.1.0; report by pvisor 0.2.0."
	for name, page := range map[string][]byte{"md": Markdown(rep), "html": HTML(rep)} {
		if !strings.Contains(string(page), want) {
			t.Errorf("%s lacks %q", name, want)
		}
	}
}
