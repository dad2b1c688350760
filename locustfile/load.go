package locustfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/cicada-load/cicada/internal/filelimit"
	"github.com/cicada-load/cicada/master"
	"github.com/cicada-load/cicada/scenario"
	"github.com/cicada-load/cicada/worker"
)

// Loaded is one or more locustfiles translated to one scenario.
type Loaded struct {
	// File is the scenario: the understood user classes of every file,
	// and the stage table of a LoadTestShape.
	File *scenario.File
	// Modules are the read files, in the order of the -f value.
	Modules []*Module
	// Refused lists every user class left out, with why.
	Refused []*Error
}

// IsLocustfileSpec reports whether a -f value names Python locustfiles: a
// .py file, a comma-separated list of them, or a directory.
func IsLocustfileSpec(spec string) bool {
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		if strings.HasSuffix(strings.ToLower(p), ".py") {
			return true
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// Paths expands a -f value as Locust does: comma-separated .py files, or
// one directory searched recursively for *.py files not starting with "_"
// (and not locust.py), sorted.
func Paths(spec string) ([]string, error) {
	parts := strings.Split(spec, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if len(parts) == 1 {
		if fi, err := os.Stat(parts[0]); err == nil && fi.IsDir() {
			var out []string
			err := filepath.WalkDir(parts[0], func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				n := d.Name()
				if !d.IsDir() && strings.HasSuffix(n, ".py") && !strings.HasPrefix(n, "_") && strings.ToLower(n) != "locust.py" {
					out = append(out, p)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("locustfile: %w", err)
			}
			if len(out) == 0 {
				return nil, fmt.Errorf("%w: directory %s holds no locustfile (*.py)", ErrNoUsers, parts[0])
			}
			sort.Strings(out)
			return out, nil
		}
	}
	for _, p := range parts {
		if !strings.HasSuffix(p, ".py") {
			return nil, fmt.Errorf("%w: -f %s: %q is not a .py file (Locust takes .py files or one directory)", ErrUnsupported, spec, p)
		}
		if filepath.Base(p) == "locust.py" {
			return nil, fmt.Errorf("%w: %s: a locustfile must not be named locust.py (as in Locust)", ErrUnsupported, p)
		}
	}
	return parts, nil
}

// Load reads the locustfiles a -f value names (see Paths) and translates
// them to one scenario. lookup resolves ${VAR} (os.environ in the Python);
// nil means none is set.
func Load(spec string, lookup func(string) (string, bool)) (*Loaded, error) {
	paths, err := Paths(spec)
	if err != nil {
		return nil, err
	}
	var mods []*Module
	for _, p := range paths {
		data, err := filelimit.Read(p, MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("locustfile: %w", err)
		}
		m, err := Read(p, data)
		if err != nil && !(errors.Is(err, ErrNoUsers) && len(paths) > 1 && m != nil) {
			return nil, err
		}
		mods = append(mods, m)
	}
	return Translate(mods, lookup)
}

// Translate turns read modules into one scenario. A class whose
// translation this build's scenario package refuses (a construct of the
// agreed syntax it does not read yet) is added to Refused.
func Translate(mods []*Module, lookup func(string) (string, bool)) (*Loaded, error) {
	l := &Loaded{Modules: mods}
	seen := map[string]string{}
	var stages []Stage
	stageFile := ""
	for _, m := range mods {
		l.Refused = append(l.Refused, m.Refused...)
		for _, u := range m.Users {
			if prev, dup := seen[u.Name]; dup {
				return nil, &Error{File: m.File, Line: u.Line, Col: 1, Class: u.Name, Construct: "duplicate user class",
					Msg: fmt.Sprintf("also defined in %s (Locust refuses this too)", prev)}
			}
			seen[u.Name] = m.File
		}
		if m.Stages != nil {
			if stages != nil {
				return nil, &Error{File: m.File, Line: 1, Col: 1, Construct: "second LoadTestShape",
					Msg: fmt.Sprintf("%s has one already; Locust runs one shape", stageFile)}
			}
			stages, stageFile = m.Stages, m.File
		}
	}
	skip := map[*User]bool{}
	name := mods[0].File
	if len(mods) > 1 {
		name = fmt.Sprintf("%s (and %d more)", name, len(mods)-1)
	}
	for {
		merged := &Module{File: name, Stages: stages}
		var kept []*User
		for _, m := range mods {
			for _, u := range m.Users {
				if !skip[u] {
					merged.Users = append(merged.Users, u)
					kept = append(kept, u)
				}
			}
		}
		if len(kept) == 0 {
			if len(l.Refused) > 0 {
				return nil, fmt.Errorf("%w: %w", ErrNoUsers, l.Refused[0])
			}
			return nil, fmt.Errorf("%w: %s", ErrNoUsers, name)
		}
		data := merged.YAML(nil)
		f, err := scenario.Parse(name+" (translated)", data, lookup)
		if err == nil {
			f.Path = name
			// The class names are the locustfile's: a name the master
			// sends that is not here is a class left out of the read.
			f.Scenario.ExactClassNames = true
			l.File = f
			return l, nil
		}
		var se *scenario.Error
		i := -1
		if errors.As(err, &se) {
			i = userIndex(se.Field)
		}
		if i < 0 || i >= len(kept) {
			return nil, fmt.Errorf("locustfile: %s: the translation is not a valid scenario (a reader bug; please report it): %w", name, err)
		}
		u := kept[i]
		skip[u] = true
		file := name
		for _, m := range mods {
			for _, mu := range m.Users {
				if mu == u {
					file = m.File
				}
			}
		}
		msg := se.Msg
		if se.Field != "" {
			msg = se.Field + ": " + msg
		}
		l.Refused = append(l.Refused, &Error{File: file, Line: u.Line, Col: 1, Class: u.Name, Construct: "translation",
			Msg: "this build's YAML scenario cannot hold the translation (" + msg + "); keep this class on Python workers"})
	}
}

var userField = regexp.MustCompile(`^users\[(\d+)\]`)

func userIndex(field string) int {
	m := userField.FindStringSubmatch(field)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// Convert reads the locustfiles of spec and returns the equivalent YAML
// scenario (every understood class, whether or not this build's scenario
// package reads all of the agreed syntax) and the refusals.
func Convert(spec string) ([]byte, []*Error, error) {
	paths, err := Paths(spec)
	if err != nil {
		return nil, nil, err
	}
	merged := &Module{File: spec}
	var refused []*Error
	for _, p := range paths {
		data, err := filelimit.Read(p, MaxFileSize)
		if err != nil {
			return nil, nil, fmt.Errorf("locustfile: %w", err)
		}
		m, err := Read(p, data)
		if err != nil && !(errors.Is(err, ErrNoUsers) && m != nil) {
			return nil, nil, err
		}
		refused = append(refused, m.Refused...)
		merged.Users = append(merged.Users, m.Users...)
		merged.Refused = append(merged.Refused, m.Refused...)
		if m.Stages != nil {
			merged.Stages = m.Stages
		}
	}
	if len(merged.Users) == 0 {
		if len(refused) > 0 {
			return nil, refused, fmt.Errorf("%w: %w", ErrNoUsers, refused[0])
		}
		return nil, nil, fmt.Errorf("%w: %s", ErrNoUsers, spec)
	}
	return merged.YAML(nil), refused, nil
}

// Stages converts the shape's stage table for a master.
func (l *Loaded) Stages() []master.Stage { return l.File.Stages }

// Classes returns the scenario's classes (for --list).
func (l *Loaded) Classes() []worker.UserClass { return l.File.Scenario.Classes }

// RefusalReport is the refusal list as log lines, one per class.
func (l *Loaded) RefusalReport() string {
	var b bytes.Buffer
	for _, e := range l.Refused {
		fmt.Fprintf(&b, "user class %s is not run by cicada: %v\n", e.Class, e)
	}
	return b.String()
}
