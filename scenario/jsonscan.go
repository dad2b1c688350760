package scenario

import (
	"bytes"
	"encoding/json"
)

// find returns the raw JSON text of the value at the path in body, which
// must be valid JSON (json.Valid); ok is false when the path is absent. It
// walks the text without decoding it and allocates only to compare keys
// that hold escapes.
func (p *jsonPath) find(body []byte) (raw []byte, ok bool) {
	i := skipWS(body, 0)
	for _, st := range p.steps {
		if i >= len(body) {
			return nil, false
		}
		if st.isIdx {
			if body[i] != '[' {
				return nil, false
			}
			idx := st.index
			if idx < 0 {
				idx += countElems(body, i)
				if idx < 0 {
					return nil, false
				}
			}
			i = skipWS(body, i+1)
			if i < len(body) && body[i] == ']' {
				return nil, false
			}
			for n := 0; ; n++ {
				if n == idx {
					break
				}
				i = skipWS(body, skipValue(body, i))
				if i >= len(body) || body[i] != ',' {
					return nil, false
				}
				i = skipWS(body, i+1)
			}
			continue
		}
		if body[i] != '{' {
			return nil, false
		}
		i = skipWS(body, i+1)
		at := -1 // the last member of that name wins, as when decoding
		for i < len(body) && body[i] == '"' {
			end := skipString(body, i)
			match := keyEquals(body[i:end], st.key)
			i = skipWS(body, end)
			i = skipWS(body, i+1) // the colon
			if match {
				at = i
			}
			i = skipWS(body, skipValue(body, i))
			if i < len(body) && body[i] == ',' {
				i = skipWS(body, i+1)
			}
		}
		if at < 0 {
			return nil, false
		}
		i = at
	}
	if i >= len(body) {
		return nil, false
	}
	return body[i:skipValue(body, i)], true
}

// countElems counts the elements of the array starting at body[i].
func countElems(body []byte, i int) int {
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == ']' {
		return 0
	}
	n := 0
	for i < len(body) {
		n++
		i = skipWS(body, skipValue(body, i))
		if i >= len(body) || body[i] != ',' {
			break
		}
		i = skipWS(body, i+1)
	}
	return n
}

// keyEquals compares a raw JSON string (quotes included) with key.
func keyEquals(raw []byte, key string) bool {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == key
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return false
	}
	return s == key
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// rawText returns a raw JSON value as a variable's text, as jsonText does
// for a decoded one: a string unquoted, a number as written, true/false,
// "" for null, compact JSON for objects and arrays.
func rawText(raw []byte) string {
	switch {
	case len(raw) == 0:
		return ""
	case raw[0] == '"':
		inner := raw[1 : len(raw)-1]
		if bytes.IndexByte(inner, '\\') < 0 {
			return string(inner)
		}
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	case raw[0] == 'n':
		return ""
	case raw[0] == '{' || raw[0] == '[':
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			return buf.String()
		}
	}
	return string(raw)
}

// rawRepr returns a raw JSON value compacted, for messages.
func rawRepr(raw []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	if buf.Len() > 200 {
		return buf.String()[:200] + "..."
	}
	return buf.String()
}
