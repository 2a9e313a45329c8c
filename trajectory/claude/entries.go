package claude

// entryList holds the decoder's entries in fixed-size chunks: a large file
// has hundreds of thousands, and one growing slice would be copied each
// time it outgrew itself, the garbage of those copies adding up to four
// times the final size and the last copy briefly doubling it.
type entryList struct {
	chunks [][]entry
	n      int32
}

const entryChunk = 4096 // entries per chunk, 192 KiB

func (l *entryList) add(e entry) {
	if l.n%entryChunk == 0 {
		l.chunks = append(l.chunks, make([]entry, 0, entryChunk))
	}
	c := &l.chunks[len(l.chunks)-1]
	*c = append(*c, e)
	l.n++
}

// at is entry i, which must be below len.
func (l *entryList) at(i int32) *entry { return &l.chunks[i/entryChunk][i%entryChunk] }

func (l *entryList) len() int32 { return l.n }
