package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
)

// benchZeroMeansDefault are the options whose zero value the search or the
// prober would silently replace by a default while the report stated 0:
// given as 0, they are refused.
var benchZeroMeansDefault = []string{"trial-time", "connect-timeout", "timeout", "conns", "window", "max-trials", "step-factor", "cpu-busy", "lag-tolerance"}

// benchCheckOptions refuses what runBench's other checks let through and
// cicada cannot honour: a zero that would become a default, a --load that
// is not a finite number, and --csv or --html files that cannot be written
// (checked before a search that may run for hours, not after it).
func benchCheckOptions(fs *pflag.FlagSet, o *benchOptions) error {
	for _, name := range benchZeroMeansDefault {
		if f := fs.Lookup(name); f != nil && f.Changed {
			switch f.Value.String() {
			case "0", "-0", "0s":
				return fmt.Errorf("--%s 0: must be positive (leave it out for the default %s)", name, f.DefValue)
			}
		}
	}
	if math.IsNaN(o.load) || math.IsInf(o.load, 0) {
		return fmt.Errorf("--load %v must be a finite number", o.load)
	}
	if o.csv != "" {
		if err := benchWritable("--csv", o.csv+"_bench.csv"); err != nil {
			return err
		}
	}
	if o.html != "" {
		if err := benchWritable("--html", o.html); err != nil {
			return err
		}
	}
	return nil
}

// benchWritable checks that path can be created: its directory exists and
// takes a new file, and path is not a directory. The check creates and
// removes a temporary file in the directory.
func benchWritable(flag, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s: %s is a directory", flag, path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: directory %s does not exist", flag, dir)
	case err != nil:
		return fmt.Errorf("%s: %w", flag, err)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a directory", flag, dir)
	}
	f, err := os.CreateTemp(dir, ".cicada-bench-*")
	if err != nil {
		return fmt.Errorf("%s: cannot write in %s: %w", flag, dir, err)
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return nil
}
