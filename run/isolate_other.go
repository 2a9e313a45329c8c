//go:build !linux

package run

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
)

// Isolation needs Linux namespaces; elsewhere Enabled makes every start fail.
type Isolation struct {
	Enabled   bool
	DataLimit uint64
	NoNetwork bool
}

func (Isolation) shimCmd(*exec.Cmd, *os.File) {}

type shimStatus struct {
	ok        bool
	code, sig int
	alone     bool
}

func shimStarted(*bufio.Reader) error {
	return errors.New("tool isolation needs Linux")
}

func readShimStatus(*bufio.Reader) shimStatus { return shimStatus{} }
