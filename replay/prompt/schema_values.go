package prompt

import (
	"encoding/json"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"
)

func missingProps(x map[string]any, names []string) []string {
	var missing []string
	for _, r := range names {
		if _, has := x[r]; !has {
			missing = append(missing, quote(r))
		}
	}
	return missing
}

func plural(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

// everything is what a true schema evaluates: all of inst.
func everything(inst any) *evaluated {
	ev := &evaluated{allItems: true}
	if obj, ok := inst.(map[string]any); ok {
		ev.props = make(map[string]bool, len(obj))
		for k := range obj {
			ev.props[k] = true
		}
	}
	return ev
}

func typeIn(inst any, types []string) bool {
	got := jsonType(inst)
	for _, t := range types {
		if t == got || t == "number" && got == "integer" {
			return true
		}
	}
	return false
}

func containsValue(list []any, v any) bool {
	for _, e := range list {
		if equalJSON(e, v) {
			return true
		}
	}
	return false
}

// equalJSON is JSON equality: numbers by value, objects by members.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, oka := ratOf(a)
		rb, okb := ratOf(bn)
		return oka && okb && ra.Cmp(rb) == 0
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], bl[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, has := bm[k]
			if !has || !equalJSON(av, bv) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// quote shows a value in a message: strings in single quotes, the rest as
// JSON.
func quote(v any) string {
	if s, ok := v.(string); ok {
		return "'" + s + "'"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// formatOK checks the formats that drafts 4 to 7 assert; others pass.
func formatOK(format, s string) bool {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339, strings.ToUpper(s))
		return err == nil
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "time":
		_, err := time.Parse("15:04:05Z07:00", strings.ToUpper(s))
		return err == nil
	case "email":
		a, err := mail.ParseAddress(s)
		return err == nil && a.Address == s
	case "hostname":
		return hostnameOK(s)
	case "ipv4":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is4()
	case "ipv6":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is6() && a.Zone() == ""
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.IsAbs()
	case "uri-reference":
		_, err := url.Parse(s)
		return err == nil
	case "uuid":
		return uuidOK(s)
	case "regex":
		_, err := regexp.Compile(s)
		return err == nil
	case "json-pointer":
		return s == "" || strings.HasPrefix(s, "/") && !strings.Contains(strings.NewReplacer("~0", "", "~1", "").Replace(s), "~")
	}
	return true
}

func hostnameOK(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func uuidOK(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
