package diag

import (
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"
)

const (
	podDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  eth0: 1234567    1000    0    0    0     0          0         0   765432     900    0    0    0     0       0          0
`
	nodeDev = podDev + ` cni0:  1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0
vethab12cd34:  1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0
`
	containerdCgroup = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-abc.scope\n"
	crioCgroup       = "0::/kubepods.slice/kubepods-pod2.slice/crio-def.scope\n"
	hostCgroup       = "0::/user.slice/user-0.slice/session-1.scope\n"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestReadEnv(t *testing.T) {
	k8s := map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}
	tests := []struct {
		name string
		fs   fstest.MapFS
		vars map[string]string
		want Env
	}{
		{"bare host", fstest.MapFS{
			"proc/self/cgroup": {Data: []byte(hostCgroup)},
			"proc/net/dev":     {Data: []byte(nodeDev)},
		}, nil, Env{HostNetwork: true, ConntrackMax: -1, ConntrackCount: -1}},
		{"containerd pod, own netns, conntrack readable", fstest.MapFS{
			"proc/self/cgroup": {Data: []byte(containerdCgroup)},
			"proc/net/dev":     {Data: []byte(podDev)},
			"proc/sys/net/netfilter/nf_conntrack_max":   {Data: []byte("131072\n")},
			"proc/sys/net/netfilter/nf_conntrack_count": {Data: []byte("5000\n")},
		}, k8s, Env{Container: true, Kubernetes: true, Runtime: "containerd", ConntrackMax: 131072, ConntrackCount: 5000}},
		{"cri-o pod on the host network, conntrack unreadable", fstest.MapFS{
			"proc/self/cgroup": {Data: []byte(crioCgroup)},
			"proc/net/dev":     {Data: []byte(nodeDev)},
		}, nil, Env{Container: true, Kubernetes: true, Runtime: "cri-o", HostNetwork: true, ConntrackMax: -1, ConntrackCount: -1}},
		{"podman, marker file only, garbage conntrack", fstest.MapFS{
			"proc/self/cgroup":                        {Data: []byte(hostCgroup)},
			"run/.containerenv":                       {Data: nil},
			"proc/sys/net/netfilter/nf_conntrack_max": {Data: []byte("lots")},
		}, nil, Env{Container: true, Runtime: "podman", ConntrackMax: -1, ConntrackCount: -1}},
		{"docker marker", fstest.MapFS{".dockerenv": {Data: nil}}, nil,
			Env{Container: true, Runtime: "docker", ConntrackMax: -1, ConntrackCount: -1}},
		{"Kubernetes by environment only", fstest.MapFS{}, k8s,
			Env{Container: true, Kubernetes: true, ConntrackMax: -1, ConntrackCount: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := readEnv(tc.fs, env(tc.vars)); got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCheckPod(t *testing.T) {
	dst := netip.MustParseAddrPort("203.0.113.7:443")
	lo := netip.MustParseAddrPort("127.0.0.1:8080")
	limits := Limits{OpenFiles: 1048576, OpenFilesHard: 1048576, FilesInUse: 10, PortLow: 32768, PortHigh: 60999}
	pod := Env{Container: true, Kubernetes: true, Runtime: "containerd", ConntrackMax: 131072, ConntrackCount: 1000}
	plan := func(users int, d netip.AddrPort) Plan {
		return Plan{Users: users, PerDestination: map[netip.AddrPort]int{d: users}}
	}
	tests := []struct {
		name  string
		env   Env
		lim   Limits
		plan  Plan
		kinds []string
		has   []string
	}{
		{"not a container: nothing", Env{ConntrackMax: 10}, Limits{OpenFiles: 100, PortLow: 1, PortHigh: 10}, plan(50000, dst), nil, nil},
		{"small pod test: nothing", pod, limits, plan(1000, dst), nil, nil},
		{"pod, many connections to one destination: SNAT", pod, limits, plan(10000, dst),
			[]string{KindPodSNAT}, []string{"source-NATed", "one worker per node", "hostNetwork", "--source-ips"}},
		{"pod, loopback destination: no SNAT", pod, limits, plan(10000, lo), nil, nil},
		{"hostNetwork pod: no SNAT", Env{Container: true, Kubernetes: true, HostNetwork: true, ConntrackMax: -1}, limits, plan(10000, dst), nil, nil},
		{"conntrack full", pod, limits, plan(130500, dst),
			[]string{KindConntrack, KindPodSNAT}, []string{"nf_conntrack_max 131072, 1000 in use", "table full"}},
		{"runtime's ulimit", Env{Container: true, Runtime: "podman", ConntrackMax: -1},
			Limits{OpenFiles: 1024, OpenFilesHard: 4096, FilesInUse: 10, PortLow: 32768, PortHigh: 60999}, plan(5000, dst),
			[]string{KindRuntimeFiles}, []string{"container runtime's default", "nofile=5042:5042"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := CheckPod(tc.env, tc.lim, tc.plan)
			var kinds []string
			all := ""
			for _, w := range ws {
				kinds = append(kinds, w.Kind)
				all += w.Message + "\n"
			}
			if strings.Join(kinds, ",") != strings.Join(tc.kinds, ",") {
				t.Fatalf("kinds %v, want %v\n%s", kinds, tc.kinds, all)
			}
			for _, h := range tc.has {
				if !strings.Contains(all, h) {
					t.Errorf("no %q in:\n%s", h, all)
				}
			}
		})
	}
}

func TestEnvString(t *testing.T) {
	if s := (Env{}).String(); s != "not in a container" {
		t.Errorf("%q", s)
	}
	s := Env{Container: true, Kubernetes: true, Runtime: "cri-o", ConntrackMax: 262144}.String()
	for _, want := range []string{"Kubernetes pod", "cri-o", "source-NATed", "262144"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
}

func FuzzReadEnv(f *testing.F) {
	f.Add(containerdCgroup, nodeDev, "131072")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, cgroup, dev, ctMax string) {
		e := readEnv(fstest.MapFS{
			"proc/self/cgroup": {Data: []byte(cgroup)},
			"proc/net/dev":     {Data: []byte(dev)},
			"proc/sys/net/netfilter/nf_conntrack_max": {Data: []byte(ctMax)},
		}, env(nil))
		if e.ConntrackMax < -1 || e.ConntrackCount != -1 || (e.Kubernetes && !e.Container) {
			t.Fatalf("inconsistent %+v", e)
		}
		_ = e.String()
	})
}
