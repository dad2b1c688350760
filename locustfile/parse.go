package locustfile

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxNesting bounds the recursion of the parser (brackets, operators,
// blocks) so that hostile input cannot exhaust the stack.
const maxNesting = 200

// maxChain bounds a run of same-level operators (a + b + ...) or trailers
// (a.b(c)[d]...), which nest the tree without recursion in the parser.
const maxChain = 2000

// parseModule tokenizes and parses a Python module into statements.
func parseModule(file, src string) ([]stmt, error) {
	toks, err := tokenize(file, src)
	if err != nil {
		return nil, err
	}
	p := &parser{file: file, toks: toks}
	var out []stmt
	for p.peek().Kind != tEOF {
		if p.peek().Kind == tNewline {
			p.next()
			continue
		}
		ss, err := p.statement()
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	return out, nil
}

type parser struct {
	file  string
	toks  []token
	i     int
	depth int
}

// bail is panicked with a parse error and recovered by the entry points.
type bail struct{ err error }

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.Kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &Error{File: p.file, Line: t.Line, Col: t.Col, Construct: "syntax", Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) fail(t token, format string, args ...any) {
	panic(bail{p.errAt(t, format, args...)})
}

func describe(t token) string {
	switch t.Kind {
	case tOp, tName:
		return strconv.Quote(t.Val)
	}
	return t.Kind.String()
}

func (p *parser) isOp(v string) bool {
	t := p.peek()
	return t.Kind == tOp && t.Val == v
}

func (p *parser) isKw(v string) bool {
	t := p.peek()
	return t.Kind == tName && t.Val == v
}

func (p *parser) acceptOp(v string) bool {
	if p.isOp(v) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(v string) token {
	t := p.peek()
	if t.Kind != tOp || t.Val != v {
		p.fail(t, "expected %q, found %s", v, describe(t))
	}
	return p.next()
}

func (p *parser) expectName() token {
	t := p.peek()
	if t.Kind != tName || keywords[t.Val] {
		p.fail(t, "expected a name, found %s", describe(t))
	}
	return p.next()
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxNesting {
		p.fail(p.peek(), "nested too deeply (more than %d levels)", maxNesting)
	}
}

func (p *parser) leave() { p.depth-- }

var keywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

func tpos(t token) Pos { return Pos{t.Line, t.Col} }

// statement parses one statement line or compound statement; a line of
// simple statements separated by ";" gives several.
func (p *parser) statement() (ss []stmt, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bail)
			if !ok {
				panic(r)
			}
			ss, err = nil, b.err
		}
	}()
	return p.stmt(), nil
}

func (p *parser) stmt() []stmt {
	p.enter()
	defer p.leave()
	t := p.peek()
	if t.Kind == tIndent {
		p.fail(t, "unexpected indent")
	}
	if t.Kind == tOp && t.Val == "@" {
		var decos []expr
		for p.acceptOp("@") {
			decos = append(decos, p.namedExpr())
			p.expectNewline()
		}
		s := p.compound()
		switch d := s.(type) {
		case *classStmt:
			d.Decorators = decos
		case *defStmt:
			d.Decorators = decos
		default:
			p.fail(t, "a decorator must precede def or class")
		}
		return []stmt{s}
	}
	if t.Kind == tName {
		switch t.Val {
		case "class", "def", "if", "for", "while", "with", "try", "async":
			return []stmt{p.compound()}
		case "match":
			if n := p.peekAt(1); n.Kind == tName || n.Kind == tString || n.Kind == tNumber {
				p.fail(t, "match statements are not read")
			}
		}
	}
	return p.simpleLine()
}

func (p *parser) expectNewline() {
	t := p.peek()
	if t.Kind != tNewline && t.Kind != tEOF {
		p.fail(t, "expected the end of the line, found %s", describe(t))
	}
	p.next()
}

func (p *parser) simpleLine() []stmt {
	var out []stmt
	for {
		out = append(out, p.simple())
		if !p.acceptOp(";") {
			break
		}
		if k := p.peek().Kind; k == tNewline || k == tEOF {
			break
		}
	}
	p.expectNewline()
	return out
}

