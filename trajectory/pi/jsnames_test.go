package pi

import "github.com/pvisor/pvisor/trajectory/internal/jsstr"

// The package's older tests name the JavaScript helpers that moved to jsstr
// by their former local names.
func jsLen(s string) int                         { return jsstr.Len(s) }
func appendJSString(dst []byte, s string) []byte { return jsstr.AppendQuote(dst, s) }
func jsNumber(v float64) string                  { return jsstr.Number(v) }
