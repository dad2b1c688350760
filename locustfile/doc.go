// Package locustfile reads Python locustfiles without Python: the common
// HttpUser subset of real suites, translated to a cicada YAML scenario
// (package scenario) that cicada's master, workers and standalone mode run.
//
// Reading is three steps, none of which runs Python: a tokenizer (Python's
// indentation, strings with their prefixes and escapes, f-strings, numbers,
// comments, implicit and backslash line joining), a parser into a syntax
// tree of the whole language's statements and expressions (so that a
// construct outside the subset is named, not misread), and a reader that
// translates the subset into a Module: user classes of requests. Translate
// writes the Module as YAML in the syntax agreed for captures, checks and
// tags (doc/locustfile.md) and loads it with scenario.Parse, so a
// converted file (`cicada convert`) and a read one (-f locustfile.py) run
// the same way.
//
// # The subset
//
// HttpUser and FastHttpUser subclasses (and subclasses of those in the
// file) with host, weight, fixed_count, abstract, wait_time = between,
// constant, constant_pacing or constant_throughput with constant
// arguments, @task and @task(n), @tag, tasks = [...] or {...}; TaskSet and
// SequentialTaskSet classes nested or referenced; on_start and on_stop;
// functions made of self.client.get/post/put/patch/delete/head/options/
// request calls with name=, headers=, params=, json=, data= (dict: form
// encoded) and catch_response=True blocks whose if statements are checks
// (status_code, "x" in text, json()[...] == v, elapsed.total_seconds() <
// s, combined with not/and/or); values from module and class constants,
// f-strings and + of them, os.environ/os.getenv (${NAME} and
// ${NAME:-default}), for loops over range(n) or a constant list
// (unrolled), self.helper() calls without arguments (inlined), and
// captures: x = resp.json()[...] or
// resp.headers["X"] after a request, self.x = ... in on_start; a
// LoadTestShape whose tick() walks a stage table. Imports of locust and of
// side-effect-free standard modules are accepted; what is used from them
// is checked where it is used.
//
// # Refusals
//
// Anything else is an *Error naming the file, line, column and construct,
// with what to do. A problem at module level (an import of another module,
// an event hook, module code, a shape other than a stage table, a syntax
// error) refuses the file. A problem inside a user class refuses that
// class only: it is listed in Module.Refused (and logged by cicada, one
// warning each) and the other classes run, so a master still drives the
// classes it understands and Python workers keep the others.
//
// # Deliberate differences from Locust
//
//   - Nested TaskSets are flattened: each task's weight is its share as
//     `locust --show-task-ratio` prints it (the product of the ratios down
//     the nesting). A TaskSet that is a user's only task runs for ever in
//     Locust too; a nested one that a user enters and leaves (interrupt())
//     is modelled by its long-run share, and interrupt() itself is a task
//     that sends nothing.
//   - A catch_response block's failure messages are not kept: a failed
//     check is reported with the scenario's own message (like "status 500,
//     expected 201").
//   - A captured value or random draw used in json= is sent as a JSON
//     string.
//   - random.randint and random.choice over constants inside a request's
//     arguments become user variables drawn before each request (each:
//     request); a draw kept in a local or on self is refused (Python draws
//     once for all its uses), as are the other functions of random.
package locustfile
