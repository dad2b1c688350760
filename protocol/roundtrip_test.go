package protocol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// gen builds random Messages in canonical form: the form Decode produces
// (empty typed maps and lists are nil, -1 means "absent", ...), so that
// Decode(Encode(m)) must equal m exactly.
type gen struct{ r *rand.Rand }

func (g gen) n(k int) int { return g.r.IntN(k) }

func (g gen) str() string {
	alphabet := []string{"a", "Z", "/", "_", " ", "'", `"`, "\\", "\n", "é", "日本", "🙂", "\x00", "GET"}
	n := g.n(12)
	if g.n(20) == 0 {
		n = 40 + g.n(300) // str8 and str16 lengths
	}
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, alphabet[g.n(len(alphabet))]...)
	}
	return string(b)
}

func (g gen) int() int64 {
	switch g.n(6) {
	case 0:
		return int64(g.n(256)) - 128
	case 1:
		return int64(g.r.Uint64())
	case 2:
		return []int64{0, -1, 127, 128, -32, -33, math.MaxInt64, math.MinInt64, 1 << 32, math.MaxUint32}[g.n(10)]
	default:
		return int64(g.n(100000))
	}
}

func (g gen) count() int64 { return int64(g.n(1 << 20)) }

func (g gen) float() float64 {
	switch g.n(8) {
	case 0:
		return []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64,
			math.MaxFloat64, 1796011105.4425347}[g.n(8)]
	case 1:
		return float64(g.int())
	default:
		return g.r.NormFloat64() * 1000
	}
}

// stat is a float a stats report may hold (ErrOutOfRange): finite, ≥ 0.
func (g gen) stat() float64 {
	switch g.n(8) {
	case 0:
		return []float64{0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, math.MaxFloat64, 1796011105.4425347}[g.n(5)]
	case 1:
		return float64(g.count())
	default:
		return math.Abs(g.r.NormFloat64() * 1000)
	}
}

func (g gen) optStat() *float64 {
	if g.n(3) == 0 {
		return nil
	}
	return fp(g.stat())
}

func (g gen) optFloat() *float64 {
	if g.n(3) == 0 {
		return nil
	}
	return fp(g.float())
}

func (g gen) optStr() *string {
	if g.n(3) == 0 {
		return nil
	}
	return sp(g.str())
}

func (g gen) absent(v int64) int64 {
	if g.n(3) == 0 {
		return -1
	}
	return v
}

func (g gen) classes() map[string]int64 {
	n := g.n(4)
	if n == 0 {
		return nil
	}
	m := map[string]int64{}
	for i := 0; i < n; i++ {
		m[g.str()] = g.count()
	}
	return m
}

func (g gen) counts(keys func() int64) []Count {
	n := g.n(25)
	if n == 0 {
		return nil
	}
	m := map[int64]int64{}
	for i := 0; i < n; i++ {
		m[keys()] = g.count()
	}
	return Counts(m)
}

func (g gen) entry() StatsEntry {
	e := StatsEntry{
		Name: g.str(), Method: g.optStr(), LastRequestTimestamp: g.optStat(), StartTime: g.stat(),
		NumRequests: g.count(), NumNoneRequests: g.count(), NumFailures: g.count(),
		TotalResponseTime: g.stat(), MaxResponseTime: g.stat(), MinResponseTime: g.optStat(),
		TotalContentLength: max(g.int(), 0),
		ResponseTimes:      g.counts(func() int64 { return int64(g.n(12000)) }),
		NumReqsPerSec:      g.counts(func() int64 { return 1796011105 + int64(g.n(5)) }),
		NumFailPerSec:      g.counts(func() int64 { return max(g.int(), 0) }),
	}
	if g.n(3) == 0 {
		e.Exact = make([]byte, g.n(300))
		for i := range e.Exact {
			e.Exact[i] = byte(g.n(256))
		}
	}
	return e
}

// plain returns a random plain value (see FORMAT.md) nested at most depth.
func (g gen) plain(depth int) any {
	k := g.n(13)
	if depth <= 0 {
		k = g.n(8)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return g.n(2) == 0
	case 2:
		return g.int()
	case 3:
		return uint64(math.MaxInt64) + 1 + uint64(g.n(1000))
	case 4:
		return g.float()
	case 5:
		return g.str()
	case 6:
		return []byte(g.str())
	case 7:
		us := g.r.Int64N(253402300799 - (-62135596800))
		return time.Unix(-62135596800+us, int64(g.n(1000000))*1000).UTC()
	case 8, 9:
		a := make([]any, g.n(5))
		for i := range a {
			a[i] = g.plain(depth - 1)
		}
		return a
	case 10, 11:
		m := map[string]any{}
		for i := g.n(5); i > 0; i-- {
			m[g.str()] = g.plain(depth - 1)
		}
		return m
	default:
		m := map[any]any{g.int(): g.plain(depth - 1)} // at least one non-str key
		for i := g.n(5); i > 0; i-- {
			var key any
			switch g.n(6) {
			case 0:
				key = nil
			case 1:
				key = g.n(2) == 0
			case 2:
				if f := g.float(); !math.IsNaN(f) {
					key = f
				}
			case 3:
				key = uint64(math.MaxUint64) - uint64(g.n(5))
			default:
				key = g.str()
			}
			m[key] = g.plain(depth - 1)
		}
		return m
	}
}

