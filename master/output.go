package master

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cicada-load/cicada/stats"
	"github.com/cicada-load/cicada/thresholds"
)

// The outputs (the periodic console table and the CSV files) are written
// by a sink off the loop. The loop takes a frame (a statistics snapshot
// with the user count and connection view of the same moment) on its
// table and CSV ticks and offers it to the sink, which never makes the
// loop wait: each output holds at most one pending frame, and a newer
// frame replaces one its writer has not taken yet (a slow disk skips a
// history row instead of delaying the loop). Each output's frames are
// written in the order the loop took them, by one goroutine per output.
//
// At the end, Run stops the sink (pending frames are dropped), takes the
// final frame after the loop has returned, writes the final CSV rows and
// closes the files, then prints the summary: every request merged before
// the loop ended is in the final rows.

// frame is the run at one moment as the outputs see it. It is immutable.
type frame struct {
	snap  *stats.Snapshot
	users int64               // the users the workers reported
	conns *connView           // the connections table as last published (nil before the first)
	rate  *rateFrame          // the arrival-rate view (rateout.go); nil without a rate
	thr   []thresholds.Result // the thresholds' live states (thresholdslive.go); shared, read-only
}

// frame takes a frame. Precondition: loop, or after the loop returned.
func (m *Master) frame() frame {
	return frame{snap: m.stats.Snapshot(), users: m.st.userCount(), conns: m.connView.Load(), rate: m.rateFrame(), thr: m.thr.liveResults()}
}

// sink writes the frames the loop offers it: the console table when
// printing, the CSV files with a CSV prefix.
type sink struct {
	format        stats.Format
	stderr        io.Writer
	log           *slog.Logger
	print         bool          // the periodic table (headless or PrintStats, not OnlySummary)
	statsInterval time.Duration // period of the table
	csvInterval   time.Duration // period of the CSV writes
	secondRound   bool          // the summary ends with the second round's diagnosis

	csv     *csvFiles // nil without Options.CSVPrefix
	connCSV *connCSV  // nil without Options.CSVPrefix
	rateCSV *rateCSV  // nil without Options.CSVPrefix or Options.Rate

	table chan frame // capacity 1: the frame the printer has not taken yet
	rows  chan frame // capacity 1: the frame the CSV writer has not taken yet
	quit  chan struct{}
}

// newSink creates the CSV files (with their headers) and the sink.
func newSink(o *Options, log *slog.Logger) (*sink, error) {
	s := &sink{
		format:        o.StatsFormat,
		stderr:        o.Stderr,
		log:           log,
		print:         !o.OnlySummary && (o.Headless || o.PrintStats),
		statsInterval: o.StatsInterval,
		csvInterval:   o.CSVInterval,
		secondRound:   o.SecondRound,
		table:         make(chan frame, 1),
		rows:          make(chan frame, 1),
		quit:          make(chan struct{}),
	}
	if o.CSVPrefix != "" {
		c, err := openCSV(o.CSVPrefix, o.CSVFullHistory, o.StatsFormat)
		if err != nil {
			return nil, err
		}
		if len(o.Rate) > 0 {
			if s.rateCSV, err = openRateCSV(o.CSVPrefix); err != nil {
				_ = c.close()
				return nil, err
			}
		}
		if s.connCSV, err = openConnCSV(o.CSVPrefix); err != nil {
			c.close()
			_ = s.rateCSV.close()
			return nil, err
		}
		s.csv = c
	}
	return s, nil
}

// tickers returns the loop's table and CSV tick channels (nil for an
// output that is off) and a function that stops them.
func (s *sink) tickers() (table, csv <-chan time.Time, stop func()) {
	var ts []*time.Ticker
	if s.print {
		t := time.NewTicker(s.statsInterval)
		ts, table = append(ts, t), t.C
	}
	if s.csv != nil {
		t := time.NewTicker(s.csvInterval)
		ts, csv = append(ts, t), t.C
	}
	return table, csv, func() {
		for _, t := range ts {
			t.Stop()
		}
	}
}

// start starts the writers through goroutine (Master.goroutine).
func (s *sink) start(goroutine func(name string, f func())) {
	if s.print {
		goroutine("printer", func() {
			s.drain(s.table, func(f frame) {
				_ = s.format.WriteStatsTable(s.stderr, f.snap, true)
				writeDroppedLine(s.stderr, f.snap, f.rate) // ratedrops.go
				writeLiveThresholds(s.stderr, f.thr)       // thresholdslive.go
				writeConnTable(s.stderr, f.conns)
			})
		})
	}
	if s.csv != nil {
		goroutine("csv", func() {
			s.drain(s.rows, func(f frame) {
				if err := s.writeCSV(f); err != nil {
					s.log.Error("Writing CSV files: " + err.Error())
				}
			})
		})
	}
}

// drain writes the frames of ch until stop.
func (s *sink) drain(ch <-chan frame, write func(frame)) {
	for {
		select {
		case <-s.quit:
			return
		case f := <-ch:
			write(f)
		}
	}
}

// stop ends the writers; Run waits for them (Master.wg).
func (s *sink) stop() { close(s.quit) }

