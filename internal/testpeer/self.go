package testpeer

import (
	"context"
	"os"
	"os/exec"
)

// SelfArgs returns the command line that runs this test binary again with
// only the test function named test (matched exactly), once, followed by
// args: the argument list of [SelfCommand], for a caller that runs it
// through a wrapper program.
func SelfArgs(test string, args ...string) []string {
	return append([]string{os.Args[0], "-test.run=^" + test + "$", "-test.count=1"}, args...)
}

// SelfCommand returns a command (not started) that runs this test binary
// again as a child process executing only the test function named test,
// with env added to this process's environment. It is the pattern of tests
// that need a process of their own (a lowered file limit, a signal, an exit
// code): the named test does its work only when it finds its variable in
// env, and skips otherwise. ctx ends the child as in exec.CommandContext.
func SelfCommand(ctx context.Context, test string, env []string, args ...string) *exec.Cmd {
	a := SelfArgs(test, args...)
	cmd := exec.CommandContext(ctx, a[0], a[1:]...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}
