package run

import (
	"io/fs"
	"os"
)

// The file tools as agents call them: each resolves its path through the
// container view (HostPath) and reports the path the tool named, so an
// observation shows /etc/hosts, not where this process found it. Without
// a view HostPath returns the path unchanged.

// OpenRegular: see openRegularHere.
func OpenRegular(op, path string) (*os.File, fs.FileInfo, error) {
	return openRegularHere(op, HostPath(path))
}

// CheckRegular: see checkRegularHere.
func CheckRegular(op, path string) error { return checkRegularHere(op, HostPath(path)) }

// CheckReadable: see checkReadableHere.
func CheckReadable(op, path string) error { return checkReadableHere(op, HostPath(path)) }

// ReadRegular: see readRegularHere.
func ReadRegular(op, path string) ([]byte, fs.FileInfo, error) {
	return readRegularHere(op, HostPath(path))
}

// ReadFile: see readFileHere.
func ReadFile(path string) (File, error) {
	f, err := readFileHere(HostPath(path))
	f.Path = path
	return f, err
}

// ReadLines: see readLinesHere.
func ReadLines(path string, offset, limit int) (LineWindow, error) {
	w, err := readLinesHere(HostPath(path), offset, limit)
	w.Path = path
	return w, err
}

// WriteFile: see writeFileHere.
func WriteFile(path string, content []byte) (WriteResult, error) {
	w, err := writeFileHere(HostPath(path), content)
	w.Path = path
	return w, err
}

// CopyRegularFile: see copyRegularFileHere.
func CopyRegularFile(src, dst string) error {
	return copyRegularFileHere(HostPath(src), HostPath(dst))
}

// Edit: see editHere.
func Edit(path string, e EditSpec) (EditResult, error) {
	r, err := editHere(HostPath(path), e)
	r.Path = path
	return r, err
}

// MultiEdit: see multiEditHere.
func MultiEdit(path string, edits []EditSpec) (EditResult, error) {
	r, err := multiEditHere(HostPath(path), edits)
	r.Path = path
	return r, err
}

// Glob: see globHere. An absolute pattern is split here, so its directory
// is resolved in the container too.
func Glob(root, pattern string, opt GlobOptions) (GlobResult, error) {
	if activeView() == nil {
		return globHere(root, pattern, opt)
	}
	if len(pattern) > 0 && pattern[0] == '/' {
		root, pattern = splitStaticPrefix(pattern)
	}
	res, err := globHere(HostPath(root), pattern, opt)
	res.Root = root
	for i := range res.Files {
		res.Files[i].Path = ContainerPath(res.Files[i].Path)
	}
	return res, err
}

// List: see listHere.
func List(root string, opt ListOptions) (ListResult, error) {
	res, err := listHere(HostPath(root), opt)
	res.Root = root
	for i := range res.Entries {
		res.Entries[i].Path = ContainerPath(res.Entries[i].Path)
	}
	return res, err
}

// Grep: see grepHere.
func Grep(req GrepRequest) (GrepResult, error) {
	req.Path = HostPath(req.Path)
	res, err := grepHere(req)
	for i := range res.Files {
		res.Files[i].Path = ContainerPath(res.Files[i].Path)
	}
	return res, err
}
