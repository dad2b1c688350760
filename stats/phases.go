package stats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Per-phase timings (cicada's extension; Locust has none). A worker records
// the phases of each HTTP request beside its response time
// (RecordWithPhases); the phases travel in the stats report under the
// entry key "cicada_phases" (protocol.StatsEntry.Phases), which Python
// masters ignore; the master adds them per entry and into the Aggregated
// row, and EntryStats.Phases gives each phase's count, average and exact
// percentiles (the exact histogram's resolution, ExactRelativeError).
// Locust's response time is unchanged: the phases are only its parts.

// Phase indexes of Phases and PhaseStats.
const (
	PhaseDNS = iota
	PhaseConnect
	PhaseTLS
	PhaseTTFB
	PhaseBody
	NumPhases
)

// PhaseNames are the phases' names in CSV files, /metrics and the web API,
// by phase index.
var PhaseNames = [NumPhases]string{"dns", "connect", "tls", "ttfb", "body"}

// Phases are one request's phase times, the layout of httpc.Phases (the
// worker converts one into the other): DNS, Connect and TLS count only
// when their Has flag is set (a new connection), TTFB and Body only when
// TTFB is positive (a response arrived).
type Phases struct {
	DNS, Connect, TLS, TTFB, Body time.Duration
	HasDNS, HasConnect, HasTLS    bool
}

// ErrMalformedPhases is returned (wrapped) for a "cicada_phases" byte
// string that is not one (DecodePhases); the master counts such entries
// in Snapshot.MalformedPhases and ignores them.
var ErrMalformedPhases = errors.New("stats: malformed phase timings")

const phasesVersion = 1

// phaseData holds one entry's phase histograms and sums (µs).
type phaseData struct {
	h   [NumPhases]exactHist
	sum [NumPhases]uint64
}

func (d *phaseData) record(p *Phases) {
	add := func(i int, v time.Duration) {
		us := toMicros(v)
		d.h[i].record(us)
		d.sum[i] = satAddU(d.sum[i], us)
	}
	if p.HasDNS {
		add(PhaseDNS, p.DNS)
	}
	if p.HasConnect {
		add(PhaseConnect, p.Connect)
	}
	if p.HasTLS {
		add(PhaseTLS, p.TLS)
	}
	if p.TTFB > 0 {
		add(PhaseTTFB, p.TTFB)
		add(PhaseBody, p.Body)
	}
}

func (d *phaseData) empty() bool {
	for i := range d.h {
		if d.h[i].count != 0 {
			return false
		}
	}
	return true
}

func (d *phaseData) reset() {
	for i := range d.h {
		d.h[i].reset()
		d.sum[i] = 0
	}
}

// appendEncoded appends the wire form:
//
//	version byte (1), then for each of the NumPhases phases:
//	uvarint sum µs, uvarint length, that many bytes of exact histogram
func (d *phaseData) appendEncoded(dst []byte) []byte {
	dst = append(dst, phasesVersion)
	var h []byte
	for i := range d.h {
		dst = binary.AppendUvarint(dst, d.sum[i])
		h = d.h[i].appendEncoded(h[:0])
		dst = binary.AppendUvarint(dst, uint64(len(h)))
		dst = append(dst, h...)
	}
	return dst
}

// addEncoded adds an encoded phaseData into d; on error d is unchanged.
func (d *phaseData) addEncoded(b []byte) error {
	parts, sums, err := splitPhases(b)
	if err != nil {
		return err
	}
	var tmp [NumPhases]exactHist
	for i, p := range parts {
		if err := tmp[i].addEncoded(p); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrMalformedPhases, PhaseNames[i], err)
		}
	}
	for i := range tmp {
		d.h[i].merge(&tmp[i])
		d.sum[i] = satAddU(d.sum[i], sums[i])
	}
	return nil
}

// merge adds o into d.
func (d *phaseData) merge(o *phaseData) {
	for i := range d.h {
		d.h[i].merge(&o.h[i])
		d.sum[i] = satAddU(d.sum[i], o.sum[i])
	}
}

