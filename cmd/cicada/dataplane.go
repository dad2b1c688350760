package main

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/dataplane/ifcheck"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
)

// dataplaneOpts are --dataplane's values, parsed.
type dataplaneOpts struct {
	link      string
	iface     string
	clients   ifcheck.Range
	portMin   uint16
	portMax   uint16
	gateway   netip.Addr // invalid: none
	cores     int
	dedicated bool
	dpdkEAL   []string // --dpdk-eal, split
	dpdkPort  string
	dpdkIdle  time.Duration // --dpdk-idle-sleep
}

// parseDataplane parses the data plane options config kept as written; nil
// without --dataplane. Its errors are usage errors (exit 2).
func parseDataplane(cfg *config.Config) (*dataplaneOpts, error) {
	if cfg.Dataplane == "" {
		return nil, nil
	}
	o := &dataplaneOpts{link: cfg.Dataplane, iface: cfg.Interface, cores: cfg.DataplaneCores, dedicated: cfg.DataplaneDedicated}
	var err error
	if o.clients, err = ifcheck.ParseRange(cfg.ClientIPs); err != nil {
		return nil, fmt.Errorf("argument --client-ips: %w", err)
	}
	if o.portMin, o.portMax, err = ifcheck.ParsePorts(cfg.ClientPorts); err != nil {
		return nil, fmt.Errorf("argument --client-ports: %w", err)
	}
	if cfg.Gateway != "" {
		if o.gateway, err = netip.ParseAddr(cfg.Gateway); err != nil || !o.gateway.Is4() {
			return nil, fmt.Errorf("argument --gateway: %q is not an IPv4 address", cfg.Gateway)
		}
		if o.clients.Contains(o.gateway) {
			return nil, fmt.Errorf("argument --gateway: %v is inside the client range %v", o.gateway, o.clients)
		}
	}
	if o.cores == 0 {
		o.cores = 1
	}
	if o.link == "dpdk" {
		// Refused here, before anything runs, in a binary without DPDK.
		if !dpdk.Available {
			return nil, fmt.Errorf("argument --dataplane: %w", dpdk.ErrUnsupported)
		}
		if o.dpdkEAL, err = dpdk.SplitArgs(cfg.DPDKEAL); err != nil {
			return nil, fmt.Errorf("argument --dpdk-eal: %w", err)
		}
		if err := dpdk.CheckCores(o.cores); err != nil {
			return nil, fmt.Errorf("argument --dataplane-cores: %w", err)
		}
		o.dpdkPort = cfg.DPDKPort
		if o.dpdkIdle, err = dpdk.ParseIdleSleep(cfg.DPDKIdleSleep); err != nil {
			return nil, fmt.Errorf("argument --dpdk-idle-sleep: %w", err)
		}
	}
	return o, nil
}
