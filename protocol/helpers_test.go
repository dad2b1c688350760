package protocol

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicada-load/cicada/internal/pyrepr"
	"github.com/cicada-load/cicada/internal/testpeer"
)

// frame is one captured ZeroMQ payload from testdata/locust-frames, recorded
// by a relay between real Locust masters and workers (2.12.1 and HEAD).
type frame struct {
	File    string `json:"-"`
	Line    int    `json:"-"`
	Dir     string `json:"dir"`
	Ident   string `json:"ident"`
	Hex     string `json:"hex"`
	Decoded string `json:"decoded"` // Python repr of the unpacked payload
	Typed   string `json:"typed"`
	payload []byte
}

func (f frame) name() string { return filepath.Base(f.File) + ":" + strconv.Itoa(f.Line) }

// loadFrames reads every captured frame.
func loadFrames(tb testing.TB) []frame {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "locust-frames", "*.jsonl"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no captured frames in testdata/locust-frames: %v", err)
	}
	sort.Strings(files)
	var out []frame
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		line := 0
		for sc.Scan() {
			line++
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			var f frame
			if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
				tb.Fatalf("%s:%d: %v", file, line, err)
			}
			f.File, f.Line = file, line
			if f.payload, err = hex.DecodeString(f.Hex); err != nil {
				tb.Fatalf("%s:%d: %v", file, line, err)
			}
			out = append(out, f)
		}
		if err := sc.Err(); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// raceEnabled: under the race detector sync.Pool drops items on purpose, so
// allocation counts are not meaningful.
const raceEnabled = testpeer.RaceEnabled

// pythonMsgpack returns the path of a Python with the msgpack module, the
// unpacker Locust uses. Without one the test fails when CI=true and is
// skipped otherwise.
func pythonMsgpack(t *testing.T) string {
	t.Helper()
	return testpeer.RequirePython(t, "msgpack")
}

// pyPair is one comparison for testdata/pycompare.py: the original payload
// and our re-encoding.
type pyPair struct {
	ID string `json:"id"`
	A  string `json:"a"`
	B  string `json:"b"`
}

type pyMismatch struct {
	ID  string `json:"id"`
	A   string `json:"a"`
	B   string `json:"b"`
	Why string `json:"why"`
}

// comparePython runs one Python process over all pairs and returns the
// mismatches it reports.
func comparePython(t *testing.T, pairs []pyPair) []pyMismatch {
	t.Helper()
	py := pythonMsgpack(t)
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, p := range pairs {
		if err := enc.Encode(p); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "pycompare.py"))
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pycompare.py: %v\n%s", err, stderr.String())
	}
	var res []pyMismatch
	done := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, "DONE ") {
			if got, want := strings.TrimPrefix(line, "DONE "), strconv.Itoa(len(pairs)); got != want {
				t.Fatalf("pycompare.py read %s pairs; want %s", got, want)
			}
			done = true
			continue
		}
		var m pyMismatch
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("pycompare.py output %q: %v", line, err)
		}
		res = append(res, m)
	}
	if !done {
		t.Fatalf("pycompare.py did not finish: %s\n%s", out, stderr.String())
	}
	return res
}

// deepEqual is reflect.DeepEqual except that floats compare by bits (so NaN
// equals NaN and -0 differs from 0, as on the wire) and times compare by
// instant and location name.
func deepEqual(a, b any) bool {
	return valueEqual(reflect.ValueOf(a), reflect.ValueOf(b))
}

var timeType = reflect.TypeOf(time.Time{})

func valueEqual(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Type() != b.Type() {
		return false
	}
	if a.Type() == timeType {
		ta, tb := a.Interface().(time.Time), b.Interface().(time.Time)
		return ta.Equal(tb) && ta.Location().String() == tb.Location().String()
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return valueEqual(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !valueEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		it := a.MapRange()
		for it.Next() {
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() || !valueEqual(it.Value(), bv) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !valueEqual(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

func pyOptFloat(f *float64) string {
	if f == nil {
		return "None"
	}
	return pyrepr.Float(*f)
}

// pyScalar is Python's repr() of a plain scalar or list value; ok is false
// for maps, whose key order Go does not keep.
func pyScalar(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "None", true
	case bool:
		if v {
			return "True", true
		}
		return "False", true
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	case float64:
		return pyrepr.Float(v), true
	case string:
		return pyrepr.String(v), true
	case time.Time:
		return "{'__datetime__': True, 'as_str': " + pyrepr.String(v.Format(DateTimeLayout)) + "}", true
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			s, ok := pyScalar(x)
			if !ok {
				return "", false
			}
			parts[i] = s
		}
		return "[" + strings.Join(parts, ", ") + "]", true
	}
	return "", false
}

// pyEntries returns "key: value" reprs for every scalar entry of a plain map,
// recursing into nested maps.
func pyEntries(v any) []string {
	var out []string
	add := func(k, val any) {
		ks, _ := pyScalar(k)
		if s, ok := pyScalar(val); ok {
			out = append(out, ks+": "+s)
		} else {
			out = append(out, pyEntries(val)...)
		}
	}
	switch m := v.(type) {
	case map[string]any:
		for k, val := range m {
			add(k, val)
		}
	case map[any]any:
		for k, val := range m {
			add(k, val)
		}
	}
	return out
}

// runtimeMem samples the cumulative bytes allocated by the process.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.total = ms.TotalAlloc
}