// splitPhases checks the framing of an encoded phaseData and returns each
// phase's histogram bytes and sum.
func splitPhases(b []byte) (parts [NumPhases][]byte, sums [NumPhases]uint64, err error) {
	if len(b) == 0 {
		return parts, sums, fmt.Errorf("%w: empty", ErrMalformedPhases)
	}
	if b[0] != phasesVersion {
		return parts, sums, fmt.Errorf("%w: unknown version %d", ErrMalformedPhases, b[0])
	}
	i := 1
	for p := range NumPhases {
		sum, n := binary.Uvarint(b[i:])
		if n <= 0 {
			return parts, sums, fmt.Errorf("%w: %s: bad sum", ErrMalformedPhases, PhaseNames[p])
		}
		i += n
		l, n := binary.Uvarint(b[i:])
		if n <= 0 || l > uint64(len(b)-i-n) {
			return parts, sums, fmt.Errorf("%w: %s: bad length", ErrMalformedPhases, PhaseNames[p])
		}
		i += n
		parts[p], sums[p] = b[i:i+int(l)], sum
		i += int(l)
	}
	if i != len(b) {
		return parts, sums, fmt.Errorf("%w: %d trailing bytes", ErrMalformedPhases, len(b)-i)
	}
	return parts, sums, nil
}

func satAddU(a, b uint64) uint64 {
	if a+b < a {
		return math.MaxUint64
	}
	return a + b
}

// PhaseSummary is one phase of one entry: how many requests had it, its
// average, and its exact minimum, maximum and percentiles.
type PhaseSummary struct {
	Count              uint64
	Avg, Min, Max      time.Duration
	P50, P90, P95, P99 time.Duration
}

// PhaseStats are an entry's phases, by phase index (PhaseNames).
type PhaseStats [NumPhases]PhaseSummary

// summary computes d's PhaseStats.
func (d *phaseData) summary() *PhaseStats {
	var ps PhaseStats
	var buf []byte
	for i := range d.h {
		h := &d.h[i]
		if h.count == 0 {
			continue
		}
		buf = h.appendEncoded(buf[:0])
		v, err := parseExact(buf)
		if err != nil {
			continue // cannot happen: our own encoding
		}
		pct := func(p float64) time.Duration {
			us, _ := v.percentile(p)
			return time.Duration(math.Round(us * 1000))
		}
		ps[i] = PhaseSummary{
			Count: h.count,
			Avg:   time.Duration(float64(d.sum[i]) / float64(h.count) * 1000),
			Min:   time.Duration(h.min) * time.Microsecond,
			Max:   time.Duration(h.max) * time.Microsecond,
			P50:   pct(0.5), P90: pct(0.9), P95: pct(0.95), P99: pct(0.99),
		}
	}
	return &ps
}

// DecodePhases decodes a "cicada_phases" byte string into its summary
// (for tools reading reports). Errors wrap ErrMalformedPhases.
func DecodePhases(b []byte) (*PhaseStats, error) {
	var d phaseData
	if err := d.addEncoded(b); err != nil {
		return nil, err
	}
	return d.summary(), nil
}

// RecordWithPhases is Record with the request's phase times.
func (r *Recorder) RecordWithPhases(method, name string, rt time.Duration, contentLength int64, failure string, p *Phases) {
	r.record(method, name, rt, rt, false, contentLength, failure, p)
}

// RecordCorrectedWithPhases is RecordCorrected (an arrival-rate iteration's
// request: service time rt, corrected time for the exact histogram) with
// the request's phase times.
func (r *Recorder) RecordCorrectedWithPhases(method, name string, rt, corrected time.Duration, contentLength int64, failure string, p *Phases) {
	r.record(method, name, rt, corrected, false, contentLength, failure, p)
}

// recordPhases adds p to e. Precondition: e.mu held.
func (e *wentry) recordPhases(p *Phases) {
	if e.ph == nil {
		e.ph = new(phaseData)
	}
	e.ph.record(p)
}

// takePhases returns e's encoded phases and resets them; nil if none.
// Precondition: e.mu held.
func (e *wentry) takePhases() []byte {
	if e.ph == nil || e.ph.empty() {
		return nil
	}
	b := e.ph.appendEncoded(nil)
	e.ph.reset()
	return b
}

// addPhasesLocked adds a report entry's phases to e and to the Aggregated
// row. Precondition: s.mu held.
func (e *mentry) addPhasesLocked(s *Stats, b []byte) {
	var d phaseData
	if err := d.addEncoded(b); err != nil {
		s.mu.malformedPhases++
		return
	}
	for _, m := range []*mentry{e, s.mu.total} {
		if m.ph == nil {
			m.ph = new(phaseData)
		}
		m.ph.merge(&d)
	}
}

// phaseSnapshot is e's PhaseStats, nil if no phase was recorded.
func (e *mentry) phaseSnapshot() *PhaseStats {
	if e.ph == nil || e.ph.empty() {
		return nil
	}
	return e.ph.summary()
}
