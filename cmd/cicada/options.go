package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"github.com/cicada-load/cicada/internal/shutdown"
)

// This file makes the options that only cmd/cicada can act on act:
// --show-task-ratio(-json), --equal-weights and --worker --processes N.
// optionActors (options_test.go) lists who acts on every option.

// childArgs turns the command line (app.args) into a child's arguments (tests run the
// children through the test binary).
var childArgs = func(args []string) []string { return args }

// Contracts between a --worker --processes parent and its children (this
// binary), not options: processChildEnv=1 makes a child a plain worker
// (it ignores --processes, wherever it was set), processIndexEnv is its
// index, which suffixes a --node-id given to the parent.
const (
	processChildEnv = "CICADA_INTERNAL_PROCESS_CHILD"
	processIndexEnv = "CICADA_INTERNAL_PROCESS_INDEX"
)

// errNoClassPicker answers a start request that picks user classes when
// --class-picker is off: Locust ignores the choice then; cicada says so.
var errNoClassPicker = errors.New("this start request picks user classes (user_classes), which needs --class-picker; without it every user class runs")

// showTaskRatio prints --show-task-ratio (or, alone, -json) and exits 0, as
// Locust does before anything starts.
func (a *app) showTaskRatio() int {
	if a.learnClasses {
		a.log.Error("--show-task-ratio needs a scenario (-f): a master without -f knows no tasks")
		return 1
	}
	if a.cfg.ShowTaskRatio {
		writeTaskRatio(a.stdout, a.file.Scenario.Classes, a.cfg.Users)
	} else {
		writeTaskRatioJSON(a.stdout, a.file.Scenario.Classes, a.cfg.Users)
	}
	return 0
}

// applyEqualWeights is --equal-weights (Locust 2.12.1
// Environment.assign_equal_weights): every class weight 1 (a fixed count
// stays), every task weight 1, and a sequential class's tasks picked at
// random as Locust flattens a SequentialTaskSet into its user. The master
// dispatches with the class weights, the workers pick with the task
// weights: each process acts on its own --equal-weights, as Python's do.
func (a *app) applyEqualWeights() {
	if !a.cfg.EqualWeights || a.file == nil {
		return
	}
	classes := a.file.Scenario.Classes
	for i := range classes {
		classes[i].Weight = 1
		classes[i].Sequential = false
		tasks := append(classes[i].Tasks[:0:0], classes[i].Tasks...) // not the parser's array
		for j := range tasks {
			tasks[j].Weight = 1
		}
		classes[i].Tasks = tasks
	}
}

// workerProcesses is the number of child workers --worker --processes
// asks for (-1: one per CPU), or 0 when this process is the worker.
func (a *app) workerProcesses() int {
	if !a.cfg.Worker || a.cfg.Processes == 0 || os.Getenv(processChildEnv) == "1" {
		return 0
	}
	if a.cfg.Processes < 0 {
		return runtime.NumCPU()
	}
	return a.cfg.Processes
}

// runWorkerProcesses is --worker --processes N as in Locust (2.19+, where
// the option appeared): this process runs no users; it starts N worker
// processes of this binary with the same arguments and waits for them,
// exiting with the highest of their exit codes. Each child is a worker of
// its own (own node id, own connection to the master). The first signal
// is passed on to the children (a graceful quit each); a second one, or
// workerQuitGrace after the first, kills them.
func (a *app) runWorkerProcesses(sig *shutdown.Signals, n int) int {
	self, err := os.Executable()
	if err != nil {
		a.log.Error(fmt.Sprintf("--processes: cannot find this executable: %v", err))
		return 1
	}
	a.log.Info(fmt.Sprintf("Starting %d worker processes", n))
	cmds := make([]*exec.Cmd, 0, n)
	for i := range n {
		cmd := exec.Command(self, childArgs(a.args)...)
		cmd.Stdout, cmd.Stderr = a.stdout, a.stderr
		cmd.Env = append(os.Environ(), processChildEnv+"=1", processIndexEnv+"="+strconv.Itoa(i))
		// Own process group: a terminal's Ctrl-C reaches the parent only,
		// which passes it on once.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			a.log.Error(fmt.Sprintf("--processes: %v", err))
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
			return 1
		}
		cmds = append(cmds, cmd)
	}
	codes := make(chan int, n)
	for _, cmd := range cmds {
		go func() {
			err := cmd.Wait()
			var ee *exec.ExitError
			switch {
			case err == nil:
				codes <- 0
			case errors.As(err, &ee) && ee.ExitCode() >= 0:
				codes <- ee.ExitCode()
			default:
				codes <- 1 // killed by a signal
			}
		}()
	}
	exit, left := 0, n
	quit, force := sig.Quit.Done(), sig.Force.Done()
	for left > 0 {
		select {
		case c := <-codes:
			exit = max(exit, c)
			left--
		case <-quit:
			quit = nil
			for _, cmd := range cmds {
				_ = cmd.Process.Signal(os.Interrupt)
			}
		case <-force:
			force = nil
			for _, cmd := range cmds {
				_ = cmd.Process.Kill()
			}
		}
	}
	return exit
}

// childNodeID is --node-id for child i of --worker --processes: the
// parent's id with "_<i>", so that the children's ids differ.
func childNodeID(id string) string {
	if id == "" {
		return ""
	}
	if i := os.Getenv(processIndexEnv); i != "" && os.Getenv(processChildEnv) == "1" {
		return id + "_" + i
	}
	return id
}
