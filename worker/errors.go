package worker

import "errors"

// Errors returned by the worker. They are wrapped with %w; test with
// errors.Is.
var (
	// ErrScenario reports an invalid scenario or user class.
	ErrScenario = errors.New("worker: invalid scenario")
	// ErrNoAck means the master did not acknowledge client_ready within
	// the configured number of tries.
	ErrNoAck = errors.New("worker: no ack from master")
	// ErrMasterTimeout means a master that sends heartbeats (Locust ≥
	// 2.19) stopped sending them for longer than the timeout.
	ErrMasterTimeout = errors.New("worker: no heartbeat from master")
	// ErrBadSpawn reports a spawn message the worker refuses (a timestamp
	// that cannot order it); the worker logs it and reports it to the
	// master as an exception.
	ErrBadSpawn = errors.New("worker: bad spawn message")
	// ErrTooManyUsers reports a spawn that asks for more users than the
	// worker's ceiling (Options.MaxUsers): the worker runs the ceiling's
	// worth, in proportion per class, logs it and reports it to the master
	// as an exception.
	ErrTooManyUsers = errors.New("worker: more users than the worker's ceiling")
	// ErrRunning is returned by Run when it is called twice.
	ErrRunning = errors.New("worker: Run called twice")
)
