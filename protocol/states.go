package protocol

// Runner and worker states, exactly Locust's strings (STATE_* of
// locust/runners.py, 2.12.1, as WorkerRunner.heartbeat sends them). Workers
// send their state in Heartbeat.State (ready, spawning, running, stopped,
// cleanup, stopping); a master shows its own state and each worker's in the
// web UI and logs, where StateMissing marks a worker whose heartbeats
// stopped. These constants are the one home of the values: master, worker
// and web use them.
const (
	StateReady    = "ready"
	StateSpawning = "spawning"
	StateRunning  = "running"
	StateCleanup  = "cleanup"
	StateStopping = "stopping"
	StateStopped  = "stopped"
	StateMissing  = "missing"
)
