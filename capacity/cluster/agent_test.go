package cluster

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/diag"
	"github.com/cicada-load/cicada/internal/testpeer"
	"github.com/cicada-load/cicada/protocol"
)

// sink is a Sender that keeps what the agent sends.
type sink struct {
	mu   sync.Mutex
	msgs []protocol.Message
}

func (s *sink) SendMessage(typ string, data any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, protocol.Message{Type: typ, Data: &protocol.Custom{Data: data}})
	return nil
}

func (s *sink) find(typ string) (protocol.Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		if m.Type == typ {
			return m, true
		}
	}
	return protocol.Message{}, false
}

func trialMsg(s TrialSpec) protocol.Message {
	return protocol.Message{Type: TypeTrial, Data: &protocol.Custom{Data: EncodeTrial(s)}}
}

func noLimits() (diag.Limits, error) { return diag.Limits{OpenFiles: -1, FilesInUse: -1}, nil }

// The agent's answers: ready (with a data-plane worker's refusal), a
// malformed trial's error, a busy refusal while a trial runs, and an
// abort that ends a concurrent trial waiting at the barrier.
func TestAgent(t *testing.T) {
	t.Run("refuses", func(t *testing.T) {
		var s sink
		a := NewAgent(context.Background(), &s, AgentOptions{Runtime: RuntimeDataplane, Refuse: "data plane worker"})
		a.Handle(protocol.Message{Type: TypeHello, Data: &protocol.Custom{Data: map[string]any{"v": int64(1)}}})
		m, _ := s.find(TypeReady)
		r, err := DecodeReady(m.Data.(*protocol.Custom).Data)
		if err != nil || r.Refuse != "data plane worker" || r.Runtime != RuntimeDataplane || r.Version != Version {
			t.Fatalf("ready %+v, %v", r, err)
		}
		a.Handle(trialMsg(TrialSpec{ID: 4, Test: "cps", Load: 1}))
		m, _ = s.find(TypeResult)
		if res, err := DecodeResult(m.Data.(*protocol.Custom).Data); err != nil || res.ID != 4 || res.Error != "data plane worker" {
			t.Fatalf("result %+v, %v", res, err)
		}
	})
	t.Run("test not run", func(t *testing.T) {
		var s sink
		a := NewAgent(context.Background(), &s, AgentOptions{Runtime: RuntimeDataplane, Tests: []string{"cps", "concurrent"}})
		a.Handle(protocol.Message{Type: TypeHello, Data: &protocol.Custom{Data: EncodeHello("tps")}})
		m, _ := s.find(TypeReady)
		if r, err := DecodeReady(m.Data.(*protocol.Custom).Data); err != nil || r.Refuse != "data plane does not run the tps test (it runs cps, concurrent)" {
			t.Fatalf("ready %+v, %v", r, err)
		}
		a.Handle(trialMsg(TrialSpec{ID: 5, Test: "tps", Load: 1}))
		a.Wait()
		m, _ = s.find(TypeResult)
		if res, err := DecodeResult(m.Data.(*protocol.Custom).Data); err != nil || res.Error != "data plane does not run the tps test" {
			t.Fatalf("result %+v, %v", res, err)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		var s sink
		a := NewAgent(context.Background(), &s, AgentOptions{})
		a.Handle(protocol.Message{Type: TypeTrial, Data: &protocol.Custom{Data: map[string]any{"id": int64(2), "test": "cps"}}})
		m, _ := s.find(TypeResult)
		if res, err := DecodeResult(m.Data.(*protocol.Custom).Data); err != nil || !strings.Contains(res.Error, "load: <nil> is not a number") {
			t.Fatalf("result %+v, %v", res, err)
		}
	})
	t.Run("busy and abort", func(t *testing.T) {
		ln := startTarget(t)
		var s sink
		a := NewAgent(context.Background(), &s, AgentOptions{Limits: noLimits})
		o := probeOpts(ln)
		a.Handle(trialMsg(TrialSpec{ID: 1, Test: "concurrent", Load: 3, Probe: o}))
		if err := testpeer.Poll(20*time.Second, 5*time.Millisecond, func() bool { _, ok := s.find(TypeHeld); return ok }); err != nil {
			t.Fatal("no held message")
		}
		a.Handle(trialMsg(TrialSpec{ID: 2, Test: "cps", Load: 1, Probe: o}))
		if err := testpeer.Poll(5*time.Second, 5*time.Millisecond, func() bool { _, ok := s.find(TypeResult); return ok }); err != nil {
			t.Fatal("no busy answer")
		}
		m, _ := s.find(TypeResult)
		if res, _ := DecodeResult(m.Data.(*protocol.Custom).Data); res.ID != 2 || res.Error != "busy with trial 1" {
			t.Fatalf("busy %+v", res)
		}
		a.Handle(protocol.Message{Type: TypeAbort, Data: &protocol.Custom{Data: EncodeID(1, true)}})
		a.Wait()
		s.mu.Lock()
		last := s.msgs[len(s.msgs)-1]
		s.mu.Unlock()
		res, err := DecodeResult(last.Data.(*protocol.Custom).Data)
		if err != nil || res.ID != 1 || !strings.HasPrefix(res.Error, "cluster: trial aborted by the controller: ") {
			t.Fatalf("aborted trial %+v, %v", res, err)
		}
	})
}
