package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/cicada-load/cicada/config"
	"github.com/cicada-load/cicada/dataplane/ifcheck"
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
	warnings, err := ifcheck.Check(ifcheck.Options{Interface: dp.iface, Owned: dp.clients, Dedicated: dp.dedicated})
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	// --max-users: 0 and -1 leave the ceiling to the connection table
	// (client IPs x ports); a smaller ceiling is the runtime's too.
	maxUsers := a.cfg.MaxUsers
	if maxUsers == config.NoMaxUsers {
		maxUsers = 0
	}
	rt, err := users.New(users.Options{
		Link: dp.link, Interface: dp.iface,
		ClientIP: dp.clients.First, ClientIPs: dp.clients.Count, PortMin: dp.portMin, PortMax: dp.portMax,
		Gateway: dp.gateway, Cores: dp.cores, MaxUsers: maxUsers, Logger: log,
	}, a.file.Scenario)
	if err != nil {
		return nil, fmt.Errorf("--dataplane %s on %s: %w", dp.link, dp.iface, err)
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
