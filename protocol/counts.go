package protocol

import (
	"cmp"
	"slices"
)

// Count is one key of a stats map with its count: a response-time bucket
// (ms) with its number of requests, or a unix second with its number of
// requests or failures. StatsEntry holds its stats maps as []Count.
type Count struct {
	Key, N int64
}

// Counts returns the pairs of m in ascending key order, the form Decode
// gives the stats maps; nil for an empty map.
func Counts(m map[int64]int64) []Count {
	if len(m) == 0 {
		return nil
	}
	c := make([]Count, 0, len(m))
	for k, n := range m {
		c = append(c, Count{k, n})
	}
	slices.SortFunc(c, func(a, b Count) int { return cmp.Compare(a.Key, b.Key) })
	return c
}

// CountMap returns pairs as a map; of pairs with the same key the last one
// wins, as in a Python dict. It returns nil for no pairs.
func CountMap(pairs []Count) map[int64]int64 {
	if len(pairs) == 0 {
		return nil
	}
	m := make(map[int64]int64, len(pairs))
	for _, p := range pairs {
		m[p.Key] = p.N
	}
	return m
}

// CountsSorted reports whether the keys of pairs are strictly ascending, as
// Decode and DecodePooled make them.
func CountsSorted(pairs []Count) bool {
	for i := 1; i < len(pairs); i++ {
		if pairs[i].Key <= pairs[i-1].Key {
			return false
		}
	}
	return true
}

// canonCounts makes pairs strictly ascending in place, as a map holding them
// would be (of equal keys the last one wins), and returns the shortened
// slice. Pairs that are already strictly ascending are returned unchanged.
func canonCounts(pairs []Count) []Count {
	if CountsSorted(pairs) {
		return pairs
	}
	if len(pairs) <= 32 {
		// Insertion sort: stable, and quick on Locust's short maps.
		for i := 1; i < len(pairs); i++ {
			p := pairs[i]
			j := i
			for j > 0 && pairs[j-1].Key > p.Key {
				pairs[j] = pairs[j-1]
				j--
			}
			pairs[j] = p
		}
	} else {
		slices.SortStableFunc(pairs, func(a, b Count) int { return cmp.Compare(a.Key, b.Key) })
	}
	out := pairs[:0]
	for i, p := range pairs {
		if i+1 < len(pairs) && pairs[i+1].Key == p.Key {
			continue // a later pair has the same key
		}
		out = append(out, p)
	}
	return out
}
