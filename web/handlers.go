package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/internal/timespan"
	"github.com/cicada-load/cicada/protocol"
)

// Messages of POST /swarm, as Locust words them (locust/web.py).
const (
	msgSwarmStarted   = "Swarming started"
	msgShapeStarted   = "Swarming started using shape class"
	msgMissingUsers   = "Missing user_count or spawn_rate from /swarm request" // Locust HEAD
	msgTestStopped    = "Test stopped"
	msgNoFullHistory  = "Error: Server was not started with option to generate full history."
	indexArgsMarker   = "window.cicadaArgs = {};/*CICADA_ARGS*/"
	maxSwarmFormBytes = 1 << 20
)

// Messages of POST /swarm with a load shape, where Locust ignores the
// request silently (a run_time, or an edit while the shape runs).
const (
	msgShapeRunTime = "A load shape (stages:) drives this test: it cannot be combined with a run time; end the last stage at that time instead"
	msgShapeEdit    = "A load shape (stages:) drives this test: its stages set users and spawn rate, so a running test cannot be edited; stop it first"
)

// msgBadRunTime is 2.12.1's message for a run_time outside the grammar.
const msgBadRunTime = "Valid run_time formats are : 20, 20s, 3m, 2h, 1h20m, 3h30m10s, etc."

// handleIndex serves the dashboard with its start-up arguments inlined.
func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	page, err := fs.ReadFile(assets(), "index.html")
	if err != nil {
		s.log.Error("web: dashboard missing", "err", err)
		writeText(w, http.StatusInternalServerError, "Error: dashboard assets missing")
		return
	}
	st := s.runner.Status()
	args := map[string]any{
		"version":        s.opts.Version,
		"locustfile":     st.Locustfile,
		"host":           st.Host,
		"state":          st.State,
		"is_distributed": st.Distributed,
		"is_shape":       st.Shape,
	}
	if s.opts.ClassPicker {
		names := make([]string, 0, len(st.UserClasses))
		for _, c := range st.UserClasses {
			names = append(names, c.Name)
		}
		sort.Strings(names)
		args["show_userclass_picker"] = true
		args["available_user_classes"] = names
	}
	if st.ConfiguredUsers > 0 {
		args["num_users"] = st.ConfiguredUsers
	}
	if st.ConfiguredSpawnRate > 0 {
		args["spawn_rate"] = st.ConfiguredSpawnRate
	}
	if st.ConfiguredRunTime > 0 {
		args["run_time"] = strconv.FormatInt(int64(st.ConfiguredRunTime/time.Second), 10) + "s"
	}
	js, _ := json.Marshal(args) // escapes <, > and & so it cannot end the script
	page = bytes.Replace(page, []byte(indexArgsMarker), append([]byte("window.cicadaArgs = "), js...), 1)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP(page))
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.Itoa(len(page)))
	w.Write(page)
}

// assetHandler serves the embedded assets under prefix, without
// authentication (Locust serves /static the same way).
func (s *Server) assetHandler(prefix string) http.Handler {
	fsrv := http.FileServerFS(assets())
	return http.StripPrefix(strings.TrimSuffix(prefix, "/"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" || r.URL.Path == "/index.html" || strings.HasSuffix(r.URL.Path, "/") {
			s.handleNotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	}))
}

// parsePyInt parses like Python's int(str): surrounding whitespace and a
// sign allowed.
func parsePyInt(v string) (int, error) {
	return strconv.Atoi(strings.TrimSpace(v))
}

// parsePyFloat parses like Python's float(str) for finite values.
func parsePyFloat(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		err = fmt.Errorf("not finite")
	}
	return f, err
}

// swarmReply writes POST /swarm's JSON: {"host", "message", "run_time"?,
// "success", "user_classes"?}. host "" is written as null.
func swarmReply(w http.ResponseWriter, ok bool, msg, host string, runTime time.Duration, classes []string) {
	var jw jsonWriter
	jw.beginObject()
	jw.key("host")
	if host == "" {
		jw.null()
	} else {
		jw.str(host)
	}
	jw.kStr("message", msg)
	if runTime > 0 {
		jw.kInt("run_time", int64(runTime/time.Second))
	}
	jw.kBool("success", ok)
	if classes != nil {
		jw.key("user_classes")
		jw.beginArray()
		for _, c := range classes {
			jw.elem()
			jw.str(c)
		}
		jw.endArray()
	}
	jw.endObject()
	writeJSON(w, http.StatusOK, jw.bytes())
}

