package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/protocol/zmtp"
	"github.com/cicada-load/cicada/scenario"
)

// ErrScenarioFetch means a worker started with -f - got no scenario it can
// run from its master.
var ErrScenarioFetch = errors.New("-f -: cannot get the scenario from the master")

// fetchTimeout bounds the scenario download of -f - (Locust's worker gives
// up after 300 s too); fetchEvery is the request interval.
var fetchTimeout, fetchEvery = 300 * time.Second, time.Second

// fetchScenario is -f - on a worker: as a Locust ≥ 2.23 worker does, it asks
// the master for its file from a temporary identity (not a worker
// registration), once a second until the answer comes, and parses it. A
// Python locustfile (a Python master's) is refused with what to do instead.
func (a *app) fetchScenario() (*scenario.File, error) {
	host, _ := os.Hostname()
	var rnd [16]byte
	_, _ = rand.Read(rnd[:])
	id := strings.ReplaceAll(host, "_", "-") + "_download_locustfile_" + hex.EncodeToString(rnd[:])
	endpoint := "tcp://" + net.JoinHostPort(a.cfg.MasterHost, strconv.Itoa(a.cfg.MasterPort))
	d, err := zmtp.Dial(endpoint, id, zmtp.Options{Plain: a.clusterAuth()})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenarioFetch, err)
	}
	defer func() { _ = d.Close() }()
	req, err := protocol.Encode(protocol.Message{Type: protocol.TypeLocustfile, NodeID: id,
		Data: &protocol.Locustfile{Data: map[string]any{"version": version}}})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenarioFetch, err)
	}
	a.log.Info(fmt.Sprintf("-f -: asking the master at %s for its scenario file", endpoint))
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	for {
		if err := d.Send(req); err != nil && !errors.Is(err, zmtp.ErrQueueFull) {
			return nil, fmt.Errorf("%w: %w", ErrScenarioFetch, err)
		}
		rctx, rcancel := context.WithTimeout(ctx, fetchEvery)
		frames, err := d.Recv(rctx)
		rcancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: no answer from %s within %v", ErrScenarioFetch, endpoint, fetchTimeout)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			return nil, fmt.Errorf("%w: %w", ErrScenarioFetch, err)
		}
		if len(frames) != 1 {
			continue
		}
		msg, err := protocol.Decode(frames[0])
		if err != nil || msg.Type != protocol.TypeLocustfile {
			continue // not the answer (or malformed): keep asking
		}
		lf, _ := msg.Data.(*protocol.Locustfile)
		if lf == nil {
			return nil, fmt.Errorf("%w: an empty answer", ErrScenarioFetch)
		}
		return a.parseServedScenario(lf.Data)
	}
}

// parseServedScenario reads a master's locustfile answer: one YAML scenario
// file, or a Python locustfile read by package locustfile (a Python
// master's), or an error naming why not. a may be nil (tests).
func (a *app) parseServedScenario(data map[string]any) (*scenario.File, error) {
	if e, ok := data["error"]; ok {
		return nil, fmt.Errorf("%w: the master answered: %v", ErrScenarioFetch, e)
	}
	files, ok := data["locustfiles"].([]any)
	if !ok {
		// 2.23-2.30 masters answer {"filename", "contents"} directly.
		if _, has := data["contents"]; has {
			files = []any{data}
		}
	}
	if len(files) != 1 {
		return nil, fmt.Errorf("%w: the master serves %d files; a cicada worker runs exactly one YAML scenario", ErrScenarioFetch, len(files))
	}
	f, ok := files[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the master serves %v, not a file (a URL?); give this worker its own -f", ErrScenarioFetch, files[0])
	}
	name, _ := f["filename"].(string)
	contents, ok := f["contents"].(string)
	if name == "" || !ok {
		return nil, fmt.Errorf("%w: the master's answer has no filename or contents", ErrScenarioFetch)
	}
	if isPythonName(name) || looksLikePython([]byte(contents)) {
		// A Python Locust master's locustfile: through the reader.
		return a.readServedLocustfile(name, contents)
	}
	file, err := scenario.Parse(name+" (from the master)", []byte(contents), os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenarioFetch, err)
	}
	return file, nil
}
