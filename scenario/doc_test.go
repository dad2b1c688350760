package scenario

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// docFile is the scenario reference checked against the parser.
const docFile = "../doc/scenario.md"

// extraKeys are YAML keys the parser reads in a way parserKeys does not
// see (not in a `switch key`/`switch k` over string cases). Add a key
// here if you parse it otherwise; keys read with p.fields and a
// `switch key { case "...": }` are found on their own.
var extraKeys = []string{"each"} // correlate.go: each reads it before the generator

// notKeys are string cases of such switches that are not YAML keys.
var notKeys = []string{}

// docFeedFiles are the feed files the reference's examples name.
var docFeedFiles = map[string]string{
	"accounts.csv": "username,password\nann,a1\nbob,b2\n",
	"orders.jsonl": `{"id": 1}` + "\n" + `{"id": 2}` + "\n",
}

// parserKeys returns the string cases of every `switch key` or `switch k`
// in the package's non-test files: the YAML keys p.fields callbacks accept.
func parserKeys(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok {
				return true
			}
			id, ok := sw.Tag.(*ast.Ident)
			if !ok || (id.Name != "key" && id.Name != "k") {
				return true
			}
			for _, st := range sw.Body.List {
				for _, e := range st.(*ast.CaseClause).List {
					if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						seen[s] = true
					}
				}
			}
			return true
		})
	}
	for _, k := range extraKeys {
		seen[k] = true
	}
	for _, k := range notKeys {
		delete(seen, k)
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestDocReference: every key the parser accepts is named in the
// reference (in backquotes) and used in one of its examples, and every
// example loads.
func TestDocReference(t *testing.T) {
	data, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	blocks := yamlBlock.FindAllStringSubmatch(doc, -1)
	if len(blocks) < 5 {
		t.Fatalf("only %d yaml examples in %s", len(blocks), docFile)
	}
	dir := t.TempDir()
	cert, key := docCertificate(t)
	files := map[string]string{"ca.pem": cert, "client.pem": cert, "client.key": key}
	for name, content := range docFeedFiles {
		files[name] = content
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var examples strings.Builder
	for i, b := range blocks {
		path := filepath.Join(dir, "example"+strconv.Itoa(i)+".yaml")
		if err := os.WriteFile(path, []byte(b[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err != nil {
			t.Errorf("example %d of %s does not load: %v\n%s", i+1, docFile, err, b[1])
		}
		examples.WriteString(b[1])
	}
	keys := parserKeys(t)
	if len(keys) < 40 {
		t.Fatalf("found only %d parser keys: %v", len(keys), keys)
	}
	for _, k := range keys {
		if !strings.Contains(doc, "`"+k+"`") && !strings.Contains(doc, "`"+k+":") {
			t.Errorf("%s does not name the key %q (in backquotes)", docFile, k)
		}
		used := regexp.MustCompile(`(^|[\s{,\[])"?` + regexp.QuoteMeta(k) + `"?:`)
		if !used.MatchString(examples.String()) {
			t.Errorf("no example in %s uses the key %q", docFile, k)
		}
	}
}

// docCertificate returns a self-signed certificate and its key in PEM, for
// the TLS example's files.
func docCertificate(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gw.example"},
		DNSNames: []string{"gw.example"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
}