// handleSwarm starts or edits a test (Locust 2.12.1 locust/web.py, swarm in
// WebUI.__init__). Invalid input is answered with HTTP 200 and success:
// false, as Locust does for run_time; cicada does the same for a missing or
// invalid user_count or spawn_rate where 2.12.1 crashed with a 500.
func (s *Server) handleSwarm(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxSwarmFormBytes)
	if err := r.ParseForm(); err != nil {
		swarmReply(w, false, "Invalid form: "+err.Error(), s.runner.Status().Host, 0, nil)
		return
	}
	form := r.PostForm
	if len(form) == 0 {
		form = r.Form // also accept query parameters, as curl -G users expect
	}
	var req StartRequest
	host := s.runner.Status().Host
	if v, ok := form["host"]; ok {
		h := strings.NewReplacer("<", "", ">", "").Replace(first(v))
		req.Host = &h
		host = h
	}
	if v := first(form["run_time"]); v != "" {
		d, err := timespan.Parse(v)
		if err != nil {
			msg := msgBadRunTime
			if errors.Is(err, timespan.ErrTooLong) {
				msg = "Invalid run_time: " + err.Error()
			}
			s.log.Error(msg, "err", err)
			swarmReply(w, false, msg, host, 0, nil)
			return
		}
		req.RunTime = d
	}
	if st := s.runner.Status(); st.Shape {
		s.swarmShape(w, r, st, req, host)
		return
	}
	uv, uok := form["user_count"]
	rv, rok := form["spawn_rate"]
	if !uok || !rok || first(uv) == "" || first(rv) == "" {
		swarmReply(w, false, msgMissingUsers, host, 0, nil)
		return
	}
	users, err := parsePyInt(first(uv))
	if err != nil || users < 0 {
		swarmReply(w, false, fmt.Sprintf("Invalid user_count %q: must be a non-negative integer", first(uv)), host, 0, nil)
		return
	}
	rate, err := parsePyFloat(first(rv))
	if err != nil || rate <= 0 {
		swarmReply(w, false, fmt.Sprintf("Invalid spawn_rate %q: must be a positive number", first(rv)), host, 0, nil)
		return
	}
	req.Users, req.SpawnRate = users, rate
	if v, ok := form["user_classes"]; ok {
		req.UserClasses = append([]string(nil), v...)
	}
	for k, v := range form {
		switch k {
		case "user_count", "spawn_rate", "host", "run_time", "user_classes":
			continue
		}
		if req.Options == nil {
			req.Options = make(map[string][]string)
		}
		req.Options[k] = append([]string(nil), v...)
	}
	if err := s.runner.Start(r.Context(), req); err != nil {
		swarmReply(w, false, err.Error(), host, 0, nil)
		return
	}
	s.cache.invalidate()
	if req.RunTime > 0 {
		s.log.Info(fmt.Sprintf("Run time limit set to %d seconds", int64(req.RunTime/time.Second)))
		s.afterFunc(req.RunTime, func() {
			s.log.Info("--run-time limit reached, stopping test")
			ctx, cancel := context.WithTimeout(s.ctx, 2*time.Minute)
			defer cancel()
			if err := s.runner.Stop(ctx); err != nil {
				s.log.Error("web: stop after run time", "err", err)
			}
			s.cache.invalidate()
		})
	}
	var classes []string
	if req.UserClasses != nil {
		classes = append([]string(nil), req.UserClasses...)
		sort.Strings(classes)
	}
	swarmReply(w, true, msgSwarmStarted, host, req.RunTime, classes)
}

