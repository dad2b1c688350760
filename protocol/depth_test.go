package protocol

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// nestTo is a value at nesting level level (the envelope is level 1) that
// makes its payload nest exactly total levels: arrays of one element from
// level to total, around a nil.
func nestTo(level, total int) []byte {
	return append(bytes.Repeat([]byte{0x91}, total-level+1), 0xc0)
}

// TestDecodeDepthExact checks that MaxDepth is exact wherever the deepest
// value sits: a payload nesting MaxDepth levels decodes, one nesting
// MaxDepth+1 is refused. The places are those whose values the typed
// decoders skip (ignored keys, and keys that are not a str) at every level
// they occur, and plain data. The oracle (checkAgainstLibrary, with no
// slack past MaxDepth) agrees on each payload.
func TestDecodeDepthExact(t *testing.T) {
	errRow := func(kv ...[]byte) []byte {
		return mp(append([][]byte{M(5), S("name"), S("x"), S("method"), S("GET"), S("error"), S("e"),
			S("occurrences"), I(1)}, kv...)...)
	}
	withErrors := func(row []byte) []byte {
		return mp(M(4), S("stats"), A(0), S("stats_total"), entry(0), S("errors"), mp(M(1), S("k"), row),
			S("user_classes_count"), M(0))
	}
	reportWith := func(kv ...[]byte) []byte {
		return mp(append([][]byte{M(5), S("stats"), A(0), S("stats_total"), entry(0), S("errors"), M(0),
			S("user_classes_count"), M(0)}, kv...)...)
	}
	heartbeat := func(kv ...[]byte) []byte {
		return mp(append([][]byte{M(3), S("state"), S("running"), S("current_cpu_usage"), F(1)}, kv...)...)
	}
	conns := func(kv ...[]byte) []byte {
		return heartbeat(S(KeyCicadaConnections), mp(append([][]byte{M(1)}, kv...)...))
	}
	for name, build := range map[string]func(total int) []byte{
		"custom data":               func(n int) []byte { return env("x", nestTo(2, n)) },
		"report ignored value":      func(n int) []byte { return env("stats", reportWith(S("zz"), nestTo(3, n))) },
		"report non-str key":        func(n int) []byte { return env("stats", reportWith(nestTo(3, n), I(1))) },
		"stats_total ignored value": func(n int) []byte { return env("stats", report(A(0), entry(1, S("zz"), nestTo(4, n)))) },
		"stats_total non-str key":   func(n int) []byte { return env("stats", report(A(0), entry(1, nestTo(4, n), I(1)))) },
		"entry ignored value": func(n int) []byte {
			return env("stats", report(mp(A(1), entry(1, S("zz"), nestTo(5, n))), entry(0)))
		},
		"entry non-str key": func(n int) []byte {
			return env("stats", report(mp(A(1), entry(1, nestTo(5, n), I(1))), entry(0)))
		},
		"error row ignored value":   func(n int) []byte { return env("stats", withErrors(errRow(S("zz"), nestTo(5, n)))) },
		"error row non-str key":     func(n int) []byte { return env("stats", withErrors(errRow(nestTo(5, n), I(1)))) },
		"heartbeat ignored value":   func(n int) []byte { return env("heartbeat", heartbeat(S("zz"), nestTo(3, n))) },
		"heartbeat non-str key":     func(n int) []byte { return env("heartbeat", heartbeat(nestTo(3, n), I(1))) },
		"connections ignored value": func(n int) []byte { return env("heartbeat", conns(S("zz"), nestTo(4, n))) },
		"connections non-str key":   func(n int) []byte { return env("heartbeat", conns(nestTo(4, n), I(1))) },
		"ack ignored value":         func(n int) []byte { return env("ack", mp(M(1), S("zz"), nestTo(3, n))) },
		"parsed_options value": func(n int) []byte {
			return env("spawn", mp(M(1), S("parsed_options"), mp(M(1), S("a"), nestTo(4, n))))
		},
	} {
		checkAgainstLibrary(t, nil, build(MaxDepth))
		checkAgainstLibrary(t, nil, build(MaxDepth+1))
		for _, dec := range []struct {
			name string
			f    func([]byte) (Message, error)
		}{{"Decode", Decode}, {"DecodePooled", DecodePooled}} {
			m, err := dec.f(build(MaxDepth))
			if err != nil && strings.Contains(err.Error(), "nesting") {
				// Other errors (a spawn without its required keys) come
				// after the nested value was read, so it was accepted.
				t.Errorf("%s: %s refused nesting %d: %v", name, dec.name, MaxDepth, err)
			}
			if r, ok := m.Data.(*StatsReport); ok {
				r.Release()
			}
			_, err = dec.f(build(MaxDepth + 1))
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "nesting deeper than 100") {
				t.Errorf("%s: %s of nesting %d: error %v; want nesting deeper than 100", name, dec.name, MaxDepth+1, err)
			}
		}
	}
}
