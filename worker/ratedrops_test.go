package worker

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/stats"
)

// namedRec is a rateRec that also counts drops by name.
type namedRec struct {
	rateRec
	mu2    sync.Mutex
	byName map[dropKey]int64
}

func (r *namedRec) AddDroppedFor(method, name string, n int64) {
	r.mu2.Lock()
	defer r.mu2.Unlock()
	if r.byName == nil {
		r.byName = map[dropKey]int64{}
	}
	r.byName[dropKey{method, name}] += n
	r.dropped.Add(n)
}

func mixOf(shares map[string]float64) []dropShare {
	var mix []dropShare
	for _, name := range []string{"/a", "/b", "/c", "/d"} {
		if s, ok := shares[name]; ok {
			mix = append(mix, dropShare{key: dropKey{"GET", name}, share: s})
		}
	}
	return mix
}

func TestApportion(t *testing.T) {
	tests := []struct {
		name   string
		shares map[string]float64
		rounds []int64
		want   [][]int64 // gives per round, in mix order
	}{
		{"one task knows it", map[string]float64{"/a": 1}, []int64{5, 1, 3}, [][]int64{{5}, {1}, {3}}},
		{"3:1 one at a time", map[string]float64{"/a": 0.75, "/b": 0.25}, []int64{1, 1, 1, 1}, [][]int64{{1, 0}, {1, 0}, {0, 1}, {1, 0}}},
		{"3:1 in bulk", map[string]float64{"/a": 0.75, "/b": 0.25}, []int64{400}, [][]int64{{300, 100}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a dropAttributor
			for i, n := range tt.rounds {
				mix := a.apportion(n, mixOf(tt.shares))
				got := make([]int64, len(mix))
				for j := range mix {
					got[j] = mix[j].give
				}
				if !reflect.DeepEqual(got, tt.want[i]) {
					t.Errorf("round %d (%d drops): %v; want %v", i, n, got, tt.want[i])
				}
			}
		})
	}
	// Thirds: ties go either way, the carried fractions even them out.
	var th dropAttributor
	sum := map[string]int64{}
	for range 3 {
		for _, s := range th.apportion(2, mixOf(map[string]float64{"/a": 1.0 / 3, "/b": 1.0 / 3, "/c": 1.0 / 3})) {
			sum[s.key.name] += s.give
		}
	}
	if want := map[string]int64{"/a": 2, "/b": 2, "/c": 2}; !reflect.DeepEqual(sum, want) {
		t.Errorf("thirds after 6 drops: %v; want %v", sum, want)
	}
	var a dropAttributor
	if mix := a.apportion(4, nil); len(mix) != 1 || mix[0].give != 4 || mix[0].key != (dropKey{DroppedTaskMethod, DroppedUnattributed}) {
		t.Errorf("no mix: %+v", mix)
	}
}

// TestApportionProperties: whatever the shares and round sizes, each round
// gives exactly its drops, and each name's running count stays within one
// of its exact share of the drops so far; a changed mix forgets the
// fractions of names that left it.
func TestApportionProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var a dropAttributor
		k := 1 + rng.IntN(4)
		names := []string{"/a", "/b", "/c", "/d"}[:k]
		shares := map[string]float64{}
		var sum float64
		for _, n := range names {
			shares[n] = rng.Float64() + 0.01
			sum += shares[n]
		}
		for n := range shares {
			shares[n] /= sum
		}
		got := map[string]int64{}
		var total int64
		for range 30 {
			n := 1 + rng.Int64N(50)
			total += n
			mix := a.apportion(n, mixOf(shares))
			var given int64
			for _, s := range mix {
				if s.give < 0 {
					t.Fatalf("trial %d: negative give %+v", trial, s)
				}
				given += s.give
				got[s.key.name] += s.give
			}
			if given != n {
				t.Fatalf("trial %d: gave %d of %d", trial, given, n)
			}
			for _, name := range names {
				if d := math.Abs(float64(got[name]) - shares[name]*float64(total)); d >= 1+1e-9 {
					t.Fatalf("trial %d: %s has %d of %d drops, share %v: off by %v", trial, name, got[name], total, shares[name], d)
				}
			}
		}
	}
	var a dropAttributor
	a.apportion(1, mixOf(map[string]float64{"/a": 0.5, "/b": 0.5}))
	a.apportion(1, mixOf(map[string]float64{"/c": 1}))
	if _, kept := a.credit[dropKey{"GET", "/b"}]; kept || len(a.credit) != 1 {
		t.Errorf("credits after the mix changed: %v", a.credit)
	}
}

