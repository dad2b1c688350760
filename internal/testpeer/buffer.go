package testpeer

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer that is safe for concurrent use: the
// output of loggers, child processes and Options.Stderr in tests. The zero
// value is empty and ready to use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
