// Package config turns cicada's command line, LOCUST_* environment variables
// and locust.conf-style files into one Config, with Locust's option names,
// defaults and precedence (Locust 2.12.1 locust/argument_parser.py:
// setup_parser_arguments and DEFAULT_CONFIG_FILES):
//
//	command line > LOCUST_* environment > --config file > ./locust.conf > ~/.locust.conf > default
//
// Values are checked where Locust would silently pick something else: a port
// option outside 1-65535 (0 included, see MinPort) is a usage error.
//
// It imports only the standard library, pflag, internal/timespan and
// internal/filelimit.
package config

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cicada-load/cicada/internal/filelimit"
	"github.com/cicada-load/cicada/internal/timespan"
)

// ErrUsage marks errors in the command line, the environment or a config
// file. Locust exits with code 2 for these.
var ErrUsage = errors.New("config: usage")

// ErrHelp is returned by Parse when -h/--help was given; the help text has
// been written to the output writer.
var ErrHelp = pflag.ErrHelp

// Config is every option cicada understands. Field comments give the Locust
// option name; zero values are Locust's defaults unless noted.
type Config struct {
	Locustfile string   // -f/--locustfile: the scenario file (YAML)
	ConfigFile string   // --config
	Host       string   // -H/--host
	Users      int      // -u/--users (0: not set)
	UsersSet   bool     // whether -u was given anywhere
	SpawnRate  float64  // -r/--spawn-rate (0: not set)
	RunTime    Duration // -t/--run-time (0: no limit)
	List       bool     // -l/--list

	WebHost     string // --web-host ("" = all interfaces)
	WebPort     int    // --web-port/-P (8089)
	Headless    bool   // --headless
	Autostart   bool   // --autostart
	Autoquit    int    // --autoquit (-1 = never)
	Headful     bool   // --headful (hidden)
	WebAuth     string // --web-auth user:pass
	TLSCert     string // --tls-cert
	TLSKey      string // --tls-key
	ClassPicker bool   // --class-picker

	Master               bool   // --master
	MasterBindHost       string // --master-bind-host ("*")
	MasterBindPort       int    // --master-bind-port (5557)
	ExpectWorkers        int    // --expect-workers (1)
	ExpectWorkersMaxWait int    // --expect-workers-max-wait (0 = forever)
	EnableRebalancing    bool   // --enable-rebalancing

	Worker     bool   // --worker
	MasterHost string // --master-host (127.0.0.1)
	MasterPort int    // --master-port (5557)
	Processes  int    // --processes (0: not set; -1: one per CPU)

	Tags        []string // -T/--tags
	ExcludeTags []string // -E/--exclude-tags

	CSVPrefix      string // --csv
	CSVFullHistory bool   // --csv-full-history
	PrintStats     bool   // --print-stats
	OnlySummary    bool   // --only-summary
	ResetStats     bool   // --reset-stats
	HTMLFile       string // --html
	JSON           bool   // --json
	JSONFile       string // --json-file (Locust writes <JSONFile>.json)

	SkipLogSetup bool   // --skip-log-setup
	LogLevel     string // --loglevel/-L (INFO)
	LogFile      string // --logfile

	ShowTaskRatio     bool     // --show-task-ratio
	ShowTaskRatioJSON bool     // --show-task-ratio-json
	Version           bool     // --version/-V
	ExitCodeOnError   int      // --exit-code-on-error (1)
	StopTimeout       Duration // -s/--stop-timeout (0)
	EqualWeights      bool     // --equal-weights

	// cicada's own options.
	SourceIPs   string   // --source-ips: range or CIDR of local addresses for user connections
	SecondRound bool     // --second-round: one more request per user on its existing connection
	NodeID      string   // --node-id: worker id (default <hostname>_<uuid hex>)
	Thresholds  []string // --threshold, repeatable: pass/fail criteria (package thresholds' grammar)
	// ClusterSecretFile (--cluster-secret-file) names a file holding the
	// master/worker port's PLAIN password; ClusterSecret is the password,
	// from that file or from CICADA_CLUSTER_SECRET (see secret.go).
	ClusterSecretFile string
	ClusterSecret     string
	// MaxUsers is --max-users: the most users a spawn may ask of this
	// worker (worker.Options.MaxUsers). 0, the default, is twice the
	// open-files limit; NoMaxUsers (-1) is no ceiling; other negative
	// values are refused.
	MaxUsers int64
	// ArrivalRate (--arrival-rate, CICADA_ARRIVAL_RATE; issue 13) asks for
	// this many iterations per second in the whole cluster instead of
	// closed-loop users; 0: not set. MaxInFlight (--max-in-flight) is the
	// cap on in-flight iterations, the users spawned (-u may give it
	// instead). Master and standalone only; see validateRate.
	ArrivalRate float64
	MaxInFlight int

	// The userspace data plane (issue 11; cicada's own, CICADA_*). The
	// values are kept as written: cmd/cicada parses them with
	// dataplane/ifcheck (ParseRange, ParsePorts), which this leaf package
	// does not import; validate refuses the combinations cicada cannot
	// honour.
	Dataplane          string // --dataplane: "afpacket", "afxdp" or "dpdk" ("": kernel sockets)
	Interface          string // --interface: the data plane's interface (optional with dpdk)
	ClientIPs          string // --client-ips: the stack's client range (a-b, a-<last octet> or CIDR)
	ClientPorts        string // --client-ports (DefaultClientPorts)
	Gateway            string // --gateway: next hop resolved by ARP ("": the server itself)
	DataplaneCores     int    // --dataplane-cores (0: 1)
	DataplaneDedicated bool   // --dataplane-dedicated: skip the interface's safety refusals
	DPDKEAL            string // --dpdk-eal: DPDK's EAL arguments, one string split as a shell would
	DPDKPort           string // --dpdk-port: the DPDK port (number, PCI address or device name)
	DPDKIdleSleep      string // --dpdk-idle-sleep: Go duration an idle core sleeps ("": poll without pause)

	UserClasses []string // positional UserClass names
}