func (p *parser) simple() stmt {
	t := p.peek()
	P := tpos(t)
	if t.Kind == tName {
		switch t.Val {
		case "pass", "break", "continue":
			p.next()
			return &simpleStmt{P: P, Kind: t.Val}
		case "return":
			p.next()
			var x expr
			if !p.atLineEnd() {
				x = p.exprList()
			}
			return &returnStmt{P: P, X: x}
		case "raise", "del", "assert":
			p.next()
			var xs []expr
			if !p.atLineEnd() {
				xs = append(xs, p.exprList())
				for p.acceptOp(",") || p.isKw("from") {
					if p.isKw("from") {
						p.next()
					}
					xs = append(xs, p.test())
				}
			}
			return &simpleStmt{P: P, Kind: t.Val, Xs: xs}
		case "global", "nonlocal":
			p.next()
			p.expectName()
			for p.acceptOp(",") {
				p.expectName()
			}
			return &simpleStmt{P: P, Kind: t.Val}
		case "import":
			p.next()
			s := &importStmt{P: P}
			for {
				name := p.dotted()
				a := alias{Name: name}
				if p.isKw("as") {
					p.next()
					a.As = p.expectName().Val
				}
				s.Names = append(s.Names, a)
				if !p.acceptOp(",") {
					break
				}
			}
			return s
		case "from":
			p.next()
			s := &importStmt{P: P}
			for p.isOp(".") || p.isOp("...") {
				s.Level += len(p.next().Val)
			}
			if !p.isKw("import") {
				s.From = p.dotted()
			}
			if !p.isKw("import") {
				p.fail(p.peek(), "expected import, found %s", describe(p.peek()))
			}
			p.next()
			paren := p.acceptOp("(")
			if p.acceptOp("*") {
				s.Names = append(s.Names, alias{Name: "*"})
			} else {
				for {
					a := alias{Name: p.expectName().Val}
					if p.isKw("as") {
						p.next()
						a.As = p.expectName().Val
					}
					s.Names = append(s.Names, a)
					if !p.acceptOp(",") || paren && p.isOp(")") {
						break
					}
				}
			}
			if paren {
				p.expectOp(")")
			}
			if s.From == "" {
				s.From = strings.Repeat(".", s.Level)
			}
			return s
		}
	}
	x := p.exprListStar()
	if p.isOp(":") { // annotation
		p.next()
		annot := p.test()
		var v expr
		if p.acceptOp("=") {
			v = p.assignValue()
		}
		return &assignStmt{P: P, Targets: []expr{x}, Value: v, Op: "=", Annot: annot}
	}
	if t := p.peek(); t.Kind == tOp && len(t.Val) >= 2 && strings.HasSuffix(t.Val, "=") &&
		t.Val != "==" && t.Val != "!=" && t.Val != "<=" && t.Val != ">=" {
		p.next()
		return &assignStmt{P: P, Targets: []expr{x}, Value: p.assignValue(), Op: t.Val}
	}
	if p.isOp("=") {
		s := &assignStmt{P: P, Op: "=", Targets: []expr{x}}
		for p.acceptOp("=") {
			v := p.assignValue()
			if p.isOp("=") {
				s.Targets = append(s.Targets, v)
				continue
			}
			s.Value = v
		}
		return s
	}
	return &exprStmt{P: P, X: x}
}

func (p *parser) assignValue() expr {
	if p.isKw("yield") {
		t := p.next()
		if !p.atLineEnd() {
			p.exprList()
		}
		return &yieldExpr{P: tpos(t)}
	}
	return p.exprListStar()
}

func (p *parser) atLineEnd() bool {
	k := p.peek().Kind
	return k == tNewline || k == tEOF || p.isOp(";")
}

func (p *parser) dotted() string {
	name := p.expectName().Val
	for p.acceptOp(".") {
		name += "." + p.expectName().Val
	}
	return name
}

