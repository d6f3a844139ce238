package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The deployment files run the binary with command lines and variables
// that nothing compiles: a flag renamed in the code, or a variable set on
// a role that does not read it, would only show in a cluster (an unknown
// flag exits 2; an unread variable is ignored without a word). So every
// paydispatch container of the Dockerfile, compose.yaml and k8s/ is
// checked against the binary's own --help, which lists each command's
// flags and, for each, its variable ("(env NAME)").

// invocation is one paydispatch container: its command line (the
// subcommand first) and the names of the variables it is given.
type invocation struct {
	where string
	args  []string
	env   []string
}

// roles are the command lines compose.yaml and k8s/ must each hold, so
// that a renamed image cannot leave nothing to check.
var roles = []string{"migrate up", "serve", "worker --role init", "worker --role exec", "worker --role dispatch", "relay", "rail-sim"}

func TestDeployFilesMatchBinary(t *testing.T) {
	t.Parallel()
	df, err := readDockerfile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	composed, problems, err := composeInvocations("compose.yaml", df)
	if err != nil {
		t.Fatal(err)
	}
	manifests, k8sProblems, err := k8sInvocations("k8s")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(problems, k8sProblems...) {
		t.Error(p)
	}
	invs := append([]invocation{{where: "Dockerfile CMD", args: df.cmd}}, append(composed, manifests...)...)
	for _, source := range []string{"compose.yaml", "k8s"} {
		for _, role := range roles {
			if !slices.ContainsFunc(invs, func(inv invocation) bool {
				return strings.HasPrefix(inv.where, source) && strings.HasPrefix(strings.Join(inv.args, " ")+" ", role+" ")
			}) {
				t.Errorf("%s: no paydispatch container runs %q", source, role)
			}
		}
	}

	var need []string
	for _, inv := range invs {
		need = append(need, inv.args[:min(1, len(inv.args))]...)
	}
	cli := loadCLI(t, buildBinary(t), append(need, "serve", "relay", "worker", "rail-sim"))
	for _, inv := range invs {
		t.Run(inv.where, func(t *testing.T) {
			t.Parallel()
			for _, p := range cli.check(inv) {
				t.Error(p)
			}
		})
	}
	t.Run("Dockerfile ENV", func(t *testing.T) {
		t.Parallel()
		for _, name := range df.env {
			if !cli.readsAnywhere(name) {
				t.Errorf("Dockerfile: ENV %s is read by no paydispatch command", name)
			}
		}
	})

	// The check must be able to fail: each of these is refused.
	for _, tc := range []struct {
		name string
		inv  invocation
		want string
	}{
		{"made-up flag", invocation{args: []string{"serve", "--no-such-flag", "1"}}, "--no-such-flag"},
		{"another command's flag", invocation{args: []string{"relay", "--http-addr", "0.0.0.0:8080"}}, "--http-addr"},
		{"flag without its value", invocation{args: []string{"worker", "--role"}}, "--role"},
		{"made-up variable", invocation{args: []string{"relay"}, env: []string{"PAYDISPATCH_NO_SUCH_SETTING"}}, "PAYDISPATCH_NO_SUCH_SETTING"},
		{"another command's variable", invocation{args: []string{"worker", "--role", "exec"}, env: []string{"PAYDISPATCH_RAIL_URL"}}, "PAYDISPATCH_RAIL_URL"},
		{"unknown command", invocation{args: []string{"serv"}}, `"serv"`},
		{"stray word", invocation{args: []string{"serve", "now"}}, `"now"`},
		{"word its usage does not name", invocation{args: []string{"migrate", "down"}}, `"down"`},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			t.Parallel()
			tc.inv.where = tc.name
			problems := cli.check(tc.inv)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("check(%q, env %q) = %q, want a problem naming %s", tc.inv.args, tc.inv.env, problems, tc.want)
			}
		})
	}
}

