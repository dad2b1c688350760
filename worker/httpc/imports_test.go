package httpc

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the HTTP client below the stats layer: of cicada's
// packages it may import only protocol (the failure kinds' table) and
// internal ones (pyrepr for Python-style error texts).
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(path, "github.com/cicada-load/cicada/"); ok && rest != "protocol" && !strings.HasPrefix(rest, "internal/") {
				t.Errorf("%s imports %s; want only protocol and internal/ of cicada's packages", name, path)
			}
		}
	}
}
