// Package hashset is a set of 64-bit hashes that costs about 8 bytes per
// member: a decoder that must remember every id it has let go of (a
// Codex DecodePrefix past its boundary) would otherwise pay a map entry,
// two to four times that, and the garbage of the map's growth.
package hashset

import "slices"

// Set is empty when zero. Members are kept sorted, the latest few
// thousand in a small map until they are merged in.
type Set struct {
	sorted []uint64
	recent map[uint64]struct{}
	batch  []uint64 // scratch for flush
}

// flushAt is how many members wait in the map: large enough that merges,
// each a pass over the sorted members, stay rare.
const flushAt = 4096

// Add puts h in the set.
func (s *Set) Add(h uint64) {
	if s.recent == nil {
		s.recent = make(map[uint64]struct{}, flushAt)
	}
	s.recent[h] = struct{}{}
	if len(s.recent) >= flushAt {
		s.flush()
	}
}

// Has reports whether h was added.
func (s *Set) Has(h uint64) bool {
	if _, ok := s.recent[h]; ok {
		return true
	}
	_, ok := slices.BinarySearch(s.sorted, h)
	return ok
}

// Len is the number of members.
func (s *Set) Len() int {
	n := len(s.sorted)
	for h := range s.recent {
		if _, ok := slices.BinarySearch(s.sorted, h); !ok {
			n++
		}
	}
	return n
}

// flush merges the map's members into the sorted ones, from the back so
// nothing is copied twice.
func (s *Set) flush() {
	b := s.batch[:0]
	for h := range s.recent {
		if _, ok := slices.BinarySearch(s.sorted, h); !ok {
			b = append(b, h)
		}
	}
	clear(s.recent)
	slices.Sort(b)
	n := len(s.sorted)
	s.sorted = slices.Grow(s.sorted, len(b))[:n+len(b)]
	i, j := n-1, len(b)-1
	for k := len(s.sorted) - 1; j >= 0; k-- {
		if i >= 0 && s.sorted[i] > b[j] {
			s.sorted[k] = s.sorted[i]
			i--
		} else {
			s.sorted[k] = b[j]
			j--
		}
	}
	s.batch = b
}
