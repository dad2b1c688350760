// Package testpeer is the one home of the test scaffolding every cicada
// package shares: real peer processes (nginx, Python Locust), free loopback
// ports, polling with a deadline, the checks that a required peer is
// installed, the test binary run again as a child process, and whether
// the race detector is on.
//
// It is an ordinary (non-test) package, as net/http/httptest is, so that
// tests of every package and the programs under bench/ use the same code.
// Each helper comes in two forms: one taking a [T] (testing.TB satisfies it)
// that fails or skips the test and registers cleanups, and one returning an
// error for programs (bench/), which own the cleanup:
//
//	t-form                      error form
//	FreePort(t)                 PickPort()
//	StartNginx(t, cfg)          cfg.Start() then (*Nginx).Stop or StopWithin
//	StartLocust(t, cfg)         cfg.Start() then (*Process).Stop
//	-                           StartProcess(cmd, log) then (*Process).Stop
//	-                           SelfCommand(ctx, test, env, args...)
//	-                           CSVRow(path, first)
//	-                           ChildLine(scanner, prefix)
//	Go(t, what, within, run)    -
//	Eventually(t, d, what, f)   Poll(d, interval, f)
//	RequirePeer(t, name)        LookPeer(name)
//	RequirePython(t, mods...)   CheckPython(mods...)
//	MustTestCA(t), MustIssue    NewTestCA(), Issue (throw-away TLS certificates)
//
// A required peer that is missing fails the test when the environment has
// CI=true (the CI machine installs every peer, see .ci/run) and skips it
// otherwise; [Missing] is that policy for checks of other kinds.
//
// Peers listen on 127.0.0.1 only. Processes are ended by their own PID
// (SIGQUIT or SIGTERM, then SIGKILL after a grace period), never by name.
// The package imports neither testing nor any other cicada package, so any
// package may use it without a cycle.
package testpeer