// block parses ":" and an indented suite (or simple statements on the
// same line).
func (p *parser) block() []stmt {
	p.expectOp(":")
	if p.peek().Kind != tNewline {
		return p.simpleLine()
	}
	p.next()
	if p.peek().Kind != tIndent {
		p.fail(p.peek(), "expected an indented block")
	}
	p.next()
	var out []stmt
	for p.peek().Kind != tDedent && p.peek().Kind != tEOF {
		if p.peek().Kind == tNewline {
			p.next()
			continue
		}
		out = append(out, p.stmt()...)
	}
	if p.peek().Kind == tDedent {
		p.next()
	}
	return out
}

func (p *parser) compound() stmt {
	t := p.next()
	P := tpos(t)
	switch t.Val {
	case "async":
		n := p.peek()
		if n.Kind == tName && (n.Val == "def" || n.Val == "for" || n.Val == "with") {
			s := p.compound()
			if d, ok := s.(*defStmt); ok {
				d.Async = true
			}
			return s
		}
		p.fail(t, "expected def, for or with after async")
	case "class":
		s := &classStmt{P: P, Name: p.expectName().Val}
		if p.acceptOp("(") {
			s.Bases, s.Kw = p.callArgs()
		}
		s.Body = p.block()
		return s
	case "def":
		s := &defStmt{P: P, Name: p.expectName().Val}
		p.expectOp("(")
		s.Params = p.params(")")
		p.expectOp(")")
		if p.acceptOp("->") {
			p.test()
		}
		s.Body = p.block()
		return s
	case "if", "elif":
		s := &ifStmt{P: P, Test: p.namedExpr()}
		s.Body = p.block()
		switch {
		case p.isKw("elif"):
			s.Else = []stmt{p.compound()}
			s.Elif = true
		case p.isKw("else"):
			p.next()
			s.Else = p.block()
		}
		return s
	case "for":
		s := &forStmt{P: P, Target: p.targetList()}
		if !p.isKw("in") {
			p.fail(p.peek(), "expected in, found %s", describe(p.peek()))
		}
		p.next()
		s.Iter = p.exprListStar()
		s.Body = p.block()
		if p.isKw("else") {
			p.next()
			s.Else = p.block()
		}
		return s
	case "while":
		s := &whileStmt{P: P, Test: p.namedExpr()}
		s.Body = p.block()
		if p.isKw("else") {
			p.next()
			s.Else = p.block()
		}
		return s
	case "with":
		s := &withStmt{P: P}
		paren := false
		if p.isOp("(") && p.parenthesizedWith() {
			p.next()
			paren = true
		}
		for {
			it := withItem{X: p.test()}
			if p.isKw("as") {
				p.next()
				it.As = p.targetAtom()
			}
			s.Items = append(s.Items, it)
			if !p.acceptOp(",") || paren && p.isOp(")") {
				break
			}
		}
		if paren {
			p.expectOp(")")
		}
		s.Body = p.block()
		return s
	case "try":
		s := &tryStmt{P: P, Body: p.block()}
		for p.isKw("except") {
			p.next()
			p.acceptOp("*")
			if !p.isOp(":") {
				p.test()
				if p.isKw("as") {
					p.next()
					p.expectName()
				} else if p.acceptOp(",") {
					p.test()
				}
			}
			p.block()
		}
		if p.isKw("else") {
			p.next()
			p.block()
		}
		if p.isKw("finally") {
			p.next()
			p.block()
		}
		return s
	}
	p.fail(t, "unexpected %s", describe(t))
	return nil
}

// parenthesizedWith reports whether "with (" opens a parenthesized list of
// with items (Python 3.10) rather than a parenthesized expression: the
// matching ")" is followed by ":".
func (p *parser) parenthesizedWith() bool {
	depth := 0
	for j := p.i; j < len(p.toks); j++ {
		t := p.toks[j]
		if t.Kind == tOp {
			switch t.Val {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
				if depth == 0 {
					n := p.toks[j+1]
					return n.Kind == tOp && n.Val == ":" && p.hasAsInside(p.i, j)
				}
			}
		}
		if t.Kind == tNewline || t.Kind == tEOF {
			return false
		}
	}
	return false
}

