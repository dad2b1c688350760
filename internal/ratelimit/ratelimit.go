// Package ratelimit limits repeated events per key, for log lines and
// messages that a peer or a user can make a process repeat without bound.
//
// A Limiter lets the first burst events of a key through (one, for New),
// suppresses (and counts) the further events of that key until the interval
// that began with the first has passed, and lets the next event after it
// through together with the count of those it suppressed. Flush reports the counts of keys that went quiet, so that no
// suppressed event goes unmentioned:
//
//	l := ratelimit.New(10*time.Second, 1024)
//	if ok, n := l.Allow("unknown-class", time.Now()); ok {
//		log.Error("spawn asks for an unknown user class", "suppressed", n)
//	}
//	// periodically:
//	for _, s := range l.Flush(time.Now()) {
//		log.Warn("similar messages suppressed", "key", s.Key, "count", s.Count)
//	}
//
// Memory is bounded by the key limit given to New: once that many keys are
// tracked, new keys share the budget of OverflowKey.
package ratelimit

import (
	"sort"
	"sync"
	"time"
)

// OverflowKey is the key under which events of new keys are counted once
// the Limiter tracks its maximum number of keys.
const OverflowKey = "(other)"

// Limiter is a per-key interval limiter. Its methods are safe for
// concurrent use. The zero value is not usable; create one with New.
type Limiter struct {
	interval time.Duration
	burst    int
	maxKeys  int

	mu struct {
		sync.Mutex
		keys       map[string]*entry
		suppressed int64 // total, for the lifetime of the Limiter
	}
}

type entry struct {
	last       time.Time // when the key's current interval began
	n          int       // events let through in that interval
	suppressed int64     // events suppressed since the last one let through
}

// Suppressed is a key and the number of its events suppressed since the
// last one let through.
type Suppressed struct {
	Key   string
	Count int64
}

// New returns a Limiter that lets one event per key through per interval
// and tracks at most maxKeys keys (at least 1; OverflowKey included). An
// interval of zero or less lets every event through.
func New(interval time.Duration, maxKeys int) *Limiter {
	return NewBurst(1, interval, maxKeys)
}

// NewBurst is New with burst events per key per interval (at least 1): an
// interval begins with a key's first event, and the burst-th event after
// it is the last let through until the interval has passed.
func NewBurst(burst int, interval time.Duration, maxKeys int) *Limiter {
	l := &Limiter{interval: interval, burst: max(burst, 1), maxKeys: max(maxKeys, 1)}
	l.mu.keys = make(map[string]*entry)
	return l
}

// Allow reports whether an event of key at now may go out and, if so, how
// many events of key were suppressed since the last one that went out (so
// the caller can say it). Keys beyond the limit given to New are counted
// under OverflowKey; the event that creates that entry carries the
// suppressed count of the key it displaced.
func (l *Limiter) Allow(key string, now time.Time) (ok bool, suppressed int64) {
	if l.interval <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.mu.keys[key]
	if e == nil && len(l.mu.keys) >= l.maxKeys {
		l.pruneLocked(now)
	}
	if e == nil && len(l.mu.keys) >= l.maxKeys {
		e = l.mu.keys[OverflowKey]
		if e == nil {
			// Make room for the overflow entry: the oldest key's
			// suppressed events are reported with this one.
			carried := l.evictOldestLocked()
			l.mu.keys[OverflowKey] = &entry{last: now, n: 1}
			return true, carried
		}
	}
	if e == nil {
		l.mu.keys[key] = &entry{last: now, n: 1}
		return true, 0
	}
	if now.Sub(e.last) >= l.interval {
		e.last, e.n = now, 0
	}
	if e.n >= l.burst {
		e.suppressed++
		l.mu.suppressed++
		return false, 0
	}
	e.n++
	n := e.suppressed
	e.suppressed = 0
	return true, n
}

// Flush returns, sorted by key, the keys whose interval has passed with
// events suppressed, with their counts, and resets those counts: the
// caller reports them as a summary. It also forgets keys that are quiet,
// which keeps the Limiter small.
func (l *Limiter) Flush(now time.Time) []Suppressed {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Suppressed
	for k, e := range l.mu.keys {
		if now.Sub(e.last) < l.interval {
			continue
		}
		if e.suppressed > 0 {
			out = append(out, Suppressed{Key: k, Count: e.suppressed})
			// The summary counts as an event that went out, and
			// begins an interval.
			e.last, e.n, e.suppressed = now, 1, 0
			continue
		}
		delete(l.mu.keys, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Total returns the number of events suppressed over the Limiter's life.
func (l *Limiter) Total() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.suppressed
}

// Len returns the number of keys tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.keys)
}

// pruneLocked forgets the keys whose interval passed with nothing
// suppressed. Precondition: l.mu held.
func (l *Limiter) pruneLocked(now time.Time) {
	for k, e := range l.mu.keys {
		if e.suppressed == 0 && now.Sub(e.last) >= l.interval {
			delete(l.mu.keys, k)
		}
	}
}

// evictOldestLocked forgets the key whose last event went out first and
// returns its suppressed count. Precondition: l.mu held.
func (l *Limiter) evictOldestLocked() int64 {
	var oldest *entry
	var key string
	for k, e := range l.mu.keys {
		if oldest == nil || e.last.Before(oldest.last) {
			key, oldest = k, e
		}
	}
	if oldest == nil {
		return 0
	}
	delete(l.mu.keys, key)
	return oldest.suppressed
}