// offerTable and offerCSV hand the sink a frame without waiting.
// Precondition: loop (the only sender).
func (s *sink) offerTable(f frame) { offer(s.table, f) }
func (s *sink) offerCSV(f frame)   { offer(s.rows, f) }

// offer puts f in ch, replacing a frame not taken yet. With one sender,
// the second send always succeeds.
func offer(ch chan frame, f frame) {
	select {
	case ch <- f:
		return
	default:
	}
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- f:
	default:
	}
}

// writeCSV writes one CSV period: the snapshot files, a history row and
// the connections file.
func (s *sink) writeCSV(f frame) error {
	err := s.csv.tick(f.snap, f.users)
	if cerr := s.connCSV.write(f.conns); err == nil {
		err = cerr
	}
	if cerr := s.rateCSV.write(f.snap, f.rate); err == nil {
		err = cerr
	}
	return err
}

// finishCSV writes the final rows and closes the files (2.12.1 loses the
// rows written since its last flush; HEAD completes them, as we do). It
// runs after the writers have stopped.
func (s *sink) finishCSV(f frame) error {
	if s.csv == nil {
		return nil
	}
	err := s.writeCSV(f)
	if cerr := s.closeFiles(); err == nil {
		err = cerr
	}
	if err != nil {
		s.log.Error("Writing CSV files: " + err.Error())
	}
	return err
}

// closeFiles closes the CSV files (idempotent).
func (s *sink) closeFiles() error {
	if s.csv == nil {
		return nil
	}
	err := s.csv.close()
	if cerr := s.connCSV.close(); err == nil {
		err = cerr
	}
	if cerr := s.rateCSV.close(); err == nil {
		err = cerr
	}
	return err
}

// summary prints the final tables: statistics, percentiles, errors,
// connections and the diagnosis.
func (s *sink) summary(f frame) {
	w := s.stderr
	_ = s.format.WriteStatsTable(w, f.snap, false)
	_ = s.format.WritePercentileTable(w, f.snap)
	_ = s.format.WriteErrorReport(w, f.snap)
	writeConnTable(w, f.conns)
	writeRateTable(w, f.snap, f.rate)
	writeDiagnosis(w, f.conns, s.secondRound)
}

type csvFiles struct {
	stats, failures, exceptions, history *os.File
	phases                               *os.File // cicada's _phases.csv (stats.WritePhasesCSV)
	hist                                 *stats.HistoryCSV
	format                               stats.Format
	mu                                   sync.Mutex
	closed                               bool
}

func openCSV(prefix string, fullHistory bool, f stats.Format) (*csvFiles, error) {
	if dir := filepath.Dir(prefix); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCSV, err)
		}
	}
	c := &csvFiles{format: f}
	var err error
	open := func(suffix string) *os.File {
		if err != nil {
			return nil
		}
		var file *os.File
		file, err = os.Create(prefix + suffix)
		return file
	}
	c.stats = open("_stats.csv")
	c.history = open("_stats_history.csv")
	c.failures = open("_failures.csv")
	c.exceptions = open("_exceptions.csv")
	c.phases = open("_phases.csv")
	if err != nil {
		c.close()
		return nil, fmt.Errorf("%w: %w", ErrCSV, err)
	}
	if c.hist, err = f.NewHistoryCSV(c.history, fullHistory); err != nil {
		c.close()
		return nil, fmt.Errorf("%w: %w", ErrCSV, err)
	}
	// The snapshot files start with their headers, as Locust's do.
	empty := stats.New(nil).Snapshot()
	if err := c.rewrite(empty); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// rewrite replaces the three snapshot files' contents.
func (c *csvFiles) rewrite(s *stats.Snapshot) error {
	var b strings.Builder
	files := []struct {
		f     *os.File
		write func(*strings.Builder) error
	}{
		{c.stats, func(b *strings.Builder) error { return c.format.WriteStatsCSV(b, s) }},
		{c.failures, func(b *strings.Builder) error { return c.format.WriteFailuresCSV(b, s) }},
		{c.exceptions, func(b *strings.Builder) error { return c.format.WriteExceptionsCSV(b, s) }},
		{c.phases, func(b *strings.Builder) error { return stats.WritePhasesCSV(b, s) }},
	}
	for _, fl := range files {
		b.Reset()
		if err := fl.write(&b); err != nil {
			return fmt.Errorf("%w: %w", ErrCSV, err)
		}
		if _, err := fl.f.WriteAt([]byte(b.String()), 0); err != nil {
			return fmt.Errorf("%w: %w", ErrCSV, err)
		}
		if err := fl.f.Truncate(int64(b.Len())); err != nil {
			return fmt.Errorf("%w: %w", ErrCSV, err)
		}
	}
	return nil
}

// tick writes one CSV period: the snapshot files and a history row.
func (c *csvFiles) tick(s *stats.Snapshot, users int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if err := c.rewrite(s); err != nil {
		return err
	}
	if err := c.hist.WriteRows(s, users); err != nil {
		return fmt.Errorf("%w: %w", ErrCSV, err)
	}
	return nil
}

func (c *csvFiles) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var first error
	for _, f := range []*os.File{c.stats, c.failures, c.exceptions, c.history, c.phases} {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && first == nil {
			first = fmt.Errorf("%w: %w", ErrCSV, err)
		}
	}
	return first
}
