package locustfile

// Module is the intermediate model of a read locustfile: the user classes
// cicada runs, the classes it refused and why, and the load shape.
type Module struct {
	// File is the locustfile's name as given.
	File string
	// Users are the concrete user classes (not abstract), in file order.
	Users []*User
	// Refused are the user classes the reader cannot translate, one error
	// each (a *Error with Class set), in file order.
	Refused []*Error
	// Stages is the stage table of a LoadTestShape class; nil if none.
	Stages []Stage
}

// User is a user class translated to requests. Nested TaskSets are
// flattened: each task's Weight is its share of the class's tasks as
// `locust --show-task-ratio` computes it (products of the ratios along the
// nesting), scaled to integers.
type User struct {
	Name       string
	Line       int
	Host       string
	Weight     int
	FixedCount int
	// Wait is the wait_time call as cicada's scenario writes it, like
	// "between(1, 2)"; "" for none (Locust's default: no wait).
	Wait string
	// Sequential is a SequentialTaskSet's order.
	Sequential bool
	OnStart    []*Request
	OnStop     []*Request
	Tasks      []*Task
	// Vars are the user variables drawn before each request (each:
	// request), one per random.randint or random.choice call of a request.
	Vars []Var
}

// Var is a random draw of a request: random.randint(Lo, Hi) when Choice
// is nil, else random.choice(Choice) (the values as Python's str()).
type Var struct {
	Name   string
	Lo, Hi int64
	Choice []string
}

// Task is one task: a function's requests in order.
type Task struct {
	Name     string
	Line     int
	Weight   int
	Tags     []string
	Requests []*Request
}

// Request is one HTTP request. String fields are scenario templates:
// ${name} is a user variable (a capture), ${NAME} or ${NAME:-x} an
// environment variable, $$ a literal $.
type Request struct {
	Line    int
	Method  string
	Path    string
	Name    string
	Headers []KV
	// JSON is the json= body (plain Go values: map[string]any, []any,
	// string, int64, float64, bool, nil); HasJSON tells a JSON null from
	// no body.
	JSON    any
	HasJSON bool
	// Body is a data= body; Form says it is form-encoded.
	Body    string
	HasBody bool
	Form    bool
	Checks  *Checks
	// Captures take values from the response for later requests.
	Captures []Capture
}

// KV is a header.
type KV struct{ Key, Value string }

// Checks are a catch_response block's checks, in the agreed scenario
// syntax (doc/locustfile.md).
type Checks struct {
	Status          []int
	BodyContains    []string
	JSON            []JSONCheck
	MaxResponseTime float64 // milliseconds; 0 for none
}

// JSONCheck is a JSON path that must equal a value.
type JSONCheck struct {
	Path  string
	Value any
}

// Capture takes a value from a response into a user variable.
type Capture struct {
	Name     string
	JSONPath string // "$.a.b[0]"; or
	Header   string // a response header's name
}

// Stage is one row of a LoadTestShape's stage table: until Duration
// seconds since the start, Users users spawned at SpawnRate per second.
type Stage struct {
	Duration  float64
	Users     int64
	SpawnRate float64
}
