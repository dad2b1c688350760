package testpeer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
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

// ErrChildFailed is wrapped by ChildLine's error when the child reported a
// failure or its output ended first.
var ErrChildFailed = errors.New("testpeer: child process failed")

// ChildLine reads lines of a child process's output from sc until one
// starts with prefix, and returns the rest of that line: how a child
// started by SelfCommand tells its parent that it is ready ("ADDR
// 127.0.0.1:4242"). A line starting with "ERR" (the child's report of a
// failure) or the end of the output is an error wrapping ErrChildFailed.
// The caller may keep reading from sc.
func ChildLine(sc *bufio.Scanner, prefix string) (string, error) {
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return rest, nil
		}
		if strings.HasPrefix(line, "ERR") {
			return "", fmt.Errorf("%w: %s", ErrChildFailed, line)
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%w: reading its output: %w", ErrChildFailed, err)
	}
	return "", fmt.Errorf("%w: its output ended before a line starting with %q", ErrChildFailed, prefix)
}
