package oidc

import (
	"context"
	"strconv"
	"sync"
)

// MemRecords keeps records in memory: tests, and the seam's reference.
// Stores sharing one MemRecords behave as gateways sharing a directory.
type MemRecords struct {
	mu   sync.Mutex
	recs map[string][]byte
	ver  uint64
}

// NewMemRecords is an empty MemRecords.
func NewMemRecords() *MemRecords { return &MemRecords{recs: map[string][]byte{}} }

// Load returns a copy of the map (the records' slices are never changed
// in place: Put stores a copy).
func (m *MemRecords) Load(context.Context) (map[string][]byte, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]byte, len(m.recs))
	for n, b := range m.recs {
		out[n] = b
	}
	return out, strconv.FormatUint(m.ver, 10), nil
}

// Put stores a copy of data.
func (m *MemRecords) Put(_ context.Context, name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[name] = append([]byte(nil), data...)
	m.ver++
	return nil
}

// Delete removes the records.
func (m *MemRecords) Delete(_ context.Context, names ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range names {
		if _, ok := m.recs[n]; ok {
			delete(m.recs, n)
			m.ver++
		}
	}
	return nil
}

// Where says the record is in memory.
func (m *MemRecords) Where(name string) string { return "memory, " + name }
