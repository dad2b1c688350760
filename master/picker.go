package master

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cicada-load/cicada/protocol"
)

// ErrClassPick means StartClasses was given a class selection it cannot
// honour: an unknown class name, a change of classes while a test runs,
// or a selection with a load shape.
var ErrClassPick = errors.New("master: class selection")

// StartClasses is Start with the web UI's class picker (Locust's
// --class-picker): the test dispatches only the named classes, with their
// weights and fixed counts. No names means every class of Options.UserClasses
// (or of the workers, when the master learned them) for a new test, and
// the running test's classes for an edit, as Locust's swarm does.
// Deliberate difference: Locust replaces the classes of a running test
// when the form names others; StartClasses refuses that (stop the test
// first), so that no worker runs users of two selections at once.
func (m *Master) StartClasses(users int, spawnRate float64, host *string, names []string) error {
	if len(names) > 0 && len(m.opts.Stages) > 0 {
		return fmt.Errorf("%w: a load shape (stages:) drives this test; its classes cannot be picked", ErrClassPick)
	}
	var err error
	if !m.call(func() { err = m.pickClasses(names) }) {
		return ErrClosed
	}
	if err != nil {
		return err
	}
	return m.Start(users, spawnRate, host)
}

// pickClasses narrows st.run.classes to names. Precondition: loop.
func (m *Master) pickClasses(names []string) error {
	st := &m.st
	all := m.opts.UserClasses
	if len(all) == 0 {
		all = st.run.learned
	}
	if len(all) == 0 && len(st.run.classes) > 0 { // learned before the first pick
		st.run.learned = slices.Clone(st.run.classes)
		all = st.run.learned
	}
	running := st.run.state == protocol.StateRunning || st.run.state == protocol.StateSpawning
	if len(names) == 0 {
		if !running {
			st.run.classes = slices.Clone(all)
		}
		return nil
	}
	var picked []UserClass
	var unknown []string
	for _, name := range names {
		i := slices.IndexFunc(all, func(c UserClass) bool { return c.Name == name })
		switch {
		case i < 0:
			unknown = append(unknown, name)
		case !slices.ContainsFunc(picked, func(c UserClass) bool { return c.Name == name }):
			picked = append(picked, all[i])
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%w: unknown user class(es) %s", ErrClassPick, strings.Join(unknown, ", "))
	}
	// Scenario order, as the dispatcher of the whole list would see them.
	sort.SliceStable(picked, func(i, j int) bool {
		return slices.IndexFunc(all, func(c UserClass) bool { return c.Name == picked[i].Name }) <
			slices.IndexFunc(all, func(c UserClass) bool { return c.Name == picked[j].Name })
	})
	if running {
		if !slices.Equal(classNames(picked), classNames(st.run.classes)) {
			return fmt.Errorf("%w: a running test's classes cannot change (running %s, asked %s); stop it first",
				ErrClassPick, strings.Join(classNames(st.run.classes), ", "), strings.Join(classNames(picked), ", "))
		}
		return nil
	}
	st.run.classes = picked
	return nil
}

func classNames(cs []UserClass) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}
