package diag

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Warning kinds of a worker inside a container or a Kubernetes pod
// (CheckPod).
const (
	// KindPodSNAT: the pod has its own network namespace, so its
	// connections leave the node source-NATed to the node's address: all
	// worker pods of a node share one source port range per destination
	// (and the node's conntrack table); more pods on a node add no
	// connections.
	KindPodSNAT = "pod-snat"
	// KindConntrack: nf_conntrack_max (the node's connection tracking
	// table, shared by every pod of the node) is below the connections to
	// hold; new connections are dropped ("nf_conntrack: table full").
	KindConntrack = "conntrack"
	// KindRuntimeFiles: inside a container, the open-files limit comes
	// from the container runtime's default ulimit, not from the user's
	// shell; the open-files warning then names the runtime's setting.
	KindRuntimeFiles = "runtime-files"
)

// Env is what a worker can see of the container or pod it runs in.
// Unknown numbers are -1.
type Env struct {
	// Container: the process runs in a container (cgroup path of a
	// runtime, /.dockerenv or /run/.containerenv).
	Container bool
	// Kubernetes: the container is a Kubernetes pod's
	// (KUBERNETES_SERVICE_HOST is set, or the cgroup path is kubepods').
	Kubernetes bool
	// Runtime names the container runtime when the cgroup path or marker
	// file tells it: "containerd", "cri-o", "docker", "podman"; "" unknown.
	Runtime string
	// HostNetwork: the process sees the node's network interfaces (a
	// bridge, veth, CNI or kube-proxy interface besides lo and eth0)
	// rather than a pod's own namespace.
	HostNetwork bool
	// ConntrackMax and ConntrackCount are net.netfilter.nf_conntrack_max
	// and nf_conntrack_count, where readable.
	ConntrackMax, ConntrackCount int64
}

// ReadEnv reads Env from this process's /proc, marker files and
// environment.
func ReadEnv() Env {
	return readEnv(os.DirFS("/"), os.Getenv)
}

// nodeInterfaces are name prefixes of interfaces that exist in a node's
// network namespace and not in a pod's.
var nodeInterfaces = []string{"veth", "cni", "flannel", "cali", "cilium", "weave", "docker0", "podman", "kube-", "vxlan", "tunl", "br-", "virbr"}

// readEnv is ReadEnv over a file system rooted at / and an environment
// (fixtures in tests).
func readEnv(fsys fs.FS, getenv func(string) string) Env {
	e := Env{ConntrackMax: -1, ConntrackCount: -1}
	cg, _ := fs.ReadFile(fsys, "proc/self/cgroup")
	lcg := strings.ToLower(string(cg))
	switch {
	case strings.Contains(lcg, "cri-containerd") || strings.Contains(lcg, "containerd"):
		e.Runtime = "containerd"
	case strings.Contains(lcg, "crio"):
		e.Runtime = "cri-o"
	case strings.Contains(lcg, "libpod"):
		e.Runtime = "podman"
	case strings.Contains(lcg, "docker"):
		e.Runtime = "docker"
	}
	if e.Runtime == "" {
		if _, err := fs.Stat(fsys, "run/.containerenv"); err == nil {
			e.Runtime = "podman"
		} else if _, err := fs.Stat(fsys, ".dockerenv"); err == nil {
			e.Runtime = "docker"
		}
	}
	e.Kubernetes = getenv("KUBERNETES_SERVICE_HOST") != "" || strings.Contains(lcg, "kubepods")
	e.Container = e.Runtime != "" || e.Kubernetes
	if dev, err := fs.ReadFile(fsys, "proc/net/dev"); err == nil {
		e.HostNetwork = hasNodeInterface(dev)
	}
	e.ConntrackMax = readInt(fsys, "proc/sys/net/netfilter/nf_conntrack_max")
	e.ConntrackCount = readInt(fsys, "proc/sys/net/netfilter/nf_conntrack_count")
	return e
}

// hasNodeInterface reports whether /proc/net/dev lists an interface that
// only a node's namespace has.
func hasNodeInterface(dev []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(dev))
	for sc.Scan() {
		name, _, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue // the two header lines
		}
		name = strings.TrimSpace(name)
		for _, p := range nodeInterfaces {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
	}
	return false
}

