// Package podtest holds the container image's end-to-end test: it builds the
// image with `make image` (FROM scratch, nothing pulled), runs the shipped
// Pod manifest deploy/podman/cicada-pod.yaml with `podman kube play`
// (target, master and worker in one pod on the host's network, on free
// ports), and checks that the master exits 0 and that the request count the
// master reports equals the count the target served.
//
// Facts of this kind of machine the test encodes: rootful podman needs runc
// as its runtime (crun fails on the host's cgroup layout) and default ulimits
// that the host allows (nofile 20000, nproc 32768); both go into a
// containers.conf in a temporary directory, passed with CONTAINERS_CONF, so
// /etc is not edited. podman's bridge networking would turn on the host's IP
// forwarding and add NAT rules: the pod uses host networking, and the test
// fails if net.ipv4.ip_forward or `nft list ruleset` differ after the run.
//
// The package has no non-test code; it is not imported by anything.
package podtest
