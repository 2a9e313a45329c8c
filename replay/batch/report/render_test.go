package report

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHTMLRendersInChromium opens report.html in headless Chromium (Debian's
// chromium package) and checks that the browser's DOM holds the three plots
// with their marks and that the screenshot shows their colours. With
// -update the screenshot is kept as the README's picture.
func TestHTMLRendersInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install -y chromium); the HTML report is not rendered")
	}
	rep, err := Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(rep, dir); err != nil {
		t.Fatal(err)
	}
	page := "file://" + filepath.Join(dir, "report.html")
	shot := filepath.Join(dir, "shot.png")
	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		argv := append([]string{"--headless", "--disable-gpu", "--disable-background-networking", "--no-first-run",
			"--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, "profile")}, args...)
		name := chromium
		if os.Geteuid() == 0 {
			// As root Chromium needs --no-sandbox; a private network
			// namespace keeps it off the network all the same.
			argv = append([]string{"-n", chromium, "--no-sandbox"}, argv...)
			name = "unshare"
		}
		cmd := exec.CommandContext(ctx, name, append(argv, page)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v", args, err)
		}
		return out
	}
	dom := string(run("--dump-dom"))
	for _, want := range []string{`id="plot-agreement"`, `id="plot-similarity"`, `id="plot-drift"`, `class="panel"`, `class="point"`, `<line class="ci"`, `<rect class="stack"`, `<rect class="bar"`, `<a href="`,
		`<table id="comparisons">`, `<section class="run" id="run-`, `<table class="sidebyside">`, `href="#run-`} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %s", want)
		}
	}
	run("--window-size=1150,1000", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Every series colour of the fixture must appear (points, intervals and
	// bars were drawn), and the three parts of the drift stacks.
	for i, hex := range append(palette[:5:5], colorExact, colorNorm, colorDifferent) {
		if n := countColour(img, hex); n < 50 {
			t.Errorf("colour %d (%s) covers %d pixels in the screenshot, want plotted marks", i, hex, n)
		}
	}
	if *update {
		data, _ := os.ReadFile(shot)
		if err := os.WriteFile("screenshot.png", data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func countColour(img image.Image, hex string) int {
	var want color.RGBA
	for i, p := range []*uint8{&want.R, &want.G, &want.B} {
		var v uint8
		for _, c := range hex[1+2*i : 3+2*i] {
			v = v*16 + uint8(strings.IndexRune("0123456789abcdef", c))
		}
		*p = v
	}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, want.R) && near(g>>8, want.G) && near(bl>>8, want.B) {
				n++
			}
		}
	}
	return n
}

func near(a uint32, b uint8) bool { return a+6 >= uint32(b) && a <= uint32(b)+6 }