func (p *parser) hasAsInside(from, to int) bool {
	for j := from; j < to; j++ {
		if p.toks[j].Kind == tName && p.toks[j].Val == "as" {
			return true
		}
	}
	return false
}

func (p *parser) params(end string) []param {
	var out []param
	for !p.isOp(end) {
		var pr param
		switch {
		case p.acceptOp("**"):
			pr.Star = "**"
		case p.acceptOp("*"):
			pr.Star = "*"
			if p.isOp(",") || p.isOp(end) { // bare * (keyword-only marker)
				p.acceptOp(",")
				continue
			}
		case p.acceptOp("/"):
			p.acceptOp(",")
			continue
		}
		pr.Name = p.expectName().Val
		if end == ")" && p.acceptOp(":") {
			p.test()
		}
		if p.acceptOp("=") {
			pr.Default = p.test()
		}
		out = append(out, pr)
		if !p.acceptOp(",") {
			break
		}
	}
	return out
}

// targetList parses the target of a for loop: names, attributes,
// subscripts, tuples of them.
func (p *parser) targetList() expr {
	t := p.peek()
	first := p.targetAtom()
	if !p.isOp(",") {
		return first
	}
	tu := &tupleExpr{P: tpos(t), Elts: []expr{first}}
	for p.acceptOp(",") {
		if p.isKw("in") {
			break
		}
		tu.Elts = append(tu.Elts, p.targetAtom())
	}
	return tu
}

func (p *parser) targetAtom() expr {
	if p.isOp("*") {
		t := p.next()
		return &starExpr{P: tpos(t), X: p.orExpr()}
	}
	return p.orExpr()
}

// exprList parses "a, b, c" (a tuple if there is a comma).
func (p *parser) exprList() expr {
	t := p.peek()
	x := p.test()
	if !p.isOp(",") {
		return x
	}
	tu := &tupleExpr{P: tpos(t), Elts: []expr{x}}
	for p.acceptOp(",") {
		if p.endOfList() {
			break
		}
		tu.Elts = append(tu.Elts, p.test())
	}
	return tu
}

// exprListStar is exprList that also allows *x items and := at the top.
func (p *parser) exprListStar() expr {
	t := p.peek()
	item := func() expr {
		if p.isOp("*") {
			s := p.next()
			return &starExpr{P: tpos(s), X: p.orExpr()}
		}
		return p.namedExpr()
	}
	x := item()
	if !p.isOp(",") {
		return x
	}
	tu := &tupleExpr{P: tpos(t), Elts: []expr{x}}
	for p.acceptOp(",") {
		if p.endOfList() {
			break
		}
		tu.Elts = append(tu.Elts, item())
	}
	return tu
}

func (p *parser) endOfList() bool {
	t := p.peek()
	if t.Kind == tNewline || t.Kind == tEOF {
		return true
	}
	if t.Kind == tOp {
		switch t.Val {
		case ")", "]", "}", "=", ":", ";":
			return true
		}
		return strings.HasSuffix(t.Val, "=") && t.Val != "==" && t.Val != "!=" && t.Val != "<=" && t.Val != ">="
	}
	return t.Kind == tName && t.Val == "in"
}

// namedExpr is test with an optional NAME := value.
func (p *parser) namedExpr() expr {
	t := p.peek()
	if t.Kind == tName && p.peekAt(1).Kind == tOp && p.peekAt(1).Val == ":=" {
		p.next()
		p.next()
		return &walrusExpr{P: tpos(t), Name: t.Val, Value: p.test()}
	}
	return p.test()
}

func (p *parser) test() expr {
	p.enter()
	defer p.leave()
	t := p.peek()
	if t.Kind == tName && t.Val == "lambda" {
		p.next()
		p.params(":")
		p.expectOp(":")
		return &lambdaExpr{P: tpos(t), Body: p.test()}
	}
	x := p.orTest()
	if p.isKw("if") {
		p.next()
		cond := p.orTest()
		if !p.isKw("else") {
			p.fail(p.peek(), "expected else, found %s", describe(p.peek()))
		}
		p.next()
		return &ifExpr{P: tpos(t), Test: cond, Body: x, Else: p.test()}
	}
	return x
}

func (p *parser) orTest() expr {
	t := p.peek()
	x := p.andTest()
	if !p.isKw("or") {
		return x
	}
	b := &boolExpr{P: tpos(t), Op: "or", Xs: []expr{x}}
	for p.isKw("or") {
		p.next()
		b.Xs = append(b.Xs, p.andTest())
	}
	return b
}

func (p *parser) andTest() expr {
	t := p.peek()
	x := p.notTest()
	if !p.isKw("and") {
		return x
	}
	b := &boolExpr{P: tpos(t), Op: "and", Xs: []expr{x}}
	for p.isKw("and") {
		p.next()
		b.Xs = append(b.Xs, p.notTest())
	}
	return b
}

func (p *parser) notTest() expr {
	p.enter()
	defer p.leave()
	if p.isKw("not") {
		t := p.next()
		return &unaryExpr{P: tpos(t), Op: "not", X: p.notTest()}
	}
	return p.comparison()
}

func (p *parser) compOp() string {
	t := p.peek()
	if t.Kind == tOp {
		switch t.Val {
		case "<", ">", "==", ">=", "<=", "!=":
			p.next()
			return t.Val
		}
	}
	if t.Kind == tName {
		switch t.Val {
		case "in":
			p.next()
			return "in"
		case "not":
			if n := p.peekAt(1); n.Kind == tName && n.Val == "in" {
				p.next()
				p.next()
				return "not in"
			}
		case "is":
			p.next()
			if p.isKw("not") {
				p.next()
				return "is not"
			}
			return "is"
		}
	}
	return ""
}

func (p *parser) comparison() expr {
	t := p.peek()
	x := p.orExpr()
	op := p.compOp()
	if op == "" {
		return x
	}
	c := &compareExpr{P: tpos(t), X: x}
	for op != "" {
		c.Ops = append(c.Ops, op)
		c.Ys = append(c.Ys, p.orExpr())
		op = p.compOp()
	}
	return c
}

// binary operator levels, loosest first.
var binLevels = [][]string{
	{"|"}, {"^"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "//", "%", "@"},
}

func (p *parser) orExpr() expr { return p.binary(0) }

func (p *parser) binary(level int) expr {
	if level == len(binLevels) {
		return p.factor()
	}
	t := p.peek()
	x := p.binary(level + 1)
	for chain := 0; ; chain++ {
		if chain > maxChain {
			p.fail(t, "expression too long (more than %d operators in a row)", maxChain)
		}
		n := p.peek()
		matched := ""
		if n.Kind == tOp {
			for _, o := range binLevels[level] {
				if n.Val == o {
					matched = o
				}
			}
		}
		if matched == "" {
			return x
		}
		p.next()
		x = &binExpr{P: tpos(t), Op: matched, X: x, Y: p.binary(level + 1)}
	}
}

func (p *parser) factor() expr {
	p.enter()
	defer p.leave()
	t := p.peek()
	if t.Kind == tOp && (t.Val == "-" || t.Val == "+" || t.Val == "~") {
		p.next()
		return &unaryExpr{P: tpos(t), Op: t.Val, X: p.factor()}
	}
	return p.power()
}

func (p *parser) power() expr {
	t := p.peek()
	var x expr
	if t.Kind == tName && t.Val == "await" {
		p.next()
		x = &unaryExpr{P: tpos(t), Op: "await", X: p.primary()}
	} else {
		x = p.primary()
	}
	if p.acceptOp("**") {
		return &binExpr{P: tpos(t), Op: "**", X: x, Y: p.factor()}
	}
	return x
}

func (p *parser) primary() expr {
	x := p.atom()
	for chain := 0; ; chain++ {
		t := p.peek()
		if chain > maxChain {
			p.fail(t, "expression too long (more than %d attributes, calls or subscripts in a row)", maxChain)
		}
		switch {
		case t.Kind == tOp && t.Val == ".":
			p.next()
			x = &attrExpr{P: x.pos(), X: x, Name: p.expectName().Val}
		case t.Kind == tOp && t.Val == "(":
			p.next()
			args, kw := p.callArgs()
			x = &callExpr{P: x.pos(), Fn: x, Args: args, Kw: kw}
		case t.Kind == tOp && t.Val == "[":
			p.next()
			x = &subscriptExpr{P: x.pos(), X: x, Index: p.subscript()}
			p.expectOp("]")
		default:
			return x
		}
	}
}