// TestCollectors: the parsers see what compose and Kubernetes would (YAML
// merge keys, envFrom) and refuse what they cannot resolve.
func TestCollectors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	compose := write("compose.yaml", `
x-db: &db
  DATABASE_URL: postgres://x
services:
  one:
    image: example.com/team/paydispatch:1.0
    command: worker --role exec
    environment:
      <<: *db
      TEMPORAL_ADDRESS: t:7233
  two:
    image: paydispatch:dev
    environment: [PAYDISPATCH_LOG_LEVEL=debug]
  db:
    image: postgres:15
    command: ["postgres", "-c", "max_connections=400"]
`)
	invs, problems, err := composeInvocations(compose, dockerfile{cmd: []string{"serve"}})
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	want := []invocation{ // not db: another image
		{where: "compose.yaml one", args: []string{"worker", "--role", "exec"}, env: []string{"DATABASE_URL", "TEMPORAL_ADDRESS"}},
		{where: "compose.yaml two", args: []string{"serve"}, env: []string{"PAYDISPATCH_LOG_LEVEL"}},
	}
	if fmt.Sprint(invs) != fmt.Sprint(want) {
		t.Errorf("compose: got %v, want %v", invs, want)
	}

	write("k8s/a.yaml", `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {TEMPORAL_ADDRESS: "t:7233"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      containers:
        - name: c
          image: paydispatch:1
          args: [relay]
          envFrom: [{configMapRef: {name: cm}}, {secretRef: {name: missing}}]
          env: [{name: GOGC, value: "200"}]
          ports: [{name: metrics, containerPort: 9091}]
          readinessProbe: {httpGet: {path: /healthz, port: http}}
`)
	invs, problems, err = k8sInvocations(filepath.Join(dir, "k8s"))
	if err != nil {
		t.Fatal(err)
	}
	want = []invocation{{where: "k8s a.yaml Deployment d c", args: []string{"relay"}, env: []string{"TEMPORAL_ADDRESS", "GOGC"}}}
	if fmt.Sprint(invs) != fmt.Sprint(want) {
		t.Errorf("k8s: got %v, want %v", invs, want)
	}
	for _, w := range []string{`secretRef "missing"`, `port "http"`} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("k8s problems %q: none names %s", problems, w)
		}
	}
}

// TestPrometheusConfig: the scrape config is valid and loads the alert
// rules (promtool checks the rule files it names too).
func TestPrometheusConfig(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(promtool(t), "check", "config", "prometheus.yml")
	cmd.Dir = "prometheus"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}

// buildBinary builds the paydispatch binary of this tree.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "paydispatch")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/paydispatch/paydispatch/cmd/paydispatch").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// cli is what the binary says it takes.
type cli struct {
	commands map[string]*commandHelp
	// sourceEnv: variables the command package reads itself, outside the
	// flag settings (getenv("NAME") in cmd/paydispatch), e.g. GOMEMLIMIT
	// and PAYDISPATCH_BOOTSTRAP_TOKEN, which --help does not list.
	sourceEnv map[string]bool
}

// commandHelp is one command's --help.
type commandHelp struct {
	words map[string]bool // the words of its usage line, e.g. up, status
	flags map[string]bool // name → takes a value
	env   map[string]bool
}

