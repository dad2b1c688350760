package web

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/cicada-load/cicada/stats"
)

// writeCSV generates a CSV download from the current statistics, with
// Locust 2.12.1's headers (Content-type: text/csv, Content-disposition:
// attachment;filename=<prefix>_<time()>.csv).
func (s *Server) writeCSV(w http.ResponseWriter, prefix string, write func(io.Writer, *stats.Snapshot) error) {
	var buf bytes.Buffer
	if err := write(&buf, s.runner.Snapshot()); err != nil {
		s.log.Error("web: csv", "file", prefix, "err", err)
		writeText(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv")
	h.Set("Content-Disposition", "attachment;filename="+csvFileName(prefix, s.opts.Now()))
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

// handleRequestsCSV serves the current _stats.csv.
func (s *Server) handleRequestsCSV(w http.ResponseWriter, r *http.Request) {
	s.writeCSV(w, "requests", s.opts.Format.WriteStatsCSV)
}

// handleFailuresCSV serves the current _failures.csv.
func (s *Server) handleFailuresCSV(w http.ResponseWriter, r *http.Request) {
	s.writeCSV(w, "failures", s.opts.Format.WriteFailuresCSV)
}

// handleExceptionsCSV serves the current _exceptions.csv.
func (s *Server) handleExceptionsCSV(w http.ResponseWriter, r *http.Request) {
	s.writeCSV(w, "exceptions", s.opts.Format.WriteExceptionsCSV)
}
