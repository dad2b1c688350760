package protocol

import "testing"

// TestHeartbeatStates checks that every state a Locust worker sends
// decodes to its constant, and that an unknown state passes through.
func TestHeartbeatStates(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ready", StateReady},
		{"spawning", StateSpawning},
		{"running", StateRunning},
		{"cleanup", StateCleanup},
		{"stopping", StateStopping},
		{"stopped", StateStopped},
		{"missing", StateMissing},
		{"paused", "paused"},
	}
	for _, tt := range tests {
		b, err := Encode(Message{Type: TypeHeartbeat, Data: &Heartbeat{State: tt.in, CPUUsage: 1, MemoryUsage: -1}, NodeID: "w"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(heartbeat %q) = %v", tt.in, err)
		}
		if got := m.Data.(*Heartbeat).State; got != tt.want {
			t.Errorf("Decode(heartbeat %q).State = %q; want %q", tt.in, got, tt.want)
		}
	}
}