func TestTaskMix(t *testing.T) {
	noop := func(context.Context, *User) error { return nil }
	get := func(path, name string) []Request {
		r := Request{}
		r.HTTP.Path, r.HTTP.Name = path, name
		return []Request{r}
	}
	post := get("/b", "")
	post[0].HTTP.Method = "POST"
	a := &UserClass{Name: "A", Wait: Constant(time.Hour), Tasks: []Task{
		{Name: "t1", Weight: 3, Requests: append(get("/a?id=1", "/a"), get("/second", "")...)},
		{Name: "compute", Weight: 1, Fn: noop},
	}}
	b := &UserClass{Name: "B", Wait: Constant(time.Hour), Sequential: true, Tasks: []Task{
		{Weight: 2, Requests: post},
		{Fn: noop}, // no name: named by class and index
	}}
	p, _ := newTestPool(t, a, b)
	_, bt := p.apply(map[string]int64{"A": 2, "B": 1})
	bt.start()
	waitFor(t, 5*time.Second, "users", func() bool { return p.nLive.Load() == 3 })
	pc := newPacer(p, &rateRec{}, nil)
	got := map[dropKey]float64{}
	for _, s := range pc.taskMix(nil) {
		got[s.key] = s.share
	}
	want := map[dropKey]float64{
		{"GET", "/a"}:                   2.0 / 3 * 3 / 4,
		{DroppedTaskMethod, "compute"}:  2.0 / 3 * 1 / 4,
		{"POST", "/b"}:                  1.0 / 3 * 2 / 3,
		{DroppedTaskMethod, "B task 1"}: 1.0 / 3 * 1 / 3,
	}
	if len(got) != len(want) {
		t.Fatalf("mix %v; want %v", got, want)
	}
	for k, w := range want {
		if math.Abs(got[k]-w) > 1e-12 {
			t.Errorf("%v: share %v; want %v", k, got[k], w)
		}
	}
	if mix := newPacer(nil, &rateRec{}, nil).taskMix(nil); len(mix) != 0 {
		t.Errorf("mix without a pool: %v", mix)
	}
}

// TestTaskMixBeforeUsers: before the spawn's users exist, the scenario's
// classes by weight; with every task filtered out, nothing.
func TestTaskMixBeforeUsers(t *testing.T) {
	noop := func(context.Context, *User) error { return nil }
	a := &UserClass{Name: "A", Weight: 3, Tasks: []Task{{Name: "x", Fn: noop}}}
	b := &UserClass{Name: "B", Tasks: []Task{{Name: "y", Fn: noop, Tags: []string{"slow"}}}}
	p, _ := newTestPool(t, a, b)
	pc := newPacer(p, &rateRec{}, nil)
	got := map[dropKey]float64{}
	for _, s := range pc.taskMix(nil) {
		got[s.key] = s.share
	}
	if want := map[dropKey]float64{{DroppedTaskMethod, "x"}: 0.75, {DroppedTaskMethod, "y"}: 0.25}; !reflect.DeepEqual(got, want) {
		t.Errorf("mix before users: %v; want %v", got, want)
	}
	for _, cc := range p.defs {
		cc.table.Store(buildTable(cc.def, tagFilter{tags: []string{"none"}}))
	}
	if mix := pc.taskMix(nil); len(mix) != 0 {
		t.Errorf("mix with every task filtered out: %v", mix)
	}
}

// TestPacerDropsByName: a round whose iterations find every user busy
// counts them by the name of the one task, and in the stats report.
func TestPacerDropsByName(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	p, pc, _ := newRatePool(t, 3, release)
	rec := &namedRec{}
	pc.rec = rec
	p.env.rec = rec
	const anchor = int64(1_000_000_000_000)
	pc.anchor = anchor
	pc.now = func() time.Time { return time.Unix(0, anchor+int64(time.Second)) }
	pc.mu.Lock()
	starts, dropped, _ := pc.roundLocked(anchor+int64(time.Second), nil)
	pc.mu.Unlock()
	for _, u := range starts {
		go u.step()
	}
	pc.countDropped(dropped)
	if dropped != 8 || pc.dropped.Load() != 8 {
		t.Fatalf("dropped %d (pacer %d); want 8", dropped, pc.dropped.Load())
	}
	rec.mu2.Lock()
	defer rec.mu2.Unlock()
	if want := map[dropKey]int64{{DroppedTaskMethod, "t"}: 8}; !reflect.DeepEqual(rec.byName, want) {
		t.Errorf("by name %v; want %v", rec.byName, want)
	}

	// The stats recorder sends them.
	sr := stats.NewRecorder(nil)
	pc.rec = sr
	pc.countDropped(2)
	rep := sr.Report(nil, 1)
	if rep.Dropped != 2 || len(rep.DroppedBy) != 1 || rep.DroppedBy[0].Name != "t" || rep.DroppedBy[0].Method != DroppedTaskMethod {
		t.Errorf("report: %d %+v", rep.Dropped, rep.DroppedBy)
	}
}

// A recorder without per-name counts still gets the total.
func TestPacerDropsTotalOnly(t *testing.T) {
	rec := &rateRec{}
	pc := newPacer(nil, rec, nil)
	pc.countDropped(3)
	if rec.dropped.Load() != 3 || pc.dropped.Load() != 3 {
		t.Errorf("recorder %d, pacer %d; want 3", rec.dropped.Load(), pc.dropped.Load())
	}
}

func BenchmarkCountDropped(b *testing.B) {
	a := &UserClass{Name: "A", Wait: Constant(time.Hour), Tasks: []Task{
		{Name: "x", Weight: 3, Fn: func(context.Context, *User) error { return nil }},
		{Name: "y", Weight: 1, Fn: func(context.Context, *User) error { return nil }},
	}}
	p, _ := newTestPool(b, a)
	_, bt := p.apply(map[string]int64{"A": 100})
	bt.start()
	pc := newPacer(p, stats.NewRecorder(nil), nil)
	b.ReportAllocs()
	for b.Loop() {
		pc.countDropped(3)
	}
}
