package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cicada-load/cicada/locustfile"
	"github.com/cicada-load/cicada/scenario"
)

// loadLocustfile reads -f locustfile.py (a comma-separated list, a
// directory) through package locustfile. The classes it refuses are
// logged, one warning each, and the others run; none left is an error.
func (a *app) loadLocustfile(spec string) (*scenario.File, error) {
	l, err := locustfile.Load(spec, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", spec, err)
	}
	a.logRefusals(l)
	return l.File, nil
}

func (a *app) logRefusals(l *locustfile.Loaded) {
	for _, e := range l.Refused {
		a.log.Warn(fmt.Sprintf("user class %s is not run by cicada (keep it on Python workers): %v", e.Class, e))
	}
}

// readServedLocustfile runs a Python master's locustfile (-f - under a
// Python Locust master >= 2.23) through the reader.
func (a *app) readServedLocustfile(name, contents string) (*scenario.File, error) {
	m, err := locustfile.Read(name+" (from the master)", []byte(contents))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenarioFetch, err)
	}
	l, err := locustfile.Translate([]*locustfile.Module{m}, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenarioFetch, err)
	}
	if a != nil && a.log != nil {
		a.log.Info(fmt.Sprintf("-f -: read the master's Python locustfile %s: %d user classes", name, len(l.File.Scenario.Classes)))
		a.logRefusals(l)
	}
	return l.File, nil
}

const convertUsage = `Usage: cicada convert LOCUSTFILE.py[,MORE.py|DIRECTORY] [-o OUT.yaml]

Translates the HttpUser and FastHttpUser classes of Python locustfiles into a
cicada YAML scenario (doc/locustfile.md). Classes outside the subset cicada
reads are listed on stderr and in a comment at the top of the output; the
exit code is 1 if any class was left out, 0 if all were translated.

Options:`

// runConvert is `cicada convert`.
func runConvert(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("cicada convert", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.StringP("output", "o", "", "Write the YAML scenario to this file (default: standard output)")
	fs.Usage = func() {
		fmt.Fprintln(stdout, convertUsage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "cicada convert: error: give one locustfile (or a comma-separated list, or a directory); got %q\n", fs.Args())
		return 2
	}
	spec := fs.Arg(0)
	if !locustfile.IsLocustfileSpec(spec) {
		fmt.Fprintf(stderr, "cicada convert: error: %s is not a .py locustfile or a directory\n", spec)
		return 2
	}
	data, refused, err := locustfile.Convert(spec)
	for _, e := range refused {
		fmt.Fprintf(stderr, "cicada convert: not translated: %v\n", e)
	}
	if err != nil {
		fmt.Fprintf(stderr, "cicada convert: error: %v\n", err)
		return 1
	}
	if *out == "" {
		_, err = stdout.Write(data)
	} else {
		err = os.WriteFile(*out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "cicada convert: error: %v\n", err)
		return 1
	}
	if len(refused) > 0 {
		return 1
	}
	return 0
}

// isPythonName reports whether a served file name is a Python locustfile.
func isPythonName(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".py") }