// swarmShape answers POST /swarm when a load shape drives the test, as
// Locust 2.12.1 does (start the shape, ignore user_count and spawn_rate),
// except that it refuses what Locust ignores silently: a run_time, and an
// edit of a running shape test.
func (s *Server) swarmShape(w http.ResponseWriter, r *http.Request, st Status, req StartRequest, host string) {
	if req.RunTime > 0 {
		swarmReply(w, false, msgShapeRunTime, host, 0, nil)
		return
	}
	switch st.State {
	case protocol.StateSpawning, protocol.StateRunning:
		swarmReply(w, false, msgShapeEdit, host, 0, nil)
		return
	}
	if err := s.runner.Start(r.Context(), req); err != nil {
		swarmReply(w, false, err.Error(), host, 0, nil)
		return
	}
	s.cache.invalidate()
	swarmReply(w, true, msgShapeStarted, host, 0, nil)
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// handleStop stops the test (Locust 2.12.1 locust/web.py, stop in
// WebUI.__init__); synchronous, like Locust. A pending run_time timer is
// not cancelled (Locust does not).
func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) {
	// Stopping may take longer than WriteTimeout (the runner waits for the
	// users to stop); only the reply is bounded. Without a real connection
	// (tests, another server's mux) the controller returns an error.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	err := s.runner.Stop(r.Context())
	if s.opts.WriteTimeout > 0 {
		_ = rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	}
	s.cache.invalidate()
	var jw jsonWriter
	jw.beginObject()
	if err != nil {
		jw.kStr("message", err.Error())
		jw.kBool("success", false)
	} else {
		jw.kStr("message", msgTestStopped)
		jw.kBool("success", true)
	}
	jw.endObject()
	writeJSON(w, http.StatusOK, jw.bytes())
}

// handleReset resets statistics, errors and exceptions. The chart
// history is kept, as Locust's dashboard keeps its charts on reset.
func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	s.runner.ResetStats()
	s.cache.invalidate()
	writeText(w, http.StatusOK, "ok")
}

// handleTasks answers GET /tasks: task ratios per class and in total
// (locust/user/inspectuser.py get_ratio, 2.12.1).
func (s *Server) handleTasks(w http.ResponseWriter, r *http.Request) {
	st := s.runner.Status()
	var jw jsonWriter
	appendTasksJSON(&jw, st)
	writeJSON(w, http.StatusOK, jw.bytes())
}

func appendTasksJSON(jw *jsonWriter, st Status) {
	var sum int64
	for _, n := range st.UserClassesCount {
		sum += n
	}
	if sum == 0 {
		sum = 1
	}
	classes := append([]UserClass(nil), st.UserClasses...)
	sort.SliceStable(classes, func(i, j int) bool { return classes[i].Name < classes[j].Name })
	writeClasses := func(total bool) {
		jw.beginObject()
		for i, c := range classes {
			if i > 0 && c.Name == classes[i-1].Name {
				continue
			}
			ratio := float64(st.UserClassesCount[c.Name]) / float64(sum)
			jw.key(c.Name)
			jw.beginObject()
			jw.kFloat("ratio", ratio)
			jw.key("tasks")
			parent := 1.0
			if total {
				parent = ratio
			}
			appendTaskRatios(jw, c.Tasks, parent)
			jw.endObject()
		}
		jw.endObject()
	}
	jw.beginObject()
	jw.key("per_class")
	writeClasses(false)
	jw.key("total")
	writeClasses(true)
	jw.endObject()
}

// appendTaskRatios writes {task: {"ratio": w*parent/sum(w), "tasks"?}};
// tasks with the same name are merged, as Locust counts repeated entries.
func appendTaskRatios(jw *jsonWriter, tasks []Task, parent float64) {
	type agg struct {
		weight int64
		sub    []Task
	}
	byName := make(map[string]*agg)
	var names []string
	var total int64
	for _, t := range tasks {
		wt := int64(t.Weight)
		if wt <= 0 {
			continue
		}
		total += wt
		a, ok := byName[t.Name]
		if !ok {
			a = &agg{}
			byName[t.Name] = a
			names = append(names, t.Name)
		}
		a.weight += wt
		if len(t.Tasks) > 0 {
			a.sub = t.Tasks
		}
	}
	sort.Strings(names)
	jw.beginObject()
	for _, n := range names {
		a := byName[n]
		r := float64(a.weight) * parent / float64(total)
		jw.key(n)
		jw.beginObject()
		jw.kFloat("ratio", r)
		if len(a.sub) > 0 {
			jw.key("tasks")
			appendTaskRatios(jw, a.sub, r)
		}
		jw.endObject()
	}
	jw.endObject()
}