var (
	commandLine = regexp.MustCompile(`(?m)^  ([a-z][a-z0-9-]*) +\S`)
	// flag.PrintDefaults: "  -name type" (no type: a switch), its usage
	// on the next line; a one-letter name has its usage after a tab.
	flagLine  = regexp.MustCompile(`(?m)^  -(\S+?)(?: (\S+))?(?:\t|$)`)
	envName   = regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]*)\)`)
	usageWord = regexp.MustCompile(`\b[a-z][a-z0-9-]*`)
	getenv    = regexp.MustCompile(`(?i)getenv\("([A-Z][A-Z0-9_]*)"\)`)
)

// loadCLI reads the list of commands from bin, the --help of those named
// in need, and the variables the command package reads by name. Only
// those: a command that took --help for something else would run.
func loadCLI(t *testing.T, bin string, need []string) *cli {
	t.Helper()
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("paydispatch %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	c := &cli{commands: map[string]*commandHelp{}, sourceEnv: map[string]bool{}}
	_, list, _ := strings.Cut(run("help"), "Commands:")
	for _, m := range commandLine.FindAllStringSubmatch(list, -1) {
		name := m[1]
		if !slices.Contains(need, name) {
			c.commands[name] = nil
			continue
		}
		text := run(name, "--help")
		usage, _, _ := strings.Cut(text, "\n")
		_, flags, _ := strings.Cut(text, "\nFlags:\n")
		h := &commandHelp{words: map[string]bool{}, flags: map[string]bool{}, env: map[string]bool{}}
		for _, w := range usageWord.FindAllString(usage, -1) {
			h.words[w] = w != "paydispatch" && w != name && w != "flags"
		}
		for _, f := range flagLine.FindAllStringSubmatch(flags, -1) {
			h.flags[f[1]] = f[2] != ""
		}
		for _, e := range envName.FindAllStringSubmatch(text, -1) {
			h.env[e[1]] = true
		}
		c.commands[name] = h
	}
	if len(c.commands) < 5 || c.commands["serve"] == nil || len(c.commands["serve"].flags) == 0 {
		t.Fatalf("paydispatch help lists %d commands; serve's --help: %+v", len(c.commands), c.commands["serve"])
	}
	sources, err := filepath.Glob("../cmd/paydispatch/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range sources {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range getenv.FindAllStringSubmatch(string(src), -1) {
			c.sourceEnv[m[1]] = true
		}
	}
	return c
}

// check lists what in inv the binary does not take.
func (c *cli) check(inv invocation) []string {
	if len(inv.args) == 0 {
		return []string{inv.where + ": no command"}
	}
	name := inv.args[0]
	h, listed := c.commands[name]
	switch {
	case !listed:
		return []string{fmt.Sprintf("%s: %q is not a paydispatch command", inv.where, name)}
	case h == nil:
		return []string{fmt.Sprintf("%s: paydispatch %s --help was not read", inv.where, name)}
	}
	var problems []string
	for i := 1; i < len(inv.args); i++ {
		arg := inv.args[i]
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			if !h.words[arg] {
				problems = append(problems, fmt.Sprintf("%s: paydispatch %s takes no word %q (its usage: %v)", inv.where, name, arg, keys(h.words)))
			}
			continue
		}
		flag, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		takesValue, ok := h.flags[flag]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: paydispatch %s has no flag --%s", inv.where, name, flag))
			if !hasValue && i+1 < len(inv.args) && !strings.HasPrefix(inv.args[i+1], "-") {
				i++ // its value, most likely: one problem is enough
			}
		case takesValue && !hasValue:
			if i++; i == len(inv.args) {
				problems = append(problems, fmt.Sprintf("%s: --%s of paydispatch %s wants a value", inv.where, flag, name))
			}
		}
	}
	for _, env := range inv.env {
		if !h.env[env] && !c.sourceEnv[env] {
			problems = append(problems, fmt.Sprintf("%s: paydispatch %s does not read %s", inv.where, name, env))
		}
	}
	return problems
}

// readsAnywhere: some command reads the variable.
func (c *cli) readsAnywhere(env string) bool {
	if c.sourceEnv[env] {
		return true
	}
	for _, h := range c.commands {
		if h != nil && h.env[env] {
			return true
		}
	}
	return false
}

func keys(m map[string]bool) []string {
	var ks []string
	for k, ok := range m {
		if ok {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// dockerfile is the final stage of a Dockerfile.
type dockerfile struct {
	entrypoint, cmd []string
	env             []string
}

func readDockerfile(path string) (dockerfile, error) {
	f, err := os.Open(path)
	if err != nil {
		return dockerfile{}, err
	}
	defer f.Close()
	var df dockerfile
	var line string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if line == "" && (text == "" || strings.HasPrefix(text, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line += cont + " "
			continue
		}
		line += text
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		line = ""
		switch strings.ToUpper(instr) {
		case "FROM": // a new stage: only the last one's settings are the image's
			df = dockerfile{}
		case "ENV":
			fields := strings.Fields(rest)
			if len(fields) > 0 && !strings.Contains(fields[0], "=") { // ENV NAME value
				fields = fields[:1]
			}
			for _, kv := range fields {
				name, _, _ := strings.Cut(kv, "=")
				df.env = append(df.env, name)
			}
		case "ENTRYPOINT", "CMD":
			// The exec form: the shell form needs /bin/sh, which a
			// distroless image does not have.
			var argv []string
			if err := json.Unmarshal([]byte(rest), &argv); err != nil {
				return df, fmt.Errorf("%s: %s %s: want the exec form, a JSON array", path, instr, rest)
			}
			if strings.EqualFold(instr, "CMD") {
				df.cmd = argv
			} else {
				df.entrypoint = argv
			}
		}
	}
	if err := sc.Err(); err != nil {
		return df, err
	}
	if len(df.entrypoint) != 1 || filepath.Base(df.entrypoint[0]) != "paydispatch" {
		return df, fmt.Errorf("%s: ENTRYPOINT %q, want the binary alone, so that a container's command is its subcommand", path, df.entrypoint)
	}
	return df, nil
}

// isPaydispatch: an image of paydispatch's, whatever its registry or tag.
func isPaydispatch(image string) bool {
	name := image[strings.LastIndex(image, "/")+1:]
	name, _, _ = strings.Cut(name, "@")
	name, _, _ = strings.Cut(name, ":")
	return name == "paydispatch"
}

// words is a compose command: a list, or a string split as compose does
// for one without quotes.
func words(v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(v), nil
	case []any:
		ws := make([]string, len(v))
		for i, w := range v {
			s, ok := w.(string)
			if !ok {
				return nil, fmt.Errorf("%v: want strings", v)
			}
			ws[i] = s
		}
		return ws, nil
	}
	return nil, fmt.Errorf("%v: want a string or a list", v)
}

func composeInvocations(path string, df dockerfile) (invs []invocation, problems []string, err error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var file struct {
		Services map[string]struct {
			Image       string `yaml:"image"`
			Entrypoint  any    `yaml:"entrypoint"`
			Command     any    `yaml:"command"`
			Environment any    `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(text, &file); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	names := make([]string, 0, len(file.Services))
	for name := range file.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		svc := file.Services[name]
		if !isPaydispatch(svc.Image) {
			continue
		}
		inv := invocation{where: filepath.Base(path) + " " + name}
		entrypoint, err := words(svc.Entrypoint)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: entrypoint %v", inv.where, err))
			continue
		}
		cmd, err := words(svc.Command)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: command %v", inv.where, err))
			continue
		}
		if svc.Command == nil && svc.Entrypoint == nil {
			cmd = df.cmd
		}
		if len(entrypoint) > 0 {
			if filepath.Base(entrypoint[0]) != "paydispatch" {
				problems = append(problems, fmt.Sprintf("%s: entrypoint %q does not run paydispatch", inv.where, entrypoint))
				continue
			}
			cmd = append(entrypoint[1:], cmd...)
		}
		inv.args = cmd
		switch env := svc.Environment.(type) {
		case nil:
		case map[string]any:
			for k := range env {
				inv.env = append(inv.env, k)
			}
			slices.Sort(inv.env)
		case []any:
			for _, kv := range env {
				s, _ := kv.(string)
				k, _, _ := strings.Cut(s, "=")
				inv.env = append(inv.env, k)
			}
		default:
			problems = append(problems, fmt.Sprintf("%s: environment %v: want a map or a list", inv.where, env))
		}
		invs = append(invs, inv)
	}
	return invs, problems, nil
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name string `yaml:"name"`
	} `yaml:"env"`
	EnvFrom []struct {
		Prefix       string `yaml:"prefix"`
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Ports          []k8sPort `yaml:"ports"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	StartupProbe   *k8sProbe `yaml:"startupProbe"`
}

type k8sPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type k8sPodSpec struct {
	Containers     []k8sContainer `yaml:"containers"`
	InitContainers []k8sContainer `yaml:"initContainers"`
}

type k8sObject struct {
	file       string
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		// Deployment, StatefulSet, DaemonSet, Job
		Template struct {
			Spec k8sPodSpec `yaml:"spec"`
		} `yaml:"template"`
		// CronJob
		JobTemplate struct {
			Spec struct {
				Template struct {
					Spec k8sPodSpec `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		} `yaml:"jobTemplate"`
	} `yaml:"spec"`
}

