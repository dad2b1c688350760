package scenario

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func testSlots(name string) (int, bool) {
	switch name {
	case "a":
		return 0, true
	case "b", "feed.col":
		return 1, true
	}
	return 0, false
}

func testEnv(name string) (string, bool) {
	switch name {
	case "HOME_X":
		return "/h", true
	case "EMPTY":
		return "", true
	}
	return "", false
}

// TestTemplate: environment variables at load, user variables at run
// time, defaults, $$ and the errors.
func TestTemplate(t *testing.T) {
	vals := []string{"A", ""}
	for _, tc := range []struct {
		in, want string
		static   bool
		err      string
	}{
		{in: "plain", want: "plain", static: true},
		{in: "${HOME_X}/x", want: "/h/x", static: true},
		{in: "${EMPTY:-d}", want: "d", static: true},
		{in: "${EMPTY}", want: "", static: true},
		{in: "$$a $x $", want: "$a $x $", static: true},
		{in: "/o/${a}?b=${b}", want: "/o/A?b="},
		{in: "${b:-dflt}-${a:-x}", want: "dflt-A"},
		{in: "${feed.col:-c}", want: "c"},
		{in: "${HOME_X}${a}$$", want: "/hA$"},
		{in: "${NOPE}", err: "environment variable NOPE is not set, nor is it a variable"},
		{in: "${feed.nope}", err: "no feed of this user class has that column"},
		{in: "${a", err: "unterminated ${"},
		{in: "${1x}", err: `invalid variable name "1x"`},
	} {
		tm, err := compileTemplate(tc.in, testEnv, testSlots)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v; want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := string(tm.appendTo(nil, vals, appendRaw)); got != tc.want || tm.static != tc.static {
			t.Errorf("%q = %q static=%v; want %q static=%v", tc.in, got, tm.static, tc.want, tc.static)
		}
	}
}

// TestAppendJSONString: the escaped value inside quotes is valid JSON
// that decodes to the value (invalid UTF-8 becomes U+FFFD).
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\n\r\t\x00\x1f", "é€😀", "bad\xffutf8", "<&>"} {
		b := append(appendJSONString([]byte{'"'}, s), '"')
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q escaped as %s: %v", s, b, err)
		}
		if want := strings.ToValidUTF8(s, "\ufffd"); got != want {
			t.Errorf("%q escaped as %s decodes to %q", s, b, got)
		}
	}
}

// FuzzTemplate: compiling never panics; a compiled template expands to
// its constant, and JSON-escaped expansion is always a valid JSON string.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"", "/a/${a}", "${b:-x}$$", "${HOME_X}${", "${feed.col}", "$", "${a}${b}${NOPE:-z}", "\xff${a}"} {
		f.Add(s, "v\"\\\n")
	}
	f.Fuzz(func(t *testing.T, s, v string) {
		tm, err := compileTemplate(s, testEnv, testSlots)
		if err != nil {
			return
		}
		vals := []string{v, v}
		raw := string(tm.appendTo(nil, vals, appendRaw))
		if tm.static && raw != tm.text {
			t.Fatalf("static %q expands to %q, text %q", s, raw, tm.text)
		}
		if !strings.Contains(s, "$") && raw != s {
			t.Fatalf("%q without $ expands to %q", s, raw)
		}
		if !utf8.ValidString(s) {
			return
		}
		for i := range tm.segs {
			if tm.segs[i].slot < 0 {
				tm.segs[i].lit = string(appendJSONString(nil, tm.segs[i].lit))
			}
		}
		if tm.static {
			tm = template{segs: []segment{{lit: string(appendJSONString(nil, tm.text)), slot: -1}}}
		}
		b := append(tm.appendTo([]byte{'"'}, vals, appendJSONString), '"')
		if !json.Valid(b) {
			t.Fatalf("%q with %q: invalid JSON %s", s, v, b)
		}
	})
}