func readInt(fsys fs.FS, path string) int64 {
	b, err := fs.ReadFile(fsys, path)
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// String summarises e for a log line.
func (e Env) String() string {
	if !e.Container {
		return "not in a container"
	}
	where := "container"
	if e.Kubernetes {
		where = "Kubernetes pod"
	}
	net := "own network namespace (traffic source-NATed to the node)"
	if e.HostNetwork {
		net = "host network"
	}
	rt := e.Runtime
	if rt == "" {
		rt = "unknown runtime"
	}
	return fmt.Sprintf("%s, %s, %s, nf_conntrack_max %s", where, rt, net, limitString(e.ConntrackMax))
}

// runtimeUlimit names the setting of the runtime's default open-files
// limit.
func runtimeUlimit(rt string, need int64) string {
	switch rt {
	case "containerd":
		return fmt.Sprintf("containerd's LimitNOFILE= in its systemd unit (the pods' default), or a base_runtime_spec with RLIMIT_NOFILE %d", need)
	case "cri-o":
		return fmt.Sprintf("CRI-O's default_ulimits = [\"nofile=%d:%d\"] in crio.conf", need, need)
	case "podman":
		return fmt.Sprintf("podman --ulimit nofile=%d:%d, or default_ulimits in containers.conf", need, need)
	case "docker":
		return fmt.Sprintf("docker run --ulimit nofile=%d:%d, or default-ulimits in daemon.json", need, need)
	}
	return fmt.Sprintf("the container runtime's default ulimit nofile (at least %d)", need)
}

// CheckPod returns the warnings that only apply inside a container or pod,
// in a stable order: the runtime's open-files limit (when Check warns about
// open files, this names where the limit comes from), the node's conntrack
// table, and source NAT to the node's address. It returns nil outside a
// container.
func CheckPod(e Env, l Limits, p Plan) []Warning {
	if !e.Container {
		return nil
	}
	var ws []Warning
	if l.OpenFiles >= 0 && p.Users > 0 {
		inUse := max(l.FilesInUse, 0)
		if need := int64(p.Users) + inUse + fdMargin; need > l.OpenFiles {
			ws = append(ws, Warning{Kind: KindRuntimeFiles, Message: fmt.Sprintf(
				"this worker runs in a container (%s): its open-files limit %d (hard %s) is the container runtime's default, not your shell's; "+
					"raise it to at least %d with %s", orUnknown(e.Runtime), l.OpenFiles, limitString(l.OpenFilesHard), need, runtimeUlimit(e.Runtime, need))})
		}
	}
	if e.ConntrackMax > 0 && p.Users > 0 {
		used := max(e.ConntrackCount, 0)
		if int64(p.Users)+used > e.ConntrackMax {
			ws = append(ws, Warning{Kind: KindConntrack, Message: fmt.Sprintf(
				"this worker is to hold %d connections but the node's conntrack table (nf_conntrack_max %d, %d in use) is shared by every pod of the node: "+
					"beyond it new connections are dropped (\"nf_conntrack: table full\" in the node's kernel log); raise net.netfilter.nf_conntrack_max on the node "+
					"(kube-proxy --conntrack-min), run one worker per node, or use hostNetwork",
				p.Users, e.ConntrackMax, used)})
		}
	}
	if e.Kubernetes && !e.HostNetwork {
		if ports := l.Ports(); ports > 0 {
			dsts := make([]netip.AddrPort, 0, len(p.PerDestination))
			for d := range p.PerDestination {
				dsts = append(dsts, d)
			}
			sort.Slice(dsts, func(i, j int) bool { return dsts[i].Compare(dsts[j]) < 0 })
			for _, d := range dsts {
				if n := p.PerDestination[d]; n > ports/4 && !d.Addr().IsLoopback() {
					ws = append(ws, Warning{Kind: KindPodSNAT, Message: fmt.Sprintf(
						"this worker is a Kubernetes pod with its own network namespace: its %d connections to %s leave the node source-NATed to the node's address, "+
							"so all worker pods of this node share one range of about %d source ports towards %s and the node's conntrack table; "+
							"more worker pods on the node add no connections: run one worker per node (pod anti-affinity), hostNetwork: true, "+
							"or more pod addresses with --source-ips", n, d, ports, d)})
					break
				}
			}
		}
	}
	return ws
}

func orUnknown(s string) string {
	if s == "" {
		return "runtime unknown"
	}
	return s
}