func (g gen) stringMap(depth int) map[string]any {
	m := map[string]any{}
	for i := 1 + g.n(6); i > 0; i-- {
		m[g.str()] = g.plain(depth)
	}
	return m
}

func (g gen) message() Message {
	m := Message{NodeID: g.str()}
	switch g.n(17) {
	case 0:
		m.Type = TypeClientReady
		if g.n(2) == 0 {
			m.Data = &ClientReady{VersionSkipCheck: true}
		} else {
			m.Data = &ClientReady{Version: g.str()}
		}
	case 1:
		m.Type, m.Data = TypeAck, &Ack{Index: g.absent(g.int())}
	case 2:
		hb := &Heartbeat{State: g.str(), CPUUsage: g.float(), MemoryUsage: g.absent(g.int())}
		if g.n(2) == 0 {
			hb.Connections = &ConnCounters{Open: g.int(), Established: g.int(), Connects: g.count(), Reconnects: g.count(),
				Closes: g.classes(), ConnectErrors: g.classes(), Errors: g.classes()}
			if g.n(2) == 0 {
				c := hb.Connections
				c.TLSHandshakes, c.TLSResumed, c.TLSHandshakeMicros, c.H2GoAways, c.H2ResetStreams = g.count(), g.count(), g.count(), g.count(), g.count()
			}
		}
		m.Type, m.Data = TypeHeartbeat, hb
	case 3:
		m.Type, m.Data = TypeHeartbeat, &MasterHeartbeat{}
	case 4:
		s := &Spawn{Timestamp: g.float(), UserClassesCount: g.classes(), Host: g.optStr(), StopTimeout: g.optFloat()}
		if g.n(2) == 0 {
			s.ParsedOptions = g.stringMap(3)
		}
		m.Type, m.Data = TypeSpawn, s
	case 5:
		m.Type, m.Data = TypeSpawningComplete, &SpawningComplete{UserClassesCount: g.classes(), UserCount: g.absent(g.int())}
	case 6:
		m.Type, m.Data = TypeSpawningComplete, &MasterSpawningComplete{UserCount: g.int()}
	case 7, 8:
		r := &StatsReport{Total: g.entry(), UserClassesCount: g.classes(), UserCount: g.absent(g.count())}
		for i := g.n(6); i > 0; i-- {
			r.Stats = append(r.Stats, g.entry())
		}
		if n := g.n(4); n > 0 {
			r.Errors = map[string]StatsError{}
			for ; n > 0; n-- {
				r.Errors[g.str()] = StatsError{Name: g.str(), Method: g.str(), Error: g.str(), Occurrences: g.count(),
					FirstSeen: g.optStat(), LastSeen: g.optStat()}
			}
		}
		if n := g.n(4); n > 1 { // cicada's drops: total and by name
			for ; n > 1; n-- {
				c := g.count() + 1
				r.Dropped += c
				r.DroppedBy = append(r.DroppedBy, DroppedName{Method: g.str(), Name: g.str(), Count: c})
			}
		}
		m.Type, m.Data = TypeStats, r
	case 9:
		m.Type, m.Data = TypeException, &Exception{Msg: g.str(), Traceback: g.str()}
	case 10:
		l := &Logs{WorkerID: g.str()}
		for i := g.n(4); i > 0; i-- {
			l.Logs = append(l.Logs, g.str())
		}
		m.Type, m.Data = TypeLogs, l
	case 11:
		lf := &Locustfile{}
		if g.n(3) > 0 {
			lf.Data = g.stringMap(3)
		}
		m.Type, m.Data = TypeLocustfile, lf
	case 12:
		m.Type, m.Data = TypeUpdateUserClass, &UpdateUserClass{Data: g.stringMap(3)}
	case 13:
		m.Type = []string{TypeSpawning, TypeStop, TypeClientStopped, TypeQuit, TypeReconnect}[g.n(5)]
	default:
		m.Type, m.Data = "custom_"+g.str(), &Custom{Data: g.plain(4)}
	}
	return m
}