// handleLogs answers GET /logs (Locust ≥ 2.18): {"master": [...],
// "workers": {id: [...]}}; empty when the runner keeps no logs.
func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	var logs Logs
	if ls, ok := s.runner.(LogSource); ok {
		logs = ls.Logs()
	}
	var jw jsonWriter
	jw.beginObject()
	jw.key("master")
	writeStrings(&jw, logs.Master)
	jw.key("workers")
	jw.beginObject()
	ids := make([]string, 0, len(logs.Workers))
	for id := range logs.Workers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		jw.key(id)
		writeStrings(&jw, logs.Workers[id])
	}
	jw.endObject()
	jw.endObject()
	writeJSON(w, http.StatusOK, jw.bytes())
}

func writeStrings(jw *jsonWriter, ss []string) {
	jw.beginArray()
	for _, l := range ss {
		jw.elem()
		jw.str(l)
	}
	jw.endArray()
}

// activeWorkers counts workers in state ready, spawning or running, which
// is Locust HEAD's worker_count.
func activeWorkers(ws []WorkerInfo) int {
	n := 0
	for _, w := range ws {
		switch w.State {
		case protocol.StateReady, protocol.StateSpawning, protocol.StateRunning:
			n++
		}
	}
	return n
}

// handleWorkerCount answers GET /worker-count (Locust ≥ 2.37.2).
func (s *Server) handleWorkerCount(w http.ResponseWriter, r *http.Request) {
	st := s.runner.Status()
	n := 0
	if st.Distributed {
		n = activeWorkers(st.Workers)
	}
	var jw jsonWriter
	jw.beginObject()
	jw.kInt("worker_count", int64(n))
	jw.endObject()
	writeJSON(w, http.StatusOK, jw.bytes())
}

// handleHistory answers GET /stats/history (a cicada extension the
// dashboard uses so charts survive a reload): the chart history in columns,
// plus "version" and "full". With ?since=<unix seconds>&version=<v> and an
// unchanged version only newer points are sent ("full": false).
func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	points, version := s.history.pointsVersion()
	full := true
	if v, err := strconv.ParseUint(r.URL.Query().Get("version"), 10, 64); err == nil && v == version {
		if since, err := strconv.ParseFloat(r.URL.Query().Get("since"), 64); err == nil {
			full = false
			i := sort.Search(len(points), func(i int) bool {
				return float64(points[i].Time.UnixMilli())/1000 > since
			})
			points = points[i:]
		}
	}
	var jw jsonWriter
	appendHistoryJSON(&jw, points, version, full)
	writeJSON(w, http.StatusOK, jw.bytes())
}

// handleFullHistoryCSV serves the on-disk _stats_history.csv written with
// --csv-full-history, or Locust's 404 text.
func (s *Server) handleFullHistoryCSV(w http.ResponseWriter, r *http.Request) {
	if s.opts.FullHistoryCSV == "" {
		writeText(w, http.StatusNotFound, msgNoFullHistory)
		return
	}
	f, err := os.Open(s.opts.FullHistoryCSV)
	if err != nil {
		s.log.Error("web: full history csv", "err", err)
		writeText(w, http.StatusNotFound, msgNoFullHistory)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		writeText(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", "attachment; filename="+csvFileName("requests_full_history", s.opts.Now()))
	h.Set("Cache-Control", "no-cache, max-age=0")
	h.Set("ETag", fmt.Sprintf(`"%x-%x"`, fi.ModTime().UnixNano(), fi.Size()))
	http.ServeContent(w, r, path.Base(s.opts.FullHistoryCSV), fi.ModTime(), f)
}

// csvFileName is Locust 2.12.1's download name: <prefix>_<time()>.csv.
func csvFileName(prefix string, now time.Time) string {
	return prefix + "_" + string(appendPyFloat(nil, float64(now.UnixMicro())/1e6)) + ".csv"
}
