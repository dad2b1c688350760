package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/dataplane/ifcheck"
	"github.com/cicada-load/cicada/dataplane/link/dpdk"
	"github.com/cicada-load/cicada/dataplane/users"
)

// dataplaneRuntime checks the interface (ifcheck, the client range as the
// owned addresses) and builds the data plane's users runtime for this
// process's one worker; nil without --dataplane. Its warnings go to log.
func (a *app) dataplaneRuntime(log *slog.Logger) (*users.Runtime, error) {
	dp := a.dp
	if dp == nil {
		return nil, nil
	}
	// A DPDK port bound to vfio-pci has no kernel interface left to
	// check; a virtual device's or an mlx5 port's is named and checked.
	if dp.iface != "" || dp.link != users.LinkDPDK {
		warnings, err := ifcheck.Check(ifcheck.Options{Interface: dp.iface, Owned: dp.clients, Dedicated: dp.dedicated})
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			log.Warn(w)
		}
	}
	// --max-users: 0 and -1 leave the ceiling to the connection table
	// (client IPs x ports); a smaller ceiling is the runtime's too.
	maxUsers := a.cfg.MaxUsers
	if maxUsers == config.NoMaxUsers {
		maxUsers = 0
	}
	iface, where := dp.iface, dp.iface
	var dcfg dpdk.Config
	if dp.link == users.LinkDPDK {
		// users opens the port (and initialises the EAL) itself.
		dcfg = dpdk.Config{EAL: dp.dpdkEAL, Port: dp.dpdkPort, IdleSleep: dp.dpdkIdle}
		iface, where = "", "port "+dp.dpdkPort
	}
	rt, err := users.New(users.Options{
		Link: dp.link, Interface: iface, DPDK: dcfg,
		ClientIP: dp.clients.First, ClientIPs: dp.clients.Count, PortMin: dp.portMin, PortMax: dp.portMax,
		Gateway: dp.gateway, Cores: dp.cores, MaxUsers: maxUsers, Logger: log,
	}, a.file.Scenario)
	if err != nil {
		return nil, fmt.Errorf("--dataplane %s on %s: %w", dp.link, where, err)
	}
	return rt, nil
}

// dataplaneExit is the exit code of a data plane that cannot start: 2 for
// what the command line can fix (an unsafe interface, options or a
// scenario the data plane refuses), 1 otherwise.
func dataplaneExit(err error) int {
	for _, e := range []error{ifcheck.ErrUnsafe, ifcheck.ErrInterface, users.ErrOption, users.ErrRefused} {
		if errors.Is(err, e) {
			return 2
		}
	}
	return 1
}
