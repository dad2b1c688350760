package worker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Task selection by tag (Locust's -T/--tags and -E/--exclude-tags, Locust
// 2.12.1 locust/user/task.py filter_tasks_by_tags and
// Environment._filter_tasks_by_tags):
//
//   - with tags set, a task runs only if it has at least one of them;
//   - with exclude tags set, a task runs only if it has none of them;
//   - an empty list is the same as none (Locust tests `if parsed_options.tags`).
//
// The tags in effect are the master's, from the spawn message's
// parsed_options "tags" and "exclude_tags", when the master sends those
// keys (a Python master always does, null when unset, which overrides the
// worker's own -T/-E as it does for a Python worker); otherwise the
// worker's own, Options.Tags and Options.ExcludeTags. A cicada master
// sends its -T/-E.
//
// A class left with no task still spawns, as in Locust: each of its users
// runs OnStart, then reports the exception "No tasks defined on <class>..."
// (Locust's text) at every step. Deliberate differences: such a user waits
// at least NoTaskWait between steps where Locust would spin on a zero wait,
// and the selection is computed afresh from the scenario at the start of
// every test, where a Python worker filters its classes once per process
// (the same result unless the tags change between tests).

// NoTaskWait is the least wait between two steps of a user whose class has
// no task left after tag filtering.
const NoTaskWait = time.Second

// taskTable is a class's task selection: the tasks that passed the tag
// filter, with their cumulative weights and sequential order.
type taskTable struct {
	idx   []int // indexes into UserClass.Tasks of the selected tasks
	cum   []int // cumulative weights over idx
	total int
	seq   []int // indexes into UserClass.Tasks, sequential order
}

// tagFilter is the tags in effect for a test; nil slices mean unset.
type tagFilter struct {
	tags, exclude []string
}

func (f tagFilter) active() bool { return len(f.tags) > 0 || len(f.exclude) > 0 }

// passes reports whether a task with the given tags runs under f.
func (f tagFilter) passes(taskTags []string) bool {
	if len(f.tags) > 0 && !intersects(taskTags, f.tags) {
		return false
	}
	if len(f.exclude) > 0 && intersects(taskTags, f.exclude) {
		return false
	}
	return true
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// buildTable selects uc's tasks under f.
func buildTable(uc *UserClass, f tagFilter) *taskTable {
	t := &taskTable{}
	for i, task := range uc.Tasks {
		if !f.passes(task.Tags) {
			continue
		}
		w := max(task.Weight, 1)
		t.idx = append(t.idx, i)
		t.total += w
		t.cum = append(t.cum, t.total)
		if uc.Sequential {
			for range w {
				t.seq = append(t.seq, i)
			}
		}
	}
	return t
}

// FilterTasks returns the names of each class's tasks that run under the
// given tags and exclude tags (Locust's semantics, see the package notes
// on tags), and the tags and exclude tags that match no task of any class
// (worth a warning). Classes are keyed by name; a class with no task left
// maps to an empty slice.
func FilterTasks(classes []UserClass, tags, exclude []string) (kept map[string][]string, unmatched []string) {
	f := tagFilter{tags: tags, exclude: exclude}
	kept = make(map[string][]string, len(classes))
	for i := range classes {
		names := []string{}
		for _, task := range classes[i].Tasks {
			if f.passes(task.Tags) {
				names = append(names, task.Name)
			}
		}
		kept[classes[i].Name] = names
	}
	return kept, unmatchedTags(classes, f)
}

// unmatchedTags returns the tags of f that no task of classes carries,
// sorted, without duplicates.
func unmatchedTags(classes []UserClass, f tagFilter) []string {
	known := map[string]bool{}
	for i := range classes {
		for _, t := range classes[i].Tasks {
			for _, tag := range t.Tags {
				known[tag] = true
			}
		}
	}
	var out []string
	for _, tag := range slices.Concat(f.tags, f.exclude) {
		if !known[tag] && !slices.Contains(out, tag) {
			out = append(out, tag)
		}
	}
	sort.Strings(out)
	return out
}

// noTasksError is Locust's exception text for a user whose class has no
// task (locust/user/task.py DefaultTaskSet.get_next_task).
func noTasksError(class string) error {
	return fmt.Errorf("%w: No tasks defined on %s. Use the @task decorator or set the 'tasks' attribute of the User "+
		"(or mark it as abstract = True if you only intend to subclass it)", ErrScenario, class)
}

// tagsOf reads a tag list from parsed_options: present reports whether the
// key is there at all (nil included).
func tagsOf(opts map[string]any, key string) (tags []string, present bool, err error) {
	v, ok := opts[key]
	if !ok {
		return nil, false, nil
	}
	switch v := v.(type) {
	case nil:
		return nil, true, nil
	case []any:
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, true, fmt.Errorf("parsed_options %s[%d]: not a string (%T)", key, i, e)
			}
			tags = append(tags, s)
		}
		return tags, true, nil
	case string: // a lenient master: one tag, or a comma/space list
		return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }), true, nil
	default:
		return nil, true, fmt.Errorf("parsed_options %s: not a list (%T)", key, v)
	}
}

// applyTags computes the tag filter of a new test from the spawn's
// parsed_options (or the worker's own tags) and installs each class's
// task table; it logs a warning for each tag that matches no task and for
// each class left without tasks. It runs on the controller goroutine
// before the test's first users start.
func (w *Worker) applyTags(parsed map[string]any) {
	f := tagFilter{tags: w.opts.Tags, exclude: w.opts.ExcludeTags}
	if tags, ok, err := tagsOf(parsed, "tags"); err != nil {
		w.log.Warn("spawn: ignoring unusable tags: " + err.Error())
	} else if ok {
		f.tags = tags
	}
	if tags, ok, err := tagsOf(parsed, "exclude_tags"); err != nil {
		w.log.Warn("spawn: ignoring unusable exclude_tags: " + err.Error())
	} else if ok {
		f.exclude = tags
	}
	if f.active() && w.opts.Runtime != nil {
		w.reportException(fmt.Sprintf("%v: tags (-T/-E) cannot be honoured by this worker's runtime (the data plane): "+
			"every task runs; run tagged tests on kernel-socket workers", ErrScenario), "")
	}
	classes := make([]UserClass, len(w.classes))
	for i, cc := range w.classes {
		classes[i] = *cc.def
		cc.table.Store(buildTable(cc.def, f))
		if f.active() && len(cc.table.Load().idx) == 0 {
			w.log.Warn(cc.def.Name + " had no tasks left after filtering, instantiating it will fail!")
		}
	}
	if f.active() {
		for _, tag := range unmatchedTags(classes, f) {
			w.log.Warn(fmt.Sprintf("tag %q matches no task of any user class", tag))
		}
	}
}