// TestJSONPath: the supported forms and what each finds.
func TestJSONPath(t *testing.T) {
	doc, err := decodeJSON([]byte(`{"a":{"b":[10,{"c":"x"}]},"k.e y":true,"n":null,"big":12345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
		absent     bool
		err        string
	}{
		{path: "$.a.b[0]", want: "10"},
		{path: "$.a.b[1].c", want: "x"},
		{path: "$.a.b[-1].c", want: "x"},
		{path: `$['k.e y']`, want: "true"},
		{path: `$["a"]["b"][0]`, want: "10"},
		{path: "$.n", want: ""},
		{path: "$.big", want: "12345678901234567890"},
		{path: "$.a.b", want: `[10,{"c":"x"}]`},
		{path: "$.a.b[2]", absent: true},
		{path: "$.a.b[-3]", absent: true},
		{path: "$.a.x", absent: true},
		{path: "$.a.b.c", absent: true},
		{path: "$.a[0]", absent: true},
		{path: "a.b", err: "must start with $"},
		{path: "$.", err: "empty name"},
		{path: "$.a[*]", err: "neither an index nor a quoted key"},
		{path: "$..a", err: "empty name"},
		{path: "$.a[0", err: "unterminated ["},
		{path: "$a", err: "unexpected"},
		{path: "$.*", err: "unsupported name"},
		{path: "$[?(@.a)]", err: "neither an index"},
	} {
		p, err := parseJSONPath(tc.path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, errJSONPath) {
				t.Errorf("%s: error %v; want %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		v, ok := p.lookup(doc)
		if ok == tc.absent || (ok && jsonText(v) != tc.want) {
			t.Errorf("%s = %v (%q); want %q absent=%v", tc.path, ok, jsonText(v), tc.want, tc.absent)
		}
	}
}

// FuzzJSONPath: parsing never panics, and a parsed path looks up any
// document without panicking.
func FuzzJSONPath(f *testing.F) {
	for _, s := range []string{"$", "$.a.b[0]", `$['x']`, "$[-1]", "$.a[", "$..", `$["a"][1].b`} {
		f.Add(s, `{"a":{"b":[1,{"c":2}]},"x":[]}`)
	}
	f.Fuzz(func(t *testing.T, path, doc string) {
		p, err := parseJSONPath(path)
		if err != nil {
			return
		}
		if len(p.steps) == 0 && path != "$" {
			t.Fatalf("%q parsed to no steps", path)
		}
		if d, err := decodeJSON([]byte(doc)); err == nil {
			v, ok := p.lookup(d)
			if ok {
				_ = jsonText(v)
			}
		}
	})
}

// FuzzJSONFind: the scanning lookup (find) agrees with the decoding one
// (lookup) on every valid JSON document: present or absent, the same text
// for scalars and the same value for objects and arrays.
func FuzzJSONFind(f *testing.F) {
	docs := []string{`{"a":{"b":[1,{"c":"x\"y"}]},"x":[],"a":{"b":[2]}}`, `[1, [2, 3], {"k": null}]`,
		` { "t" : true , "s\u0061" : "\u00e9\n" } `, `"str"`, `{"a":{}}`, `{"":1}`}
	for _, d := range docs {
		for _, p := range []string{"$", "$.a.b[0]", "$.a.b[-1].c", "$[1][0]", "$['sa']", "$.t", `$[""]`, "$.a", "$[-1].k"} {
			f.Add(p, d)
		}
	}
	f.Fuzz(func(t *testing.T, path, doc string) {
		p, err := parseJSONPath(path)
		if err != nil || !json.Valid([]byte(doc)) || !utf8.ValidString(doc) {
			return
		}
		d, err := decodeJSON([]byte(doc))
		if err != nil {
			return
		}
		want, wok := p.lookup(d)
		raw, ok := p.find([]byte(doc))
		if ok != wok {
			t.Fatalf("%s in %s: find %v (%q), lookup %v", path, doc, ok, raw, wok)
		}
		if !ok {
			return
		}
		got, err := decodeJSON(raw)
		if err != nil {
			t.Fatalf("%s in %s: find gave %q: %v", path, doc, raw, err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Fatalf("%s in %s: find %q, lookup %v", path, doc, raw, want)
		}
		switch want.(type) {
		case map[string]any, []any:
		default:
			if rawText(raw) != jsonText(want) {
				t.Fatalf("%s in %s: text %q, want %q", path, doc, rawText(raw), jsonText(want))
			}
		}
	})
}