func k8sInvocations(dir string) (invs []invocation, problems []string, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, nil, fmt.Errorf("%s: no manifests (%v)", dir, err)
	}
	var objects []k8sObject
	refs := map[string][]string{} // "configMapRef name" or "secretRef name" → keys
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		dec := yaml.NewDecoder(f)
		for {
			var node yaml.Node
			err := dec.Decode(&node)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			if len(node.Content) == 0 { // an empty document
				continue
			}
			obj := k8sObject{file: filepath.Base(path)}
			if err := node.Decode(&obj); err != nil {
				f.Close()
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			if obj.APIVersion == "" || obj.Kind == "" || obj.Metadata.Name == "" {
				problems = append(problems, fmt.Sprintf("%s line %d: want apiVersion, kind and metadata.name", path, node.Line))
				continue
			}
			switch obj.Kind {
			case "ConfigMap":
				refs["configMapRef "+strconv.Quote(obj.Metadata.Name)] = slices.Sorted(mapKeys(obj.Data))
			case "Secret":
				refs["secretRef "+strconv.Quote(obj.Metadata.Name)] = slices.Sorted(mapKeys(obj.Data, obj.StringData))
			}
			objects = append(objects, obj)
		}
		f.Close()
	}
	for _, obj := range objects {
		pod := obj.Spec.Template.Spec
		if obj.Kind == "CronJob" {
			pod = obj.Spec.JobTemplate.Spec.Template.Spec
		}
		for _, c := range append(pod.InitContainers, pod.Containers...) {
			where := fmt.Sprintf("k8s %s %s %s %s", obj.file, obj.Kind, obj.Metadata.Name, c.Name)
			problems = append(problems, probeProblems(where, c)...)
			if !isPaydispatch(c.Image) {
				continue
			}
			inv := invocation{where: where, args: c.Args}
			if len(c.Command) > 0 {
				if filepath.Base(c.Command[0]) != "paydispatch" {
					problems = append(problems, fmt.Sprintf("%s: command %q does not run paydispatch", where, c.Command))
					continue
				}
				inv.args = append(c.Command[1:], c.Args...)
			}
			for _, from := range c.EnvFrom {
				var ref string
				switch {
				case from.ConfigMapRef != nil:
					ref = "configMapRef " + strconv.Quote(from.ConfigMapRef.Name)
				case from.SecretRef != nil:
					ref = "secretRef " + strconv.Quote(from.SecretRef.Name)
				}
				names, ok := refs[ref]
				if !ok {
					problems = append(problems, fmt.Sprintf("%s: envFrom %s: no such object in %s, so its variables are unknown", where, ref, dir))
				}
				for _, n := range names {
					inv.env = append(inv.env, from.Prefix+n)
				}
			}
			for _, e := range c.Env {
				inv.env = append(inv.env, e.Name)
			}
			invs = append(invs, inv)
		}
	}
	return invs, problems, nil
}

// probeProblems: each HTTP probe's port is one the container declares (a
// probe on another port fails only once deployed).
func probeProblems(where string, c k8sContainer) []string {
	var problems []string
	for _, p := range []*k8sProbe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		port := fmt.Sprint(p.HTTPGet.Port)
		if !slices.ContainsFunc(c.Ports, func(cp k8sPort) bool {
			return cp.Name == port || strconv.Itoa(cp.ContainerPort) == port
		}) {
			problems = append(problems, fmt.Sprintf("%s: probe %s on port %q, which the container does not declare", where, p.HTTPGet.Path, port))
		}
	}
	return problems
}

func mapKeys(ms ...map[string]string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, m := range ms {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		}
	}
}
