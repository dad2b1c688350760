package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// jsonPath is a compiled JSON path of the subset scenarios use:
// $ (the whole document), .name, [index] (0-based, or negative from the
// end) and ['name'] or ["name"] (any key, dots and spaces included; no
// escapes), in any sequence: $.items[0].id, $['a.b'].c, $[1].
// Wildcards, filters, slices and recursive descent are refused.
type jsonPath struct {
	text  string
	steps []pathStep
}

type pathStep struct {
	key   string
	index int
	isIdx bool
}

var errJSONPath = errors.New("bad JSON path")

// parseJSONPath compiles s.
func parseJSONPath(s string) (jsonPath, error) {
	p := jsonPath{text: s}
	if !strings.HasPrefix(s, "$") {
		return p, fmt.Errorf("%w %q: must start with $ (like $.token or $.items[0].id)", errJSONPath, s)
	}
	i := 1
	for i < len(s) {
		switch s[i] {
		case '.':
			j := i + 1
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			key := s[i+1 : j]
			if key == "" {
				return p, fmt.Errorf("%w %q: empty name at offset %d", errJSONPath, s, i)
			}
			if key == "*" || strings.ContainsAny(key, "]()?@*'\" ") {
				return p, fmt.Errorf("%w %q: unsupported name %q (use ['...'] for keys with such characters; wildcards and filters are not supported)", errJSONPath, s, key)
			}
			p.steps = append(p.steps, pathStep{key: key})
			i = j
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return p, fmt.Errorf("%w %q: unterminated [ at offset %d", errJSONPath, s, i)
			}
			in := s[i+1 : i+end]
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				key := in[1 : len(in)-1]
				if strings.ContainsRune(key, rune(in[0])) {
					return p, fmt.Errorf("%w %q: quote inside a quoted key", errJSONPath, s)
				}
				p.steps = append(p.steps, pathStep{key: key})
			} else {
				n, err := strconv.Atoi(in)
				if err != nil || in == "" || in[0] == '+' {
					return p, fmt.Errorf("%w %q: [%s] is neither an index nor a quoted key (wildcards, slices and filters are not supported)", errJSONPath, s, in)
				}
				p.steps = append(p.steps, pathStep{index: n, isIdx: true})
			}
			i += end + 1
		default:
			return p, fmt.Errorf("%w %q: unexpected %q at offset %d", errJSONPath, s, s[i], i)
		}
	}
	return p, nil
}

// lookup returns the value at the path in doc (decoded with UseNumber),
// or false when it is absent.
func (p *jsonPath) lookup(doc any) (any, bool) {
	v := doc
	for _, st := range p.steps {
		if st.isIdx {
			a, ok := v.([]any)
			if !ok {
				return nil, false
			}
			i := st.index
			if i < 0 {
				i += len(a)
			}
			if i < 0 || i >= len(a) {
				return nil, false
			}
			v = a[i]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[st.key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// decodeJSON decodes a response body for JSON paths: numbers stay their
// literal text (json.Number), so captures keep every digit.
func decodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("response is not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("response is not JSON: data after the first value")
	}
	return v, nil
}

// jsonText returns a JSON value as a variable's text: a string as is, a
// number as written, true/false, "" for null, and compact JSON for objects
// and arrays.
func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// jsonRepr returns v as compact JSON, for messages.
func jsonRepr(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// jsonEqual compares a decoded value (json.Number for numbers) with an
// expected plain value from YAML (int, float64, bool, string, nil, lists
// and maps of them): numbers by value, the rest by their JSON encoding.
func jsonEqual(got, want any) bool {
	if n, ok := got.(json.Number); ok {
		f, err := n.Float64()
		if err != nil {
			return false
		}
		switch w := want.(type) {
		case int, int64, uint64:
			// integers exactly, when the response wrote one
			if !strings.ContainsAny(n.String(), ".eE") {
				return n.String() == fmt.Sprint(w)
			}
			return f == toFloat(w)
		case float64:
			return f == w
		}
		return false
	}
	switch want.(type) {
	case int, int64, uint64, float64:
		return false
	}
	a, err1 := json.Marshal(normalize(got))
	b, err2 := json.Marshal(normalize(want))
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// normalize turns json.Numbers into float64 for comparing nested values.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case int, int64, uint64:
		return toFloat(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	}
	return v
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}
