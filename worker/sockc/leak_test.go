package sockc

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cicada-load/cicada/internal/leakcheck"
)

// TestMain fails the run if a goroutine of this package outlives the tests.
func TestMain(m *testing.M) { leakcheck.Main(m, "worker/sockc") }

// TestImports keeps the socket client beside the HTTP client: of cicada's
// packages it imports only protocol, worker/httpc and internal ones.
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
			rest, ok := strings.CutPrefix(path, "github.com/cicada-load/cicada/")
			if ok && rest != "protocol" && rest != "worker/httpc" && !strings.HasPrefix(rest, "internal/") {
				t.Errorf("%s imports %s; want only protocol, worker/httpc and internal/", name, path)
			}
		}
	}
}