// Duration is a Locust time span: "20", "20s", "3m", "2h", "1h20m",
// "3h30m10s", parsed by internal/timespan (at most timespan.Max).
type Duration time.Duration

func (d *Duration) String() string { return time.Duration(*d).String() }
func (d *Duration) Type() string   { return "timespan" }
func (d *Duration) Set(s string) error {
	v, err := timespan.Parse(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// listValue is a space- or comma-separated list that also accepts the
// "[a, b]" syntax of config files.
type listValue struct{ p *[]string }

func (l listValue) String() string { return strings.Join(*l.p, " ") }
func (l listValue) Type() string   { return "list" }
func (l listValue) Set(s string) error {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		f = strings.Trim(f, `"'`)
		if f != "" {
			*l.p = append(*l.p, f)
		}
	}
	return nil
}

// option ties a flag to its environment variable. Hidden options are not
// shown in --help.
type option struct {
	name   string
	env    string
	hidden bool
}

// Parser holds the flag set; build it with NewParser.
type Parser struct {
	fs      *pflag.FlagSet
	cfg     *Config
	options []option
	getenv  func(string) string
	home    string
	workdir string
}

// NewParser defines every option on a fresh flag set writing usage to out.
// getenv nil means os.Getenv; home and workdir are where ~/.locust.conf and
// ./locust.conf are looked for ("" means the real ones).
func NewParser(out io.Writer, getenv func(string) string, home, workdir string) *Parser {
	if getenv == nil {
		getenv = os.Getenv
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if workdir == "" {
		workdir, _ = os.Getwd()
	}
	cfg := &Config{}
	fs := pflag.NewFlagSet("cicada", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.SortFlags = false
	p := &Parser{fs: fs, cfg: cfg, getenv: getenv, home: home, workdir: workdir}
	str := func(ptr *string, name, short, env, def, usage string) {
		fs.StringVarP(ptr, name, short, def, usage)
		p.options = append(p.options, option{name: name, env: env})
	}
	integer := func(ptr *int, name, short, env string, def int, usage string) {
		fs.IntVarP(ptr, name, short, def, usage)
		p.options = append(p.options, option{name: name, env: env})
	}
	boolean := func(ptr *bool, name, short, env, usage string) {
		fs.BoolVarP(ptr, name, short, false, usage)
		p.options = append(p.options, option{name: name, env: env})
	}
	str(&cfg.Locustfile, "locustfile", "f", "LOCUST_LOCUSTFILE", "", "Scenario file (YAML), or Python locustfile(s): .py, comma-separated .py files, a directory")
	str(&cfg.ConfigFile, "config", "", "", "", "Config file path (locust.conf syntax)")
	str(&cfg.Host, "host", "H", "LOCUST_HOST", "", "Host to load test, e.g. http://10.21.32.33")
	integer(&cfg.Users, "users", "u", "LOCUST_USERS", 0, "Peak number of concurrent users")
	fs.Float64VarP(&cfg.SpawnRate, "spawn-rate", "r", 0, "Rate to spawn users at (users per second)")
	p.options = append(p.options, option{name: "spawn-rate", env: "LOCUST_SPAWN_RATE"})
	fs.Float64Var(&cfg.SpawnRate, "hatch-rate", 0, "Deprecated alias of --spawn-rate")
	_ = fs.MarkHidden("hatch-rate")
	p.options = append(p.options, option{name: "hatch-rate", env: "LOCUST_HATCH_RATE", hidden: true})
	fs.VarP(&cfg.RunTime, "run-time", "t", "Stop after the given time, e.g. (300s, 20m, 3h, 1h30m)")
	p.options = append(p.options, option{name: "run-time", env: "LOCUST_RUN_TIME"})
	boolean(&cfg.List, "list", "l", "", "Show list of possible User classes and exit")

	str(&cfg.WebHost, "web-host", "", "LOCUST_WEB_HOST", "", "Host to bind the web interface to (default: all interfaces)")
	integer(&cfg.WebPort, "web-port", "P", "LOCUST_WEB_PORT", 8089, "Port on which to run the web host")
	boolean(&cfg.Headless, "headless", "", "LOCUST_HEADLESS", "Disable the web interface and start the test immediately")
	boolean(&cfg.Autostart, "autostart", "", "LOCUST_AUTOSTART", "Start the test immediately but keep the web UI")
	integer(&cfg.Autoquit, "autoquit", "", "LOCUST_AUTOQUIT", -1, "Quit this many seconds after the run ends (only with --autostart)")
	boolean(&cfg.Headful, "headful", "", "LOCUST_HEADFUL", "Cancel a headless setting from a config file")
	_ = fs.MarkHidden("headful")
	str(&cfg.WebAuth, "web-auth", "", "LOCUST_WEB_AUTH", "", "Basic auth for the web interface, as username:password")
	str(&cfg.TLSCert, "tls-cert", "", "LOCUST_TLS_CERT", "", "TLS certificate for the web interface")
	str(&cfg.TLSKey, "tls-key", "", "LOCUST_TLS_KEY", "", "TLS private key for the web interface")
	boolean(&cfg.ClassPicker, "class-picker", "", "LOCUST_USERCLASS_PICKER", "Show user class selection in the web UI")

	boolean(&cfg.Master, "master", "", "LOCUST_MODE_MASTER", "Run as the master node of a distributed test")
	str(&cfg.MasterBindHost, "master-bind-host", "", "LOCUST_MASTER_BIND_HOST", "*", "Interface for the master to bind to")
	integer(&cfg.MasterBindPort, "master-bind-port", "", "LOCUST_MASTER_BIND_PORT", 5557, "Port for the master to bind to")
	integer(&cfg.ExpectWorkers, "expect-workers", "", "LOCUST_EXPECT_WORKERS", 1, "Headless master: wait for this many workers before starting")
	integer(&cfg.ExpectWorkersMaxWait, "expect-workers-max-wait", "", "LOCUST_EXPECT_WORKERS_MAX_WAIT", 0, "Give up waiting for workers after this many seconds (0: forever)")
	boolean(&cfg.EnableRebalancing, "enable-rebalancing", "", "", "Re-dispatch users when workers join or leave during a run")

	boolean(&cfg.Worker, "worker", "", "LOCUST_MODE_WORKER", "Run as a worker node of a distributed test")
	str(&cfg.MasterHost, "master-host", "", "LOCUST_MASTER_NODE_HOST", "127.0.0.1", "Master host for a worker to connect to")
	integer(&cfg.MasterPort, "master-port", "", "LOCUST_MASTER_NODE_PORT", 5557, "Master port for a worker to connect to")
	integer(&cfg.Processes, "processes", "", "LOCUST_PROCESSES", 0, "Start this many local worker processes (-1: one per CPU)")

	fs.VarP(listValue{&cfg.Tags}, "tags", "T", "Only run tasks with any of these tags")
	p.options = append(p.options, option{name: "tags", env: "LOCUST_TAGS"})
	fs.VarP(listValue{&cfg.ExcludeTags}, "exclude-tags", "E", "Skip tasks with any of these tags")
	p.options = append(p.options, option{name: "exclude-tags", env: "LOCUST_EXCLUDE_TAGS"})

	str(&cfg.CSVPrefix, "csv", "", "LOCUST_CSV", "", "Write stats to CSV files with this prefix")
	boolean(&cfg.CSVFullHistory, "csv-full-history", "", "LOCUST_CSV_FULL_HISTORY", "Write every stats entry to the _stats_history.csv file")
	boolean(&cfg.PrintStats, "print-stats", "", "LOCUST_PRINT_STATS", "Print the stats table in the console also in web UI mode")
	boolean(&cfg.OnlySummary, "only-summary", "", "LOCUST_ONLY_SUMMARY", "Only print the summary stats")
	boolean(&cfg.ResetStats, "reset-stats", "", "LOCUST_RESET_STATS", "Reset statistics once spawning has completed")
	str(&cfg.HTMLFile, "html", "", "LOCUST_HTML", "", "Write an HTML report to this file at the end of the run")
	boolean(&cfg.JSON, "json", "", "", "Print the final per-endpoint stats as JSON on stdout")
	str(&cfg.JSONFile, "json-file", "", "", "", "Write the final per-endpoint stats as JSON to <filename>.json")
	fs.StringArrayVar(&cfg.Thresholds, "threshold", nil, "Pass/fail criterion, repeatable: 'p99<500ms', 'fail_ratio<1%', 'avg{GET /api}<200 window=30s abort_on_fail' (exit code 99 when one fails)")
	p.options = append(p.options, option{name: "threshold"})

	boolean(&cfg.SkipLogSetup, "skip-log-setup", "", "LOCUST_SKIP_LOG_SETUP", "Do not configure logging")
	str(&cfg.LogLevel, "loglevel", "L", "LOCUST_LOGLEVEL", "INFO", "DEBUG/INFO/WARNING/ERROR/CRITICAL")
	str(&cfg.LogFile, "logfile", "", "LOCUST_LOGFILE", "", "Path to the log file (default: stderr)")

	boolean(&cfg.ShowTaskRatio, "show-task-ratio", "", "", "Print the task ratio table of the user classes and exit")
	boolean(&cfg.ShowTaskRatioJSON, "show-task-ratio-json", "", "", "Print the task ratio as JSON and exit")
	boolean(&cfg.Version, "version", "V", "", "Show the program's version number and exit")
	integer(&cfg.ExitCodeOnError, "exit-code-on-error", "", "LOCUST_EXIT_CODE_ON_ERROR", 1, "Exit code when the test result contains any failure or error")
	fs.VarP(&cfg.StopTimeout, "stop-timeout", "s", "Seconds users may finish their current task when stopping (default: stop at once)")
	p.options = append(p.options, option{name: "stop-timeout", env: "LOCUST_STOP_TIMEOUT"})
	boolean(&cfg.EqualWeights, "equal-weights", "", "", "Use equally distributed task weights")

	str(&cfg.SourceIPs, "source-ips", "", "CICADA_SOURCE_IPS", "", "Local source addresses for user connections: a range (127.0.0.1-127.0.0.16) or CIDR")
	boolean(&cfg.SecondRound, "second-round", "", "CICADA_SECOND_ROUND", "After all users are spawned, each user sends one more request on its existing connection")
	str(&cfg.NodeID, "node-id", "", "CICADA_NODE_ID", "", "Worker node id (default <hostname>_<random hex>)")
	str(&cfg.ClusterSecretFile, "cluster-secret-file", "", "CICADA_CLUSTER_SECRET_FILE", "", "File with the secret that masters and workers must share (ZMTP PLAIN; cicada-only clusters); or set CICADA_CLUSTER_SECRET")
	fs.Int64Var(&cfg.MaxUsers, "max-users", 0, "Worker: most users a spawn may ask of it (0: twice the open-files limit, -1: no ceiling)")
	p.options = append(p.options, option{name: "max-users", env: "CICADA_MAX_USERS"})
	fs.Float64Var(&cfg.ArrivalRate, "arrival-rate", 0, "Open model: start this many iterations (a user's next task) per second in the whole cluster; needs --max-in-flight")
	p.options = append(p.options, option{name: "arrival-rate", env: "CICADA_ARRIVAL_RATE"})
	integer(&cfg.MaxInFlight, "max-in-flight", "", "CICADA_MAX_IN_FLIGHT", 0, "Open model: the most iterations in flight, the users pre-allocated for --arrival-rate (or -u)")

	str(&cfg.Dataplane, "dataplane", "", "CICADA_DATAPLANE", "", "Userspace TCP data plane instead of kernel sockets: afpacket, afxdp or dpdk (worker or standalone; Linux, root; dpdk: make build-dpdk)")
	str(&cfg.Interface, "interface", "", "CICADA_INTERFACE", "", "Data plane: the interface to send and receive on (refused if it carries the default route, see --dataplane-dedicated)")
	str(&cfg.ClientIPs, "client-ips", "", "CICADA_CLIENT_IPS", "", "Data plane: the client address range the stack owns, e.g. 198.18.0.1-198.18.0.200 or 198.18.0.0/24")
	str(&cfg.ClientPorts, "client-ports", "", "CICADA_CLIENT_PORTS", DefaultClientPorts, "Data plane: client port range")
	str(&cfg.Gateway, "gateway", "", "CICADA_GATEWAY", "", "Data plane: next hop address (resolved by ARP; default: the server itself)")
	integer(&cfg.DataplaneCores, "dataplane-cores", "", "CICADA_DATAPLANE_CORES", 0, "Data plane: polling loops, one per core (default 1)")
	boolean(&cfg.DataplaneDedicated, "dataplane-dedicated", "", "CICADA_DATAPLANE_DEDICATED", "Data plane: the interface is dedicated to the test; its safety refusals become warnings")
	str(&cfg.DPDKEAL, "dpdk-eal", "", "CICADA_DPDK_EAL", "", `Data plane dpdk: DPDK's EAL arguments as one string, e.g. "-l 2 -a 0000:03:00.0" (doc/dpdk.md; needs a binary from make build-dpdk)`)
	str(&cfg.DPDKPort, "dpdk-port", "", "CICADA_DPDK_PORT", "", "Data plane dpdk: the port, by number, PCI address or device name (net_af_packet0)")
	str(&cfg.DPDKIdleSleep, "dpdk-idle-sleep", "", "CICADA_DPDK_IDLE_SLEEP", "", "Data plane dpdk: how long a core with nothing to do sleeps, e.g. 50us (default: poll without pause, 100% CPU, as DPDK programs do)")
	return p
}

// FlagSet exposes the underlying flag set (for help output and tests).
func (p *Parser) FlagSet() *pflag.FlagSet { return p.fs }

// Parse reads args, then the environment and config files for every option
// the command line did not set.
func (p *Parser) Parse(args []string) (*Config, error) {
	if err := p.fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	p.cfg.UserClasses = p.fs.Args()
	if p.cfg.Version || p.cfg.List {
		return p.cfg, nil
	}
	fromEnv := map[string]string{}
	for _, o := range p.options {
		if o.env == "" {
			continue
		}
		if v := p.getenv(o.env); v != "" {
			fromEnv[o.name] = v
		}
	}
	// Lowest priority first; the default files are optional, --config is not.
	type confFile struct {
		path     string
		optional bool
	}
	var files []confFile
	if p.home != "" {
		files = append(files, confFile{filepath.Join(p.home, ".locust.conf"), true})
	}
	files = append(files, confFile{filepath.Join(p.workdir, "locust.conf"), true})
	if p.cfg.ConfigFile != "" {
		files = append(files, confFile{p.cfg.ConfigFile, false})
	}
	fromFiles := map[string]string{}
	for _, cf := range files {
		f := cf.path
		kv, err := readConfFile(f)
		if err != nil {
			if cf.optional && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("%w: %w", ErrUsage, err)
		}
		for k, v := range kv {
			if p.fs.Lookup(k) == nil || k == "config" {
				return nil, fmt.Errorf("%w: %s: unrecognized arguments: --%s=%s", ErrUsage, f, k, v)
			}
			fromFiles[k] = v
		}
	}
	// Apply the lower layers for flags the command line left alone, the
	// environment winning over files.
	names := make([]string, 0, len(fromFiles)+len(fromEnv))
	for k := range fromFiles {
		names = append(names, k)
	}
	for k := range fromEnv {
		if _, ok := fromFiles[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		f := p.fs.Lookup(name)
		if f.Changed {
			continue
		}
		v, src := fromFiles[name], "config file"
		if e, ok := fromEnv[name]; ok {
			v, src = e, envName(p.options, name)
		}
		if f.Value.Type() == "bool" {
			b, ok := parseBool(v)
			if !ok {
				return nil, fmt.Errorf("%w: Unexpected value for %s: '%s'. Expecting 'true', 'false', 'yes', 'no', '1' or '0'", ErrUsage, src, v)
			}
			if !b {
				continue
			}
			v = "true"
		}
		if err := p.fs.Set(name, v); err != nil {
			return nil, fmt.Errorf("%w: %s: --%s: %w", ErrUsage, src, name, err)
		}
	}
	p.cfg.UsersSet = p.fs.Lookup("users").Changed
	if p.fs.Lookup("hatch-rate").Changed {
		fmt.Fprintln(p.fs.Output(), "[DEPRECATED] The --hatch-rate parameter has been renamed --spawn-rate")
	}
	if p.cfg.Headful {
		p.cfg.Headless = false
	}
	if err := p.validate(); err != nil {
		return p.cfg, err
	}
	return p.cfg, p.resolveClusterSecret()
}

func (p *Parser) validate() error {
	c := p.cfg
	if err := validatePorts(c); err != nil {
		return err
	}
	if err := validateSeconds(c); err != nil {
		return err
	}
	switch {
	case c.Master && c.Worker:
		return fmt.Errorf("%w: The --master argument cannot be combined with --worker", ErrUsage)
	case c.CSVFullHistory && c.CSVPrefix == "":
		return fmt.Errorf("%w: '--csv-full-history' requires '--csv'", ErrUsage)
	case c.Autoquit != -1 && !c.Autostart:
		return fmt.Errorf("%w: --autoquit is only meaningful in combination with --autostart", ErrUsage)
	case c.WebAuth != "" && strings.Count(c.WebAuth, ":") != 1:
		return fmt.Errorf("%w: Credentials supplied with --web-auth should have the format: username:password", ErrUsage)
	case c.SpawnRate < 0 || math.IsNaN(c.SpawnRate) || math.IsInf(c.SpawnRate, 0) ||
		c.SpawnRate == 0 && (p.fs.Lookup("spawn-rate").Changed || p.fs.Lookup("hatch-rate").Changed):
		// 0 is "not set" (the default, 1) only when no layer gave it; the
		// master refuses rates beyond the dispatcher's bounds.
		return fmt.Errorf("%w: argument -r/--spawn-rate: must be a positive finite number, got %v", ErrUsage, c.SpawnRate)
	case c.Users < 0:
		return fmt.Errorf("%w: argument -u/--users: must be >= 0", ErrUsage)
	case c.MaxUsers < NoMaxUsers:
		return fmt.Errorf("%w: argument --max-users: must be >= 0, or %d for no ceiling, got %d", ErrUsage, NoMaxUsers, c.MaxUsers)
	case c.Worker && (c.JSON || c.JSONFile != "" || len(c.Thresholds) > 0):
		return fmt.Errorf("%w: --json, --json-file and --threshold are for the master (or standalone), which holds the merged statistics", ErrUsage)
	case c.Processes != 0 && c.Master:
		return fmt.Errorf("%w: --processes cannot be combined with --master", ErrUsage)
	}
	if err := p.validateDataplane(); err != nil {
		return err
	}
	if err := p.validateRate(); err != nil {
		return err
	}
	switch strings.ToUpper(c.LogLevel) {
	case "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL":
		c.LogLevel = strings.ToUpper(c.LogLevel)
	default:
		return fmt.Errorf("%w: Invalid --loglevel. Valid values are: DEBUG/INFO/WARNING/ERROR/CRITICAL", ErrUsage)
	}
	return nil
}

// DataplaneKinds are the values --dataplane accepts.
var DataplaneKinds = []string{"afpacket", "afxdp", "dpdk"}

// DefaultClientPorts is --client-ports' default, the stack's own
// (stack.DefaultPortMin..DefaultPortMax).
const DefaultClientPorts = "10000-59999"

// MaxDataplaneCores bounds --dataplane-cores.
const MaxDataplaneCores = 1024

// dataplaneOnly are the options that mean nothing without --dataplane:
// given alone they are refused, not ignored.
var dataplaneOnly = []string{"interface", "client-ips", "client-ports", "gateway", "dataplane-cores", "dataplane-dedicated"}

// dpdkOnly are the options that mean nothing without --dataplane dpdk.
var dpdkOnly = []string{"dpdk-eal", "dpdk-port", "dpdk-idle-sleep"}

// validateDataplane refuses data plane options cicada cannot honour: an
// unknown kind, a missing interface or client range, data plane options
// without --dataplane, and --dataplane with a master, --source-ips (the
// stack owns its own addresses), --processes (one process owns the
// interface) or an https host (the stack speaks plain HTTP/1.1).
func (p *Parser) validateDataplane() error {
	c := p.cfg
	if c.Dataplane != "dpdk" {
		for _, name := range dpdkOnly {
			if f := p.fs.Lookup(name); f.Changed {
				return fmt.Errorf("%w: --%s requires --dataplane dpdk", ErrUsage, name)
			}
		}
	}
	if c.Dataplane == "" {
		for _, name := range dataplaneOnly {
			if f := p.fs.Lookup(name); f.Changed {
				return fmt.Errorf("%w: --%s requires --dataplane", ErrUsage, name)
			}
		}
		return nil
	}
	known := false
	for _, k := range DataplaneKinds {
		known = known || c.Dataplane == k
	}
	switch {
	case !known:
		return fmt.Errorf("%w: argument --dataplane: invalid choice %q (choose from %s)", ErrUsage, c.Dataplane, strings.Join(DataplaneKinds, ", "))
	case c.Master:
		return fmt.Errorf("%w: --dataplane cannot be combined with --master: the master sends no load; give it to the workers", ErrUsage)
	case c.Interface == "" && c.Dataplane != "dpdk":
		// A port bound to vfio-pci has no kernel interface left to name.
		return fmt.Errorf("%w: --dataplane requires --interface", ErrUsage)
	case c.Dataplane == "dpdk" && c.DPDKPort == "":
		return fmt.Errorf("%w: --dataplane dpdk requires --dpdk-port (a number, PCI address or device name)", ErrUsage)
	case c.ClientIPs == "":
		return fmt.Errorf("%w: --dataplane requires --client-ips (addresses the stack owns, which the kernel must not)", ErrUsage)
	case c.SourceIPs != "":
		return fmt.Errorf("%w: --dataplane cannot be combined with --source-ips: the data plane's addresses are --client-ips", ErrUsage)
	case c.Processes != 0:
		return fmt.Errorf("%w: --dataplane cannot be combined with --processes: one process owns the interface; use --dataplane-cores", ErrUsage)
	case c.DataplaneCores < 0 || c.DataplaneCores > MaxDataplaneCores:
		return fmt.Errorf("%w: argument --dataplane-cores: must be 0-%d, got %d", ErrUsage, MaxDataplaneCores, c.DataplaneCores)
	case strings.HasPrefix(strings.ToLower(c.Host), "https://"):
		return fmt.Errorf("%w: --dataplane cannot be combined with an https host (%s): the data plane speaks plain HTTP/1.1", ErrUsage, c.Host)
	}
	return nil
}

// NoMaxUsers is the --max-users value that lifts a worker's user ceiling
// (worker.Options.MaxUsers < 0); the only negative value accepted.
const NoMaxUsers = -1

// validateSeconds refuses integer second counts that would wrap around
// time.Duration when cmd converts them (--autoquit 99999999999999 fired at
// once): the bound is the time spans', timespan.Max.
func validateSeconds(c *Config) error {
	for _, o := range []struct {
		name string
		v    int
	}{{"--autoquit", c.Autoquit}, {"--expect-workers-max-wait", c.ExpectWorkersMaxWait}} {
		if int64(o.v) > int64(timespan.Max/time.Second) {
			return fmt.Errorf("%w: argument %s: %w: %d seconds is above the maximum of %d (100 years)",
				ErrUsage, o.name, timespan.ErrTooLong, o.v, int64(timespan.Max/time.Second))
		}
	}
	return nil
}

// Port bounds of the port options. No port option picks a free port: 0 is
// refused like any other value outside MinPort..MaxPort, because a master,
// worker or web UI on a port nobody is told about cannot be reached (Locust
// binds a random port for --master-bind-port 0 and --web-port 0, and a
// worker's --master-port 0 would connect nowhere). Library callers that
// want a free port say so in the packages' Options (master.Options.BindPort
// < 0, web.Options.Addr ":0", `cicada target --listen 127.0.0.1:0`).
const (
	MinPort = 1
	MaxPort = 65535
)

// validatePorts refuses a port option outside MinPort..MaxPort, wherever it
// was set (command line, environment or config file).
func validatePorts(c *Config) error {
	ports := []struct {
		flag string
		port int
	}{
		{"--web-port", c.WebPort},
		{"--master-bind-port", c.MasterBindPort},
		{"--master-port", c.MasterPort},
	}
	for _, p := range ports {
		if p.port < MinPort || p.port > MaxPort {
			return fmt.Errorf("%w: argument %s: invalid port %d: must be %d-%d", ErrUsage, p.flag, p.port, MinPort, MaxPort)
		}
	}
	return nil
}

func envName(opts []option, name string) string {
	for _, o := range opts {
		if o.name == name {
			return o.env
		}
	}
	return name
}

func parseBool(s string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "1":
		return true, true
	case "false", "no", "0":
		return false, true
	}
	return false, false
}

// MaxConfFileSize is the largest locust.conf-style file Parse reads; a
// config file names a few dozen options, and a path that is not a regular
// file (such as /dev/zero) is refused as well.
const MaxConfFileSize = 1 << 20

// readConfFile reads a locust.conf-style file: "key = value", "key: value",
// "key value" or "--key value" per line; a bare key sets a flag; '#', ';'
// and '[' lines and "---" are skipped; " # comment" after a value is removed.
func readConfFile(path string) (map[string]string, error) {
	data, err := filelimit.Read(path, MaxConfFileSize)
	if err != nil {
		return nil, err
	}
	kv := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' || strings.HasPrefix(line, "---") {
			continue
		}
		if j := strings.Index(line, " #"); j >= 0 {
			line = strings.TrimSpace(line[:j])
		}
		line = strings.TrimPrefix(line, "--")
		key, value := line, "true"
		if j := strings.IndexAny(line, "=: \t"); j >= 0 {
			key = strings.TrimSpace(line[:j])
			value = strings.TrimSpace(line[j+1:])
			value = strings.TrimLeft(value, "=: \t")
		}
		if len(value) >= 2 && (value[0] == '"' && value[len(value)-1] == '"' || value[0] == '\'' && value[len(value)-1] == '\'') {
			value = value[1 : len(value)-1]
		}
		if key == "" {
			return nil, fmt.Errorf("%s:%d: empty key", path, i+1)
		}
		kv[key] = value
	}
	return kv, nil
}
