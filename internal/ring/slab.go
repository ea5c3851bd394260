package ring

// The pump's output chunks are carved from shared blocks instead of being
// allocated one by one: the chunks of a busy stream cost one allocation per
// block, not per read (a relay under load reads many small pieces). A chunk
// is never modified once delivered (clients, the replayer and the observer
// may keep it); the garbage collector frees a block once no chunk of it is
// held. Chunks are consecutive in their block, so a client or a recording
// that holds N bytes of queued output pins at most N bytes plus a block.
const (
	// smallRead is the read buffer of a quiet shell (keystroke echoes,
	// prompts): an idle session holds only this and a small block.
	smallRead = 1 << 10
	// smallBlock is the block that a quiet shell's chunks are copied into.
	smallBlock = 4 << 10
	// bulkBlock is the block a busy stream is read into directly, at
	// least bulkMinRead bytes at a time.
	bulkBlock   = 256 << 10
	bulkMinRead = 32 << 10
)

// Slab hands out the pump's read buffers and chunks. Its mode follows the
// stream: a read that fills the small buffer means more is waiting, so the
// next reads go straight into a large block (no copy, large reads); a
// short read goes back to the small buffer, so an idle session does not pin
// a large block.
type Slab struct {
	small [smallRead]byte
	free  []byte // the unused rest of the current block
	bulk  bool
}

// Buf returns where the next read goes.
func (s *Slab) Buf() []byte {
	if !s.bulk {
		return s.small[:]
	}
	if len(s.free) < bulkMinRead {
		s.free = make([]byte, bulkBlock)
	}
	return s.free
}

// Chunk turns the n bytes just read into Buf() into a chunk of their own
// (its capacity ends with it, so an append by a holder can never reach the
// next chunk) and picks the mode of the next read.
func (s *Slab) Chunk(n int) []byte {
	var c []byte
	if s.bulk {
		c = s.free[:n:n]
		s.free = s.free[n:]
	} else {
		if len(s.free) < n {
			s.free = make([]byte, smallBlock)
		}
		c = s.free[:n:n]
		copy(c, s.small[:n])
		s.free = s.free[n:]
	}
	wasBulk := s.bulk
	s.bulk = n >= smallRead
	if wasBulk && !s.bulk && cap(s.free) > smallBlock {
		s.free = nil // quiet again: let the large block go with its chunks
	}
	return c
}
