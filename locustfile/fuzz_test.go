package locustfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func addCorpusSeeds(f *testing.F) {
	paths, _ := filepath.Glob("testdata/upstream/*.py")
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data))
		}
	}
	f.Add(shop)
	f.Add("x = f'{a!r:>{w}}' '''\n''' \\\n  + 1\n")
	f.Add("if x:\n\tpass\n  pass\n")
	f.Add("s = '\\x4' \"\\N{DASH}\" 0x_1 1e+ 1__0 0777\n")
}

// FuzzTokenize checks that the tokenizer never panics, ends every token
// list with EOF, and balances INDENT and DEDENT.
func FuzzTokenize(f *testing.F) {
	addCorpusSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		toks, err := tokenize("f.py", src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrSyntax) || e.Line < 1 {
				t.Fatalf("error %v is not a located syntax error", err)
			}
			return
		}
		if len(toks) == 0 || toks[len(toks)-1].Kind != tEOF {
			t.Fatalf("no EOF token")
		}
		depth := 0
		for _, tk := range toks {
			switch tk.Kind {
			case tIndent:
				depth++
			case tDedent:
				depth--
			}
			if depth < 0 {
				t.Fatalf("more dedents than indents")
			}
		}
		if depth != 0 {
			t.Fatalf("%d indents left open", depth)
		}
	})
}

// FuzzRead checks that reading any input returns a module or a located
// error, never panics, and that an accepted module's YAML is a scenario
// the reader's own translation accepts or refuses per class.
func FuzzRead(f *testing.F) {
	addCorpusSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		begin := time.Now()
		defer func() {
			// A slow input is a bug of its own (an unbounded loop or
			// exponential work); fail it so that the fuzzer keeps it.
			if d := time.Since(begin); d > 2*time.Second {
				t.Fatalf("reading %d bytes took %v", len(src), d)
			}
		}()
		m, err := Read("f.py", []byte(src))
		if err != nil {
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrNoUsers) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if !strings.Contains(err.Error(), "f.py") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		_ = m.YAML(nil)
		if _, err := Translate([]*Module{m}, nil); err != nil && !errors.Is(err, ErrNoUsers) {
			t.Fatalf("translation of an accepted module: %v", err)
		}
	})
}
