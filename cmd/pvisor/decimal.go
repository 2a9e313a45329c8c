package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
)

// decimal is an integer flag that takes base-10 digits only. pflag's IntVar
// parses with base 0, so "010" would mean 8 and "0x3" or "1_0" would pass:
// a step number typed with a leading zero must not silently pick another
// step. Leading zeros are read as decimal ("010" is 10), as pVisor's parser
// (Rust's usize::from_str) reads them; a sign is accepted as "-" so a
// negative value reaches the range check with its own message.
type decimal struct{ p *int }

func decimalVar(fs *pflag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var(decimal{p}, name, usage)
}

func (d decimal) String() string { return strconv.Itoa(*d.p) }
func (d decimal) Type() string   { return "int" }

func (d decimal) Set(s string) error {
	digits := s
	if len(digits) > 1 && digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" {
		return fmt.Errorf("%q is not a decimal integer", s)
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return fmt.Errorf("%q is not a decimal integer (digits 0-9 only)", s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 0)
	if err != nil {
		return fmt.Errorf("%q is out of range", s)
	}
	*d.p = int(n)
	return nil
}
