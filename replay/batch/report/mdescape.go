package report

import "strings"

// mdEscaper makes a record string inert in a Markdown table cell and in the
// HTML a Markdown renderer makes of it: run ids, trajectory paths, agent and
// upstream names come from files anyone may have written (issue 24 #11,
// "</script><script>…" in a cell). The characters that make tables, code, emphasis and links are backslash-escaped,
// HTML's are entities, and a newline cannot end the row.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "`", "\\`", "*", `\*`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "\r", " ", "\n", " ",
)

func md(s string) string {
	s = mdEscaper.Replace(s)
	if strings.ContainsFunc(s, isControl) {
		s = strings.Map(func(r rune) rune {
			if isControl(r) {
				return ' '
			}
			return r
		}, s)
	}
	return s
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }
