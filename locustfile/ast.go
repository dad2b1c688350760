package locustfile

// Pos is a place in a locustfile: 1-based line and column.
type Pos struct{ Line, Col int }

// expr is a Python expression of the parsed syntax tree.
type expr interface{ pos() Pos }

type (
	nameExpr struct {
		P  Pos
		ID string
	}
	// constExpr is a literal: string, bytes (Bytes), int64, float64,
	// bool, nil (None) or ellipsis (Ellipsis).
	constExpr struct {
		P        Pos
		V        any
		Bytes    bool
		Ellipsis bool
	}
	// fstringExpr is an f-string: literal parts (constExpr) and {expr}
	// parts (fieldExpr).
	fstringExpr struct {
		P     Pos
		Parts []expr
	}
	fieldExpr struct {
		P    Pos
		X    expr
		Conv string // "", "r", "s", "a"
		Spec string // format spec text, if any
	}
	attrExpr struct {
		P    Pos
		X    expr
		Name string
	}
	callExpr struct {
		P    Pos
		Fn   expr
		Args []expr // *x appear as starExpr
		Kw   []keyword
	}
	keyword struct {
		P     Pos
		Name  string // "" for **x
		Value expr
	}
	subscriptExpr struct {
		P     Pos
		X     expr
		Index expr
	}
	sliceExpr struct {
		P            Pos
		Lo, Hi, Step expr
	}
	listExpr struct {
		P    Pos
		Elts []expr
	}
	tupleExpr struct {
		P    Pos
		Elts []expr
	}
	setExpr struct {
		P    Pos
		Elts []expr
	}
	dictExpr struct {
		P      Pos
		Keys   []expr // nil key: **value
		Values []expr
	}
	binExpr struct {
		P    Pos
		Op   string
		X, Y expr
	}
	unaryExpr struct {
		P  Pos
		Op string // "-", "+", "~", "not", "await"
		X  expr
	}
	boolExpr struct {
		P  Pos
		Op string // "and", "or"
		Xs []expr
	}
	compareExpr struct {
		P   Pos
		X   expr
		Ops []string // "==", "!=", "<", "in", "not in", "is", "is not", ...
		Ys  []expr
	}
	ifExpr struct {
		P                Pos
		Test, Body, Else expr
	}
	lambdaExpr struct {
		P    Pos
		Body expr
	}
	// compExpr is a comprehension or generator expression.
	compExpr struct {
		P    Pos
		Kind string // "list", "set", "dict", "generator"
	}
	walrusExpr struct {
		P     Pos
		Name  string
		Value expr
	}
	starExpr struct {
		P      Pos
		Double bool
		X      expr
	}
	yieldExpr struct{ P Pos }
)

func (e *nameExpr) pos() Pos      { return e.P }
func (e *constExpr) pos() Pos     { return e.P }
func (e *fstringExpr) pos() Pos   { return e.P }
func (e *fieldExpr) pos() Pos     { return e.P }
func (e *attrExpr) pos() Pos      { return e.P }
func (e *callExpr) pos() Pos      { return e.P }
func (e *subscriptExpr) pos() Pos { return e.P }
func (e *sliceExpr) pos() Pos     { return e.P }
func (e *listExpr) pos() Pos      { return e.P }
func (e *tupleExpr) pos() Pos     { return e.P }
func (e *setExpr) pos() Pos       { return e.P }
func (e *dictExpr) pos() Pos      { return e.P }
func (e *binExpr) pos() Pos       { return e.P }
func (e *unaryExpr) pos() Pos     { return e.P }
func (e *boolExpr) pos() Pos      { return e.P }
func (e *compareExpr) pos() Pos   { return e.P }
func (e *ifExpr) pos() Pos        { return e.P }
func (e *lambdaExpr) pos() Pos    { return e.P }
func (e *compExpr) pos() Pos      { return e.P }
func (e *walrusExpr) pos() Pos    { return e.P }
func (e *starExpr) pos() Pos      { return e.P }
func (e *yieldExpr) pos() Pos     { return e.P }

// stmt is a Python statement.
type stmt interface{ pos() Pos }

type (
	importStmt struct {
		P     Pos
		From  string // module of "from M import ..."; "" for "import M"
		Names []alias
		Level int // leading dots of a relative import
	}
	alias     struct{ Name, As string }
	classStmt struct {
		P          Pos
		Name       string
		Bases      []expr
		Kw         []keyword
		Body       []stmt
		Decorators []expr
	}
	defStmt struct {
		P          Pos
		Name       string
		Params     []param
		Body       []stmt
		Decorators []expr
		Async      bool
	}
	param struct {
		Name    string
		Default expr
		Star    string // "", "*", "**"
	}
	ifStmt struct {
		P    Pos
		Test expr
		Body []stmt
		Else []stmt // an elif is an ifStmt alone in Else
		Elif bool   // Else holds an elif
	}
	forStmt struct {
		P      Pos
		Target expr
		Iter   expr
		Body   []stmt
		Else   []stmt
	}
	whileStmt struct {
		P    Pos
		Test expr
		Body []stmt
		Else []stmt
	}
	withStmt struct {
		P     Pos
		Items []withItem
		Body  []stmt
	}
	withItem struct {
		X  expr
		As expr
	}
	tryStmt struct {
		P    Pos
		Body []stmt
	}
	returnStmt struct {
		P Pos
		X expr
	}
	// simpleStmt is pass, break, continue, raise, del, global, nonlocal
	// or assert: Kind names it.
	simpleStmt struct {
		P    Pos
		Kind string
		Xs   []expr
	}
	assignStmt struct {
		P       Pos
		Targets []expr // a = b = value
		Value   expr
		Op      string // "=" or an augmented operator like "+="
		Annot   expr   // x: T = value
	}
	exprStmt struct {
		P Pos
		X expr
	}
)

func (s *importStmt) pos() Pos { return s.P }
func (s *classStmt) pos() Pos  { return s.P }
func (s *defStmt) pos() Pos    { return s.P }
func (s *ifStmt) pos() Pos     { return s.P }
func (s *forStmt) pos() Pos    { return s.P }
func (s *whileStmt) pos() Pos  { return s.P }
func (s *withStmt) pos() Pos   { return s.P }
func (s *tryStmt) pos() Pos    { return s.P }
func (s *returnStmt) pos() Pos { return s.P }
func (s *simpleStmt) pos() Pos { return s.P }
func (s *assignStmt) pos() Pos { return s.P }
func (s *exprStmt) pos() Pos   { return s.P }
