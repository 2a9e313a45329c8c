package result

import (
	"encoding/json"
	"math"
	"math/rand"
	"os/exec"
	"strings"
	"testing"
)

func TestSimilarityKnownValues(t *testing.T) {
	// Values from Python 3.11: difflib.SequenceMatcher(None, a, b).ratio().
	cases := []struct {
		a, b string
		want float64
	}{
		{"", "", 1.0},
		{"abc", "", 0.0},
		{"abcd", "bcde", 0.75},
		{"I will read the file", "I'll read the file first", 0.7727272727272727},
		{"héllo wörld", "hello world", 0.8181818181818182},
		{"private Thread currentThread;", "private volatile Thread currentThread;", 0.8656716417910447},
	}
	for _, tc := range cases {
		if got := Similarity(tc.a, tc.b); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Similarity(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// The port must agree with difflib itself, autojunk included (strings of
// 200+ characters with popular characters); checked against the real
// Python where one is installed.
func TestSimilarityAgreesWithDifflib(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed; the known-value table still runs")
	}
	rng := rand.New(rand.NewSource(1))
	alphabet := []rune("ab cdé\n漢")
	var pairs [][2]string
	for i := 0; i < 60; i++ {
		n, m := rng.Intn(400), rng.Intn(400)
		if i%3 == 0 {
			n, m = rng.Intn(20), rng.Intn(20)
		}
		pairs = append(pairs, [2]string{randString(rng, alphabet, n), randString(rng, alphabet, m)})
	}
	in, _ := json.Marshal(pairs)
	cmd := exec.Command(py, "-c", `import sys, json, difflib
print(json.dumps([difflib.SequenceMatcher(None, a, b).ratio() for a, b in json.load(sys.stdin)]))`)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var want []float64
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, p := range pairs {
		if got := Similarity(p[0], p[1]); math.Abs(got-want[i]) > 1e-12 {
			t.Errorf("pair %d (len %d, %d): got %v, difflib %v", i, len([]rune(p[0])), len([]rune(p[1])), got, want[i])
		}
	}
}

func randString(rng *rand.Rand, alphabet []rune, n int) string {
	r := make([]rune, n)
	for i := range r {
		r[i] = alphabet[rng.Intn(len(alphabet))]
	}
	return string(r)
}
