package openhands

// OpenHands' result-size limits and notices (openhands.sdk.utils.truncate,
// openhands.tools.file_editor.utils.constants, terminal constants).
const (
	maxCmdOutputChars = 30000
	noticeDefault     = "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.</NOTE>"
	noticeTextFile    = "<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>"
	noticeDirectory   = "<response clipped><NOTE>Due to the max output limit, only part of this directory has been shown to you. You should use `ls -la` instead to view large directories incrementally.</NOTE>"
)

// maybeTruncate keeps the head and tail of content around notice when it is
// longer than limit characters (Python counts code points), the head
// getting the odd one, as OpenHands' maybe_truncate does without a save
// directory.
func maybeTruncate(content string, limit int, notice string) string {
	r := []rune(content)
	if limit <= 0 || len(r) <= limit {
		return content
	}
	n := []rune(notice)
	if len(n) >= limit {
		return string(n[:limit])
	}
	avail := limit - len(n)
	head := avail/2 + avail%2
	tail := avail - head
	out := string(r[:head]) + notice
	if tail > 0 {
		out += string(r[len(r)-tail:])
	}
	return out
}
