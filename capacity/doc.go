// Package capacity is the search of `cicada bench`: the highest load a device
// under test sustains within stated acceptance criteria, found by trials of a
// set duration, as RFC 3511 (sections 5.2 to 5.7 and 5.10) and RFC 9411 (its
// successor, sections 7.2 to 7.5 and their 6.3 reporting) describe, and the
// report of that search (console table, CSV, an HTML page with a chart).
//
// The package is pure logic: a trial is a TrialFunc the caller supplies (the
// kernel-socket trials of package capacity/probe, the data-plane trials of
// capacity/dpprobe, the trials split across cicada workers of
// capacity/cluster, or a fake device in tests),
// so the search runs the same against a real device and a model.
//
// The search (Search.Run):
//
//   - Step phase: the first trial runs at Start; each passed trial multiplies
//     the load by StepFactor (capped at Max) until a trial fails. A pass at Max
//     ends the search with Result.Ceiling: the device's limit is at least Max,
//     not at Max.
//   - Binary phase: between the highest pass (lo; 0 if none) and the lowest
//     failure (hi), the midpoint is tried until hi-lo is at most Resolution of
//     lo (or MinStep), or MaxTrials ran (Result.Found false: "not
//     converged"). When nothing passes, it goes down to Min (Start/100) and
//     reports no maximum.
//   - Confirmation (Confirm): the found maximum is tried once more; a failure
//     makes it the new hi and the binary phase resumes below it (a noisy
//     device passes a load once by chance).
//
// Acceptance (Criteria.Judge) follows RFC 9411 section 7: a trial passes when
// its failed connections or transactions are at most MaxFailureRatio of those
// attempted (RFC 9411 asks for 0.001 %, RFC 3511 for none: the zero default),
// its latency percentile is within LatencyBound, the load achieved is at least
// MinAchieved of the load offered, and, for the concurrent capacity test, every
// held connection answered the second round (RFC 3511 section 5.2).
//
// Generator limits: a trial whose Trial.GeneratorLimit is set (the driver saw
// a hard limit of its own: open files, the port range, an in-flight cap) is
// Invalid, not failed: the search stops there and Result.Invalid names the
// limit, and Result.Max is reported as a lower bound only. It never turns a
// generator-limited trial into the device's maximum.
//
// Trial.GeneratorStrain is a soft limit (the generator's CPU busy or
// starved by the host's other load, its pacer late): it makes a trial that
// failed Invalid, since the generator may have caused the failure, and
// leaves a passed trial passed, noted in its Reason. A pass stands because
// the criteria judge what was achieved: the device sustained the load the
// trial delivered, whatever the generator went through to deliver it (a
// late arrival counts its lateness in the latency, and the achieved rate
// divides by the trial's real length). On a busy host this keeps the
// searches that bracket a device's limit from ending invalid on every
// passing trial, while a generator at its own ceiling, whose trials fail,
// still ends the search INVALID.
//
// Trials over TLS carry what they negotiated (Trial.TLS, TLSInfo), trials
// of a traffic mix their transactions per object size (Trial.Mix,
// MixCount); the report prints both (table lines, CSV columns "TLS Full",
// "TLS Resumed", "TLS", "Mix" appended after "Reason", an HTML section).
//
// Deliberate differences from the RFCs: trials are seconds long, not the RFCs'
// 300-second sustain phases (the duration is a parameter and is reported);
// the ramp inside a trial is the driver's, not a separate reported phase.
package capacity