// callArgs parses arguments after "(" through ")".
func (p *parser) callArgs() ([]expr, []keyword) {
	p.enter()
	defer p.leave()
	var args []expr
	var kw []keyword
	for !p.isOp(")") {
		t := p.peek()
		switch {
		case p.acceptOp("**"):
			kw = append(kw, keyword{P: tpos(t), Value: p.test()})
		case p.acceptOp("*"):
			args = append(args, &starExpr{P: tpos(t), X: p.test()})
		case t.Kind == tName && p.peekAt(1).Kind == tOp && p.peekAt(1).Val == "=":
			p.next()
			p.next()
			kw = append(kw, keyword{P: tpos(t), Name: t.Val, Value: p.test()})
		default:
			x := p.namedExpr()
			if p.isKw("for") || p.isKw("async") {
				p.compFor()
				x = &compExpr{P: tpos(t), Kind: "generator"}
			}
			args = append(args, x)
		}
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	return args, kw
}

func (p *parser) subscript() expr {
	t := p.peek()
	one := func() expr {
		s := p.peek()
		var lo expr
		if !p.isOp(":") {
			lo = p.namedExpr()
			if !p.isOp(":") {
				return lo
			}
		}
		sl := &sliceExpr{P: tpos(s), Lo: lo}
		p.expectOp(":")
		if !p.isOp(":") && !p.isOp("]") && !p.isOp(",") {
			sl.Hi = p.test()
		}
		if p.acceptOp(":") && !p.isOp("]") && !p.isOp(",") {
			sl.Step = p.test()
		}
		return sl
	}
	x := one()
	if !p.isOp(",") {
		return x
	}
	tu := &tupleExpr{P: tpos(t), Elts: []expr{x}}
	for p.acceptOp(",") {
		if p.isOp("]") {
			break
		}
		tu.Elts = append(tu.Elts, one())
	}
	return tu
}

// compFor skips the for/if clauses of a comprehension.
func (p *parser) compFor() {
	for p.isKw("for") || p.isKw("async") || p.isKw("if") {
		if p.isKw("async") {
			p.next()
		}
		if p.isKw("if") {
			p.next()
			p.orTest()
			continue
		}
		p.next()
		p.targetList()
		if !p.isKw("in") {
			p.fail(p.peek(), "expected in, found %s", describe(p.peek()))
		}
		p.next()
		p.orTest()
	}
}

func (p *parser) atom() expr {
	p.enter()
	defer p.leave()
	t := p.peek()
	P := tpos(t)
	switch t.Kind {
	case tName:
		switch t.Val {
		case "True":
			p.next()
			return &constExpr{P: P, V: true}
		case "False":
			p.next()
			return &constExpr{P: P, V: false}
		case "None":
			p.next()
			return &constExpr{P: P, V: nil}
		case "yield":
			p.next()
			if !p.isOp(")") && !p.atLineEnd() && !p.isOp("=") {
				if p.isKw("from") {
					p.next()
				}
				p.exprList()
			}
			return &yieldExpr{P: P}
		}
		if keywords[t.Val] {
			p.fail(t, "unexpected %s", describe(t))
		}
		p.next()
		return &nameExpr{P: P, ID: t.Val}
	case tNumber:
		p.next()
		return p.number(t)
	case tString:
		return p.strings()
	case tOp:
		switch t.Val {
		case "...":
			p.next()
			return &constExpr{P: P, Ellipsis: true}
		case "(":
			p.next()
			if p.acceptOp(")") {
				return &tupleExpr{P: P}
			}
			if p.isKw("yield") {
				x := p.atom()
				p.expectOp(")")
				return x
			}
			first := p.starOrNamed()
			if p.isKw("for") || p.isKw("async") {
				p.compFor()
				p.expectOp(")")
				return &compExpr{P: P, Kind: "generator"}
			}
			if p.acceptOp(")") {
				if _, star := first.(*starExpr); star {
					p.fail(t, "a starred expression needs a tuple")
				}
				return first
			}
			tu := &tupleExpr{P: P, Elts: []expr{first}}
			for p.acceptOp(",") {
				if p.isOp(")") {
					break
				}
				tu.Elts = append(tu.Elts, p.starOrNamed())
			}
			p.expectOp(")")
			return tu
		case "[":
			p.next()
			l := &listExpr{P: P}
			if p.acceptOp("]") {
				return l
			}
			first := p.starOrNamed()
			if p.isKw("for") || p.isKw("async") {
				p.compFor()
				p.expectOp("]")
				return &compExpr{P: P, Kind: "list"}
			}
			l.Elts = append(l.Elts, first)
			for p.acceptOp(",") {
				if p.isOp("]") {
					break
				}
				l.Elts = append(l.Elts, p.starOrNamed())
			}
			p.expectOp("]")
			return l
		case "{":
			p.next()
			return p.dictOrSet(P)
		}
	}
	p.fail(t, "unexpected %s", describe(t))
	return nil
}

func (p *parser) starOrNamed() expr {
	if p.isOp("*") {
		t := p.next()
		return &starExpr{P: tpos(t), X: p.orExpr()}
	}
	return p.namedExpr()
}

func (p *parser) dictOrSet(P Pos) expr {
	if p.acceptOp("}") {
		return &dictExpr{P: P}
	}
	var d *dictExpr
	var s *setExpr
	item := func(first bool) {
		if p.acceptOp("**") {
			if s != nil {
				p.fail(p.peek(), "** inside a set")
			}
			if d == nil {
				d = &dictExpr{P: P}
			}
			d.Keys = append(d.Keys, nil)
			d.Values = append(d.Values, p.orExpr())
			return
		}
		k := p.starOrNamed()
		if (first || d != nil) && p.acceptOp(":") {
			if d == nil {
				d = &dictExpr{P: P}
			}
			d.Keys = append(d.Keys, k)
			d.Values = append(d.Values, p.test())
			return
		}
		if d != nil {
			p.fail(p.peek(), "expected \":\" in a dict")
		}
		if s == nil {
			s = &setExpr{P: P}
		}
		s.Elts = append(s.Elts, k)
	}
	item(true)
	if p.isKw("for") || p.isKw("async") {
		p.compFor()
		p.expectOp("}")
		kind := "set"
		if d != nil {
			kind = "dict"
		}
		return &compExpr{P: P, Kind: kind}
	}
	for p.acceptOp(",") {
		if p.isOp("}") {
			break
		}
		item(false)
	}
	p.expectOp("}")
	if d != nil {
		return d
	}
	return s
}

func (p *parser) number(t token) expr {
	s := strings.ReplaceAll(t.Val, "_", "")
	P := tpos(t)
	ls := strings.ToLower(s)
	if strings.HasSuffix(ls, "j") {
		p.fail(t, "complex numbers are not read")
	}
	if strings.HasPrefix(ls, "0x") || strings.HasPrefix(ls, "0o") || strings.HasPrefix(ls, "0b") {
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			p.fail(t, "invalid number %q", t.Val)
		}
		return &constExpr{P: P, V: v}
	}
	if !strings.ContainsAny(ls, ".e") {
		if len(s) > 1 && s[0] == '0' && strings.Trim(s, "0") != "" {
			p.fail(t, "invalid number %q (leading zeros)", t.Val)
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			p.fail(t, "invalid or too large integer %q", t.Val)
		}
		return &constExpr{P: P, V: v}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || strings.ContainsAny(ls, "xabcdfghijklmnopqrstuvwyz") {
		p.fail(t, "invalid number %q", t.Val)
	}
	return &constExpr{P: P, V: v}
}

// strings reads adjacent string literals, concatenated as Python does;
// an f-string among them makes the whole an fstringExpr.
func (p *parser) strings() expr {
	first := p.peek()
	P := tpos(first)
	var parts []expr
	isF, isBytes, isStr := false, false, false
	for p.peek().Kind == tString {
		t := p.next()
		if strings.ContainsRune(t.Prefix, 'b') {
			isBytes = true
		} else {
			isStr = true
		}
		if strings.ContainsRune(t.Prefix, 'f') {
			isF = true
			parts = append(parts, p.fstring(t)...)
			continue
		}
		parts = append(parts, &constExpr{P: tpos(t), V: t.Val})
	}
	if isBytes && isStr {
		p.fail(first, "cannot mix bytes and str literals")
	}
	if !isF {
		var b strings.Builder
		for _, x := range parts {
			b.WriteString(x.(*constExpr).V.(string))
		}
		return &constExpr{P: P, V: b.String(), Bytes: isBytes}
	}
	return &fstringExpr{P: P, Parts: parts}
}

// fstring splits an f-string body into literal parts and {expr!c:spec}
// fields; each field's expression is tokenized and parsed on its own.
func (p *parser) fstring(t token) []expr {
	body := t.Val
	raw := strings.ContainsRune(t.Prefix, 'r')
	var out []expr
	var lit strings.Builder
	flush := func() {
		if lit.Len() == 0 {
			return
		}
		s := lit.String()
		if !raw {
			var err error
			s, err = unescape(s)
			if err != nil {
				p.fail(t, "%v", err)
			}
		}
		out = append(out, &constExpr{P: tpos(t), V: s})
		lit.Reset()
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch c {
		case '{':
			if i+1 < len(body) && body[i+1] == '{' {
				lit.WriteByte('{')
				i++
				continue
			}
			flush()
			end, conv, spec, exprText := scanField(body, i+1)
			if end < 0 {
				p.fail(t, "unterminated { in an f-string")
			}
			x := p.fieldExpr(t, exprText)
			out = append(out, &fieldExpr{P: tpos(t), X: x, Conv: conv, Spec: spec})
			i = end
		case '}':
			if i+1 < len(body) && body[i+1] == '}' {
				lit.WriteByte('}')
				i++
				continue
			}
			p.fail(t, "single } in an f-string")
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return out
}

// scanField finds the end of an f-string field starting after "{": it
// returns the index of the closing "}", the conversion, the format spec
// and the expression's text.
func scanField(body string, start int) (end int, conv, spec, exprText string) {
	depth := 0
	var quote byte
	exprEnd := -1
	for i := start; i < len(body); i++ {
		c := body[i]
		if quote != 0 {
			if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']':
			depth--
		case '}':
			if depth > 0 {
				depth--
				continue
			}
			if exprEnd < 0 {
				exprEnd = i
			}
			e := body[start:exprEnd]
			rest := body[exprEnd:i]
			if strings.HasPrefix(rest, "!") && len(rest) >= 2 {
				conv = rest[1:2]
				rest = rest[2:]
			}
			spec = strings.TrimPrefix(rest, ":")
			return i, conv, spec, e
		case '!':
			if depth == 0 && exprEnd < 0 && (i+1 >= len(body) || body[i+1] != '=') {
				exprEnd = i
			}
		case ':':
			if depth == 0 && exprEnd < 0 {
				exprEnd = i
			}
		}
	}
	return -1, "", "", ""
}

func (p *parser) fieldExpr(t token, text string) expr {
	text = strings.TrimSpace(text)
	text = strings.TrimSuffix(text, "=") // f"{x=}" prints "x=" and the value; the value is what we need
	if text == "" {
		p.fail(t, "empty {} in an f-string")
	}
	if p.depth > maxNesting/2 {
		p.fail(t, "f-strings nested too deeply")
	}
	toks, err := tokenize(p.file, "("+text+")")
	if err != nil {
		p.fail(t, "in an f-string field {%s}: %v", text, err)
	}
	for i := range toks {
		toks[i].Line, toks[i].Col = t.Line, t.Col
	}
	sub := &parser{file: p.file, toks: toks, depth: p.depth}
	x := sub.test()
	if sub.peek().Kind != tNewline {
		p.fail(t, "cannot read the f-string field {%s}", text)
	}
	return x
}
