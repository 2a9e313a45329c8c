package result

import "sort"

// Similarity is difflib.SequenceMatcher(None, a, b).ratio() over Unicode
// code points, autojunk included, so numbers match those of the Python
// tooling researchers already use: 2*M/T, where M counts the characters in
// the matching blocks and T the characters of both strings; 1.0 when both
// are empty.
func Similarity(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	if len(ra)+len(rb) == 0 {
		return 1.0
	}
	m := newMatcher(ra, rb)
	matched := 0
	for _, blk := range m.matchingBlocks() {
		matched += blk.size
	}
	return 2 * float64(matched) / float64(len(ra)+len(rb))
}

type matcher struct {
	a, b []rune
	b2j  map[rune][]int
}

type block struct{ i, j, size int }

func newMatcher(a, b []rune) *matcher {
	m := &matcher{a: a, b: b, b2j: map[rune][]int{}}
	for j, r := range b {
		m.b2j[r] = append(m.b2j[r], j)
	}
	// Autojunk: in a b of 200 or more characters, a character that makes up
	// more than 1% of it (plus one) is "popular" and cannot start a match,
	// though matches may still extend over it.
	if n := len(b); n >= 200 {
		limit := n/100 + 1
		for r, idx := range m.b2j {
			if len(idx) > limit {
				delete(m.b2j, r)
			}
		}
	}
	return m
}

// longestMatch finds the longest block of a[alo:ahi] equal to b[blo:bhi]
// built from non-popular characters, earliest in a then b on ties, then
// extends it over equal characters on both sides.
func (m *matcher) longestMatch(alo, ahi, blo, bhi int) block {
	best := block{alo, blo, 0}
	j2len := map[int]int{}
	for i := alo; i < ahi; i++ {
		next := map[int]int{}
		for _, j := range m.b2j[m.a[i]] {
			if j < blo {
				continue
			}
			if j >= bhi {
				break
			}
			k := j2len[j-1] + 1
			next[j] = k
			if k > best.size {
				best = block{i - k + 1, j - k + 1, k}
			}
		}
		j2len = next
	}
	for best.i > alo && best.j > blo && m.a[best.i-1] == m.b[best.j-1] {
		best = block{best.i - 1, best.j - 1, best.size + 1}
	}
	for best.i+best.size < ahi && best.j+best.size < bhi && m.a[best.i+best.size] == m.b[best.j+best.size] {
		best.size++
	}
	return best
}

func (m *matcher) matchingBlocks() []block {
	type span struct{ alo, ahi, blo, bhi int }
	queue := []span{{0, len(m.a), 0, len(m.b)}}
	var blocks []block
	for len(queue) > 0 {
		s := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		x := m.longestMatch(s.alo, s.ahi, s.blo, s.bhi)
		if x.size == 0 {
			continue
		}
		blocks = append(blocks, x)
		if s.alo < x.i && s.blo < x.j {
			queue = append(queue, span{s.alo, x.i, s.blo, x.j})
		}
		if x.i+x.size < s.ahi && x.j+x.size < s.bhi {
			queue = append(queue, span{x.i + x.size, s.ahi, x.j + x.size, s.bhi})
		}
	}
	sort.Slice(blocks, func(p, q int) bool {
		if blocks[p].i != blocks[q].i {
			return blocks[p].i < blocks[q].i
		}
		return blocks[p].j < blocks[q].j
	})
	return blocks
}
