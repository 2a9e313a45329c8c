package pi

import (
	"errors"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"syscall"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// This file reproduces the JavaScript/Node behaviour pi's tools rely on
// beyond the shared jsstr helpers: BOM handling, pi's size format, Node's
// fs error messages and pi's collation. Everything is written from the
// documented behaviour of those functions, not from pi's code.

// decodeUTF8 decodes b the way Buffer.toString("utf-8") and TextDecoder do
// (jsstr.Decode). stripBOM drops a leading byte order mark, as TextDecoder
// does and Buffer.toString does not.
func decodeUTF8(b []byte, stripBOM bool) string {
	if stripBOM && len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		b = b[3:]
	}
	return jsstr.Decode(b)
}

// toFixed1 is Number#toFixed(1): of two equally near results the larger
// is taken (1.25 → "1.3"), unlike strconv's round-half-even. x is always a
// byte count divided by a power of two here, so x*10+0.5 is exact.
func toFixed1(x float64) string {
	n := math.Floor(x*10 + 0.5)
	return strconv.FormatFloat(n/10, 'f', 1, 64)
}

// formatSize is pi's human-readable size: "512B", "50.0KB", "1.5MB".
func formatSize(n int) string {
	switch {
	case n < 1024:
		return strconv.Itoa(n) + "B"
	case n < 1024*1024:
		return toFixed1(float64(n)/1024) + "KB"
	}
	return toFixed1(float64(n)/(1024*1024)) + "MB"
}

// libuvMessages are the descriptions Node puts after an error code.
var libuvMessages = map[syscall.Errno][2]string{
	syscall.ENOENT:       {"ENOENT", "no such file or directory"},
	syscall.EACCES:       {"EACCES", "permission denied"},
	syscall.EISDIR:       {"EISDIR", "illegal operation on a directory"},
	syscall.ENOTDIR:      {"ENOTDIR", "not a directory"},
	syscall.EEXIST:       {"EEXIST", "file already exists"},
	syscall.EPERM:        {"EPERM", "operation not permitted"},
	syscall.EROFS:        {"EROFS", "read-only file system"},
	syscall.ENOSPC:       {"ENOSPC", "no space left on device"},
	syscall.ELOOP:        {"ELOOP", "too many symbolic links encountered"},
	syscall.ENAMETOOLONG: {"ENAMETOOLONG", "name too long"},
	syscall.EBUSY:        {"EBUSY", "resource busy or locked"},
	syscall.EMFILE:       {"EMFILE", "too many open files"},
	syscall.ENFILE:       {"ENFILE", "file table overflow"},
	syscall.ENXIO:        {"ENXIO", "no such device or address"},
	syscall.EINVAL:       {"EINVAL", "invalid argument"},
	syscall.EIO:          {"EIO", "i/o error"},
	syscall.ETXTBSY:      {"ETXTBSY", "text file is busy"},
	syscall.EFBIG:        {"EFBIG", "file too large"},
	syscall.EAGAIN:       {"EAGAIN", "resource temporarily unavailable"},
}

// errnoOf digs the errno out of an os error.
func errnoOf(err error) (syscall.Errno, bool) {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e, true
	}
	return 0, false
}

// nodeErrCode is Node's error.code for err ("ENOENT"), "" when unknown.
func nodeErrCode(err error) string {
	if e, ok := errnoOf(err); ok {
		if m, ok := libuvMessages[e]; ok {
			return m[0]
		}
	}
	return ""
}

// nodeFsError is the message of the error Node's fs functions throw:
// "ENOENT: no such file or directory, open '/x'" (no path for read(2)).
func nodeFsError(err error, syscallName, path string) string {
	e, ok := errnoOf(err)
	m, known := libuvMessages[e]
	if !ok || !known {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		m = [2]string{"UNKNOWN", err.Error()}
	}
	s := m[0] + ": " + m[1] + ", " + syscallName
	if path != "" {
		s += " '" + path + "'"
	}
	return s
}

// collateKey orders names as String#localeCompare does under ICU's root
// collation for the characters file names hold: whitespace, then
// punctuation, then symbols, then digits, then letters; accents and other
// non-ASCII characters sort after the ASCII letters (an approximation of
// the full Unicode collation algorithm). Control characters are ignored.
var asciiPrimary = func() [128]int {
	var w [128]int
	order := " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
	for i := range w {
		w[i] = -1 // ignorable
	}
	for i := 0; i < len(order); i++ {
		w[order[i]] = i + 1
	}
	for c := 'A'; c <= 'Z'; c++ {
		w[c] = w[c+'a'-'A']
	}
	return w
}()

// localeCompare compares two (already lower-cased) names: primary weights
// first, then the code points as a tie-break, 0 when they are the same.
func localeCompare(a, b string) int {
	pa, pb := primaryWeights(a), primaryWeights(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	if len(pa) != len(pb) {
		if len(pa) < len(pb) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// latin1Base is the base letter of U+00C0..U+00FF ('*' for the symbols
// × and ÷, and for letters ICU sorts on their own).
const latin1Base = "aaaaaa*ceeeeiiii*nooooo*ouuuuy**aaaaaa*ceeeeiiii*nooooo*ouuuuy*y"

func primaryWeights(s string) []int {
	w := make([]int, 0, len(s))
	for _, r := range s {
		switch {
		case r < 128:
			if p := asciiPrimary[r]; p >= 0 {
				w = append(w, p)
			}
		case r >= 0xC0 && r <= 0xFF && latin1Base[r-0xC0] != '*':
			// Latin-1 letters sort with their base letter; the accent only
			// breaks ties (the secondary level).
			w = append(w, asciiPrimary[latin1Base[r-0xC0]])
		default:
			w = append(w, 1000+int(r))
		}
	}
	return w
}
