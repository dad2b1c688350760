package locustfile

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// orderedMap is a Python dict of string keys, in insertion order.
type orderedMap struct {
	keys []string
	vals []any
}

func (m *orderedMap) set(k string, v any) {
	for i, x := range m.keys {
		if x == k {
			m.vals[i] = v
			return
		}
	}
	m.keys = append(m.keys, k)
	m.vals = append(m.vals, v)
}

func (m *orderedMap) get(k string) (any, bool) {
	for i, x := range m.keys {
		if x == k {
			return m.vals[i], true
		}
	}
	return nil, false
}

const maxConstLen = 1 << 20

// constValue evaluates a constant expression: literals, containers of
// constants, module constants, class attributes (cls), f-strings and +
// of constants. Values: string, int64, float64, bool, nil, []any,
// *orderedMap.
func (r *reader) constValue(e expr, cls *classInfo) (any, error) {
	r.budget = maxConstSteps
	return r.constDepth(e, cls, 0)
}

// maxConstSteps bounds the work of one constant: class attributes that
// refer to each other (x = x + x) would otherwise take exponential time.
const maxConstSteps = 100_000

func (r *reader) constDepth(e expr, cls *classInfo, depth int) (any, error) {
	r.budget--
	if depth > 50 || r.budget < 0 {
		return nil, fmt.Errorf("constant nested too deeply or too large")
	}
	switch x := e.(type) {
	case *constExpr:
		if x.Bytes || x.Ellipsis {
			return nil, fmt.Errorf("%s is not read", describeExpr(x))
		}
		return x.V, nil
	case *nameExpr:
		if v, ok := r.consts[x.ID]; ok {
			return v, nil
		}
		if cls != nil {
			if v, owner := r.attr(cls, x.ID); v != nil && v != e {
				return r.constDepth(v, owner, depth+1)
			}
		}
		return nil, fmt.Errorf("%s is not a constant of this file: %w", x.ID, errNotConst)
	case *listExpr, *tupleExpr:
		var elts []expr
		if l, ok := x.(*listExpr); ok {
			elts = l.Elts
		} else {
			elts = x.(*tupleExpr).Elts
		}
		out := []any{}
		for _, y := range elts {
			v, err := r.constDepth(y, cls, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *dictExpr:
		m := &orderedMap{}
		for i, k := range x.Keys {
			if k == nil {
				return nil, fmt.Errorf("{**...} is not read")
			}
			kv, err := r.constDepth(k, cls, depth+1)
			if err != nil {
				return nil, err
			}
			ks, ok := kv.(string)
			if !ok {
				return nil, fmt.Errorf("dict keys must be strings")
			}
			v, err := r.constDepth(x.Values[i], cls, depth+1)
			if err != nil {
				return nil, err
			}
			m.set(ks, v)
		}
		return m, nil
	case *unaryExpr:
		v, err := r.constDepth(x.X, cls, depth+1)
		if err != nil {
			return nil, err
		}
		switch n := v.(type) {
		case int64:
			if x.Op == "-" && n != math.MinInt64 {
				return -n, nil
			}
			if x.Op == "+" {
				return n, nil
			}
		case float64:
			if x.Op == "-" {
				return -n, nil
			}
			if x.Op == "+" {
				return n, nil
			}
		case bool:
			if x.Op == "not" {
				return !n, nil
			}
		}
	case *binExpr:
		a, err := r.constDepth(x.X, cls, depth+1)
		if err != nil {
			return nil, err
		}
		b, err := r.constDepth(x.Y, cls, depth+1)
		if err != nil {
			return nil, err
		}
		if sa, ok := a.(string); ok && x.Op == "+" {
			if sb, ok := b.(string); ok {
				if len(sa)+len(sb) > maxConstLen {
					return nil, fmt.Errorf("constant string too long")
				}
				return sa + sb, nil
			}
		}
		return arith(x.Op, a, b)
	case *fstringExpr:
		var b strings.Builder
		for _, p := range x.Parts {
			if k, ok := p.(*constExpr); ok {
				b.WriteString(k.V.(string))
				continue
			}
			fe := p.(*fieldExpr)
			if fe.Spec != "" || fe.Conv != "" && fe.Conv != "s" {
				return nil, fmt.Errorf("format specs and !r in f-strings are not read")
			}
			v, err := r.constDepth(fe.X, cls, depth+1)
			if err != nil {
				return nil, err
			}
			b.WriteString(pyStr(v))
			if b.Len() > maxConstLen {
				return nil, fmt.Errorf("constant string too long")
			}
		}
		return b.String(), nil
	}
	return nil, fmt.Errorf("%s: %w", describeExpr(e), errNotConst)
}

func arith(op string, a, b any) (any, error) {
	ai, aInt := a.(int64)
	bi, bInt := b.(int64)
	if aInt && bInt {
		switch op {
		case "+":
			if s := ai + bi; (s > ai) == (bi > 0) {
				return s, nil
			}
		case "-":
			if s := ai - bi; (s < ai) == (bi > 0) {
				return s, nil
			}
		case "*":
			if ai == 0 || bi == 0 {
				return int64(0), nil
			}
			if s := ai * bi; s/bi == ai && !(ai == -1 && bi == math.MinInt64) && !(bi == -1 && ai == math.MinInt64) {
				return s, nil
			}
		}
	}
	af, aNum := toFloat(a)
	bf, bNum := toFloat(b)
	if aNum && bNum {
		switch op {
		case "+":
			return af + bf, nil
		case "-":
			return af - bf, nil
		case "*":
			return af * bf, nil
		case "/":
			if bf != 0 {
				return af / bf, nil
			}
		}
	}
	return nil, fmt.Errorf("the operation %s on these constants is not read", op)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// pyStr is Python's str() of a constant.
func pyStr(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return pyFloat(v)
	case bool:
		if v {
			return "True"
		}
		return "False"
	case nil:
		return "None"
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = pyRepr(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *orderedMap:
		parts := make([]string, len(v.keys))
		for i, k := range v.keys {
			parts[i] = pyRepr(k) + ": " + pyRepr(v.vals[i])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

func pyRepr(v any) string {
	if s, ok := v.(string); ok {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
	}
	return pyStr(v)
}

// pyFloat formats a float as Python's repr does (enough for constants).
func pyFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Sprint(f)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// escapeDollar makes a literal safe in a scenario template.
func escapeDollar(s string) string { return strings.ReplaceAll(s, "$", "$$") }

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// template evaluates a string expression of a task to a scenario
// template: constants are escaped, captures become ${name}, os.environ
// and os.getenv become ${NAME} and ${NAME:-default}.
func (r *reader) template(e expr, f *fnCtx) (string, error) {
	var cls *classInfo
	if f != nil {
		cls = f.cls
	}
	if v, err := r.constValue(e, cls); err == nil {
		switch v.(type) {
		case string, int64, float64, bool, nil:
			return escapeDollar(pyStr(v)), nil
		}
		return "", fmt.Errorf("%s is not a string", describeExpr(e))
	}
	switch x := e.(type) {
	case *nameExpr:
		if f != nil {
			if t, ok := f.locals[x.ID]; ok {
				return t, nil
			}
			if f.resps[x.ID] != nil {
				return "", fmt.Errorf("%s is a response, not a string", x.ID)
			}
		}
		if strings.HasPrefix(x.ID, "\x00capture:") {
			return "${" + strings.TrimPrefix(x.ID, "\x00capture:") + "}", nil
		}
	case *attrExpr:
		if n, ok := x.X.(*nameExpr); ok && f != nil && n.ID == f.self {
			if v, _ := r.attr(f.cls, x.Name); v != nil {
				if m, ok := v.(*nameExpr); ok && strings.HasPrefix(m.ID, "\x00capture:") {
					return "${" + x.Name + "}", nil
				}
				if m, ok := v.(*nameExpr); ok && strings.HasPrefix(m.ID, tmplMarker) {
					return strings.TrimPrefix(m.ID, tmplMarker), nil
				}
			}
		}
	case *fstringExpr:
		var b strings.Builder
		for _, p := range x.Parts {
			if k, ok := p.(*constExpr); ok {
				b.WriteString(escapeDollar(k.V.(string)))
				continue
			}
			fe := p.(*fieldExpr)
			if fe.Spec != "" || fe.Conv != "" && fe.Conv != "s" {
				return "", fmt.Errorf("format specs and !r in f-strings are not read")
			}
			t, err := r.template(fe.X, f)
			if err != nil {
				return "", err
			}
			b.WriteString(t)
		}
		return b.String(), nil
	case *binExpr:
		if x.Op == "+" {
			a, err := r.template(x.X, f)
			if err != nil {
				return "", err
			}
			b, err := r.template(x.Y, f)
			if err != nil {
				return "", err
			}
			return a + b, nil
		}
	case *callExpr:
		fn := describeExpr(x.Fn)
		if fn == "str" && len(x.Args) == 1 && len(x.Kw) == 0 {
			return r.template(x.Args[0], f)
		}
		if r.imports["os"] == "os" && (fn == "os.getenv" || fn == "os.environ.get") && len(x.Kw) == 0 && len(x.Args) >= 1 && len(x.Args) <= 2 {
			return r.envRef(x.Args, cls)
		}
		if strings.HasPrefix(fn, "random.") && r.imports["random"] == "random" {
			return r.randomVar(fn, x, f)
		}
	case *subscriptExpr:
		if describeExpr(x.X) == "os.environ" && r.imports["os"] == "os" {
			return r.envRef([]expr{x.Index}, cls)
		}
	}
	if c, ok := e.(*callExpr); ok {
		fn := describeExpr(c.Fn)
		if h := yamlHint(fn); h != taskHelp {
			return "", fmt.Errorf("%s is not a value cicada reads: %s", describeExpr(e), h)
		}
	}
	return "", fmt.Errorf("%s is not a value cicada reads (constants, f-strings, captured response values, os.environ)", describeExpr(e))
}

func (r *reader) envRef(args []expr, cls *classInfo) (string, error) {
	k, err := r.constValue(args[0], cls)
	name, ok := k.(string)
	if err != nil || !ok || !validVarName(name) {
		return "", fmt.Errorf("environment variable names must be string constants")
	}
	if len(args) == 1 {
		return "${" + name + "}", nil
	}
	d, err := r.constValue(args[1], cls)
	ds, ok := d.(string)
	if err != nil || !ok || strings.ContainsAny(ds, "}$") {
		return "", fmt.Errorf("the default of %s must be a string constant without } or $", name)
	}
	return "${" + name + ":-" + ds + "}", nil
}

// describeExpr renders an expression briefly for error messages.
func describeExpr(e expr) string {
	return describeDepth(e, 0)
}

func describeDepth(e expr, d int) string {
	if d > 6 {
		return "..."
	}
	switch x := e.(type) {
	case *nameExpr:
		return x.ID
	case *attrExpr:
		return describeDepth(x.X, d+1) + "." + x.Name
	case *callExpr:
		return describeDepth(x.Fn, d+1) + "(...)"
	case *subscriptExpr:
		return describeDepth(x.X, d+1) + "[" + describeDepth(x.Index, d+1) + "]"
	case *constExpr:
		switch {
		case x.Ellipsis:
			return "..."
		case x.Bytes:
			return "b" + strconv.Quote(x.V.(string))
		}
		s := pyRepr(x.V)
		if len(s) > 40 {
			s = s[:37] + "..."
		}
		return s
	case *fstringExpr:
		return "f-string"
	case *listExpr:
		return "[...]"
	case *tupleExpr:
		return "(...)"
	case *dictExpr:
		return "{...}"
	case *setExpr:
		return "set {...}"
	case *binExpr:
		return describeDepth(x.X, d+1) + " " + x.Op + " " + describeDepth(x.Y, d+1)
	case *unaryExpr:
		return x.Op + " " + describeDepth(x.X, d+1)
	case *boolExpr:
		return x.Op + " expression"
	case *compareExpr:
		return describeDepth(x.X, d+1) + " " + x.Ops[0] + " " + describeDepth(x.Ys[0], d+1)
	case *ifExpr:
		return "conditional expression"
	case *lambdaExpr:
		return "lambda"
	case *compExpr:
		return x.Kind + " comprehension"
	case *walrusExpr:
		return x.Name + " := ..."
	case *starExpr:
		return "*" + describeDepth(x.X, d+1)
	case *yieldExpr:
		return "yield"
	case *sliceExpr:
		return "slice"
	}
	return "expression"
}

func describeStmt(s stmt) string {
	switch s := s.(type) {
	case *forStmt:
		return "for loop"
	case *whileStmt:
		return "while loop"
	case *tryStmt:
		return "try statement"
	case *withStmt:
		return "with statement"
	case *ifStmt:
		return "if statement"
	case *returnStmt:
		return "return"
	case *defStmt:
		return "def " + s.Name
	case *classStmt:
		return "class " + s.Name
	case *importStmt:
		return "import"
	case *simpleStmt:
		return s.Kind
	case *assignStmt:
		return "assignment"
	case *exprStmt:
		return describeExpr(s.X)
	}
	return "statement"
}

// maxChoice bounds random.choice's list, as the scenario does.
const maxChoice = 10000

// randomVar reads random.randint(a, b) or random.choice([...]) over
// constants in a request's arguments as a user variable drawn before each
// request (each: request). A draw kept in a local or on self is refused:
// Python draws once for every later use, the variable once per request.
func (r *reader) randomVar(fn string, c *callExpr, f *fnCtx) (string, error) {
	if f == nil || f.assigning {
		return "", fmt.Errorf("%s kept in a variable is one draw for every later use, which cicada cannot keep; call it inside the request's arguments", fn)
	}
	if len(c.Kw) != 0 {
		return "", fmt.Errorf("%s with keyword arguments is not read", fn)
	}
	v := Var{Name: fmt.Sprintf("random_%d", len(r.vars)+1)}
	switch fn {
	case "random.randint":
		if len(c.Args) != 2 {
			return "", fmt.Errorf("random.randint takes two integer constants")
		}
		var b [2]int64
		for i, a := range c.Args {
			k, err := r.constValue(a, f.cls)
			n, ok := k.(int64)
			if err != nil || !ok {
				return "", fmt.Errorf("random.randint takes two integer constants")
			}
			b[i] = n
		}
		if b[1] < b[0] {
			return "", fmt.Errorf("random.randint(%d, %d): the upper bound is below the lower", b[0], b[1])
		}
		v.Lo, v.Hi = b[0], b[1]
	case "random.choice":
		if len(c.Args) != 1 {
			return "", fmt.Errorf("random.choice takes one list of constants")
		}
		k, err := r.constValue(c.Args[0], f.cls)
		list, ok := k.([]any)
		if err != nil || !ok || len(list) == 0 || len(list) > maxChoice {
			return "", fmt.Errorf("random.choice takes a list or tuple of 1 to %d constants", maxChoice)
		}
		for _, e := range list {
			switch e.(type) {
			case string, int64, float64, bool:
				v.Choice = append(v.Choice, pyStr(e))
			default:
				return "", fmt.Errorf("random.choice's values must be strings or numbers")
			}
		}
	default:
		return "", fmt.Errorf("%s is not read (cicada reads random.randint and random.choice over constants)", fn)
	}
	r.vars = append(r.vars, v)
	return "${" + v.Name + "}", nil
}
