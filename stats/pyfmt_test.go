package stats

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"

	"github.com/cicada-load/cicada/internal/pyrepr"
)

type reprInput struct {
	Floats      []string  `json:"floats"`
	Strings     []string  `json:"strings"`
	Percentiles []float64 `json:"percentiles"`
}

type reprOutput struct {
	Floats   []string `json:"floats"`
	Strings  []string `json:"strings"`
	Readable []string `json:"readable"`
	Fixed2   []string `json:"fixed2"`
	Fixed6   []string `json:"fixed6"`
}

func reprInputs() (reprInput, []float64) {
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.5, 1.5, 2.5, 12, 100, 1e15, 1e16, 1.5e16, 9999999999999998,
		1e-4, 1e-5, 0.00012345, 0.000012345, 123456789012345678, 1e22, 1e100, 1e-100, 5e-324,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN(),
		4.0535620968600465, 1.230483999961507, 57.025000265746314, 0.125, 0.375, 2.675, 1.005, 0.045,
		1796011107.2996438, 1796011006.2499998, 99.5, 145, 0.015625}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 400 {
		fs = append(fs, math.Float64frombits(rng.Uint64()))
	}
	for range 400 {
		fs = append(fs, rng.Float64()*math.Pow(10, float64(rng.IntN(40)-20)))
	}
	for range 200 {
		fs = append(fs, float64(rng.IntN(100000))/float64(1+rng.IntN(1000)))
	}
	in := reprInput{
		Strings: []string{"", "a", "it's", `say "hi"`, `both ' and "`, `back\slash`, "tab\tnl\ncr\r", "\x00\x01\x1f\x7f",
			"ünïcödé 路径", "\u00a0nbsp", "\u200bzw", "\ufeffbom", "emoji 😀", "e\u0301", "\u2028\u2029", "\U000e0001", "\u0085",
			"CatchResponseError('Got 200 but I wanted something else')",
			`HTTPError("501 Server Error: Unsupported method ('POST') for url: /index.html")`},
		Percentiles: PercentilesToReport,
	}
	in.Percentiles = append(append([]float64{}, PercentilesToReport...), 0.1, 0.333, 0.12345678, 0.999999, 0.05, 0.0001, 0.29)
	for _, f := range fs {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], math.Float64bits(f))
		in.Floats = append(in.Floats, hex.EncodeToString(b[:]))
	}
	return in, fs
}

// TestGoldenPythonRepr compares pyrepr.Float, pyrepr.String, ReadablePercentile
// and the fixed-point formats with Python's, from the committed golden
// testdata/golden/python_repr.json and, when Locust's Python is installed,
// from a live run (required under CI=true).
func TestGoldenPythonRepr(t *testing.T) {
	in, fs := reprInputs()
	const golden = "testdata/golden/python_repr.json"
	run := func() []byte {
		raw, _ := json.Marshal(in)
		cmd := exec.Command(pythonPath, "testdata/python_repr.py")
		cmd.Stdin = bytes.NewReader(raw)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("python_repr.py: %v\n%s", err, stderr.String())
		}
		return out
	}
	if *update {
		if err := os.WriteFile(golden, run(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, raw []byte) {
		var want reprOutput
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if len(want.Floats) != len(fs) || len(want.Strings) != len(in.Strings) || len(want.Readable) != len(in.Percentiles) {
			t.Fatalf("%s: golden has other inputs; run with -update", what)
		}
		for i, f := range fs {
			if got := pyrepr.Float(f); got != want.Floats[i] {
				t.Errorf("%s: pyrepr.Float(%v) = %q; want %q", what, f, got, want.Floats[i])
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			if got := pyFixed(f, 2); got != want.Fixed2[i] {
				t.Errorf("%s: pyFixed(%v, 2) = %q; want %q", what, f, got, want.Fixed2[i])
			}
			if got := pyFixed(f, 6); got != want.Fixed6[i] {
				t.Errorf("%s: pyFixed(%v, 6) = %q; want %q", what, f, got, want.Fixed6[i])
			}
		}
		for i, s := range in.Strings {
			if got := pyrepr.String(s); got != want.Strings[i] {
				t.Errorf("%s: pyrepr.String(%q) = %q; want %q", what, s, got, want.Strings[i])
			}
		}
		for i, p := range in.Percentiles {
			if got := ReadablePercentile(p); got != want.Readable[i] {
				t.Errorf("%s: ReadablePercentile(%v) = %q; want %q", what, p, got, want.Readable[i])
			}
		}
	}
	raw, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	check("committed golden", raw)
	if !*update && pythonLocust(t) {
		check("Python now", run())
	}
}

func TestErrorKey(t *testing.T) {
	// Captured from a Locust 2.12.1 worker (locust/stats.py,
	// StatsError.create_key).
	got := ErrorKey("GET", "api", "CatchResponseError('custom failure')")
	const want = "013216903189cb1cf406e878bf77561087f47dfe858494c93b3211e82b183454"
	if got != want {
		t.Errorf("ErrorKey = %s; want %s", got, want)
	}
}

func TestMaskAddress(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"<Foo object at 0x7f3a2b1c> and 0x7f3a2b1c again", "<Foo object at 0x....> and 0x.... again"},
		{"object at 0x123 without end", "object at 0x123 without end"},
		{"x object at 0x>", "x object at 0x....>"},
	}
	for _, tt := range tests {
		if got := maskAddress(tt.in); got != tt.want {
			t.Errorf("maskAddress(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