// TestRoundTripProperty: random typed messages survive Encode → Decode, and
// encoding is deterministic.
func TestRoundTripProperty(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	g := gen{rand.New(rand.NewPCG(42, 7))}
	var buf []byte
	for i := 0; i < n; i++ {
		m := g.message()
		enc, err := Encode(m)
		if err != nil {
			t.Fatalf("case %d: Encode(%+v) error: %v", i, m, err)
		}
		if buf, err = AppendEncode(buf[:0], m); err != nil || !bytes.Equal(buf, enc) {
			t.Fatalf("case %d: AppendEncode differs from Encode (err %v)", i, err)
		}
		if again, _ := Encode(m); !bytes.Equal(again, enc) {
			t.Fatalf("case %d: Encode(%+v) is not deterministic", i, m)
		}
		got, err := Decode(enc)
		if err != nil {
			t.Fatalf("case %d: Decode(Encode(%+v)) error: %v\n%x", i, m, err, enc)
		}
		if !deepEqual(got, m) {
			t.Fatalf("case %d: Decode(Encode(m)) =\n%#v\n%s; want\n%#v\n%s", i, got, dump(got.Data), m, dump(m.Data))
		}
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to a
// payload that decodes to an equal Message and re-encodes to the same bytes.
// The corpus is seeded with every captured Locust frame and the table tests.
func FuzzDecode(f *testing.F) {
	for _, fr := range loadFrames(f) {
		f.Add(fr.payload)
	}
	g := gen{rand.New(rand.NewPCG(1, 1))}
	for i := 0; i < 50; i++ {
		b, err := Encode(g.message())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "93", "90", "80", "c0", "93a0c0a0", "93a3616263c0a0c0"} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, err := Decode(payload)
		if err != nil {
			return
		}
		enc, err := Encode(m)
		if err != nil {
			t.Fatalf("Decode(%x) = %#v, but Encode fails: %v", payload, m, err)
		}
		m2, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(Decode(%x))) error: %v\nre-encoded %x", payload, err, enc)
		}
		if !deepEqual(m, m2) {
			t.Fatalf("Decode(Encode(m)) = %#v; want %#v (payload %x)", m2, m, payload)
		}
		if enc2, _ := Encode(m2); !bytes.Equal(enc, enc2) {
			t.Fatalf("re-encoding is not stable: %x then %x", enc, enc2)
		}
	})
}

// TestConcurrentUse decodes and encodes the captured frames from several
// goroutines at once (pooled state, intern tables) and expects the same
// results as sequential use. Run it with -race.
func TestConcurrentUse(t *testing.T) {
	frames := loadFrames(t)
	want := make([][]byte, len(frames))
	for i, f := range frames {
		m, err := Decode(f.payload)
		if err != nil {
			t.Fatal(err)
		}
		if want[i], err = Encode(m); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			var buf []byte
			for round := 0; round < 3; round++ {
				for i, f := range frames {
					m, err := Decode(f.payload)
					if err == nil {
						buf, err = AppendEncode(buf[:0], m)
					}
					if err == nil && !bytes.Equal(buf, want[i]) {
						err = errors.New(f.name() + ": concurrent re-encoding differs")
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestDecodeAllocs locks in the allocation budget of the master's hot
// path: a heartbeat costs its one value, and a stats report little more than
// the maps its struct is made of.
func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	hb, _ := Encode(Message{Type: TypeHeartbeat, Data: &Heartbeat{State: "running", CPUUsage: 1, MemoryUsage: 1 << 30}, NodeID: node2121})
	if a := testing.AllocsPerRun(100, func() { _, _ = Decode(hb) }); a > 1 {
		t.Errorf("Decode(heartbeat) allocs = %v; want ≤ 1", a)
	}
	st, _ := Encode(benchStatsMessage())
	if a := testing.AllocsPerRun(20, func() { _, _ = Decode(st) }); a > 400 {
		t.Errorf("Decode(stats, 50 entries) allocs = %v; want ≤ 400", a)
	}
}

func TestGeneratorSideKind(t *testing.T) {
	tests := []struct {
		kind        string
		want, known bool
	}{
		{"local ports exhausted", true, true},
		{"open-file limit", true, true},
		{"no buffer space", true, true},
		{"body too large", true, true},
		{"canceled", true, true},
		{"invalid request", true, true},
		{"client closed", true, true},
		{"other", false, true},
		{"connection refused", false, true},
		{"connection reset", false, true},
		{"EOF before response", false, true},
		{"incomplete response", false, true},
		{"connect timeout", false, true},
		{"read timeout", false, true},
		{"DNS", false, true},
		{"TLS", false, true},
		{"HTTP status", false, true},
		{"protocol error", false, true},
		{"network unreachable", false, true},
		{"TLS certificate", false, true},
		{"TLS version", false, true},
		{"TLS alert", false, true},
		{"TLS handshake timeout", false, true},
		{"", false, false},
		{"Local ports exhausted", false, false},
		{"made up", false, false},
	}
	for _, tt := range tests {
		if got := GeneratorSideKind(tt.kind); got != tt.want {
			t.Errorf("GeneratorSideKind(%q) = %v; want %v", tt.kind, got, tt.want)
		}
		if got := KnownFailureKind(tt.kind); got != tt.known {
			t.Errorf("KnownFailureKind(%q) = %v; want %v", tt.kind, got, tt.known)
		}
	}
	if n := len(failureKinds); n != 23 {
		t.Errorf("len(failureKinds) = %d; want the 23 kinds above", n)
	}
}
