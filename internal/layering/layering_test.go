package layering

import (
	"bufio"
	"bytes"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/veilhq/veil/"

// layers lists the module's top-level areas from the bottom up. A package
// may import packages of its own layer or of a lower one, never of a higher
// one (Go already refuses cycles within a layer). The order is DESIGN.md's:
// httpapi → runtime/actors → agent/tools, llm → chains, enclave →
// persistence, with the actor host (runtime/host) below the actors it hosts,
// the commands on top, and the Go client beside agent/llm (it may use the
// chain ids and the wallet-signature formats, nothing of the server).
var layers = [][]string{
	{"persistence", "chains/stealth", "internal"},
	{"chains", "enclave"},
	{"agent", "llm", "client"},
	{"runtime"},
	{"actors"},
	{"httpapi"},
	{"cmd"},
}

// sealed areas import nothing of ours outside their own folder.
var sealed = []string{"persistence", "chains/stealth"}

// exceptions are the imports that break the arrows today, each with why it
// is still there. The test fails when one of them is no longer needed, so
// the list stays true.
var exceptions = map[string]string{}

// area is the longest layer prefix of a module-relative path.
func area(rel string) (string, int) {
	best, layer := "", -1
	for i, l := range layers {
		for _, p := range l {
			if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > len(best) {
				best, layer = p, i
			}
		}
	}
	return best, layer
}

func inside(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

func TestImportsFollowTheLayers(t *testing.T) {
	imports := listImports(t)
	if len(imports) < 20 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", len(imports))
	}
	bad, used := violations(imports)
	for _, b := range bad {
		t.Error(b)
	}
	for e := range exceptions {
		if !used[e] {
			t.Errorf("exception %q no longer happens: remove it from internal/layering", e)
		}
	}
}

// TestViolations proves the check on made-up graphs: each row is one
// import and whether the arrows allow it.
func TestViolations(t *testing.T) {
	for _, tc := range []struct {
		pkg, dep string
		ok       bool
	}{
		{"httpapi", "actors/agent", true},
		{"httpapi", "persistence", true},
		{"actors/agent", "runtime/host", true},
		{"actors/agent", "agent/tools", true},
		{"llm/builtin", "agent/intent", true},
		{"enclave/software", "chains", true},
		{"chains/evm", "persistence", true},
		{"persistence/postgres", "persistence", true},
		{"chains/stealth/secp256k1", "chains/stealth", true},
		{"cmd/veild", "httpapi", true},
		{"actors/internal/moneytest", "internal/fakeclock", true},
		{"runtime/cluster", "actors/msg", false}, // the envelope comes in through cluster.Codec
		{"runtime/host", "actors/agent", false},
		{"chains/evm", "actors/chain", false},
		{"agent/tools", "httpapi", false},
		{"persistence", "chains", false},
		{"persistence/postgres", "internal/failpoint", false},
		{"chains/stealth", "chains", false},
		{"client", "httpapi", false},
		{"httpapi", "cmd/veild", false},
		{"newtop/pkg", "chains", false},
		{"chains", "newtop/pkg", false},
	} {
		bad, _ := violations(map[string][]string{tc.pkg: {tc.dep}})
		if got := len(bad) == 0; got != tc.ok {
			t.Errorf("%s -> %s: allowed = %v, want %v (%v)", tc.pkg, tc.dep, got, tc.ok, bad)
		}
	}
}

// violations returns the imports that break the layers (sorted, each with
// its reason) and the exceptions that were used.
func violations(imports map[string][]string) (bad []string, used map[string]bool) {
	used = map[string]bool{}
	for pkg, deps := range imports {
		pa, pl := area(pkg)
		if pl < 0 {
			bad = append(bad, pkg+": in no layer; add its folder to layers in internal/layering")
			continue
		}
		for _, dep := range deps {
			da, dl := area(dep)
			edge := pkg + " -> " + dep
			var why string
			switch {
			case dl < 0:
				why = dep + " is in no layer"
			case sealedArea(pa) != "" && !inside(dep, sealedArea(pa)):
				why = sealedArea(pa) + " imports nothing of ours outside itself"
			case dl > pl:
				why = pa + " (layer " + layerName(pl) + ") may not import " + da + " (layer " + layerName(dl) + ")"
			default:
				continue
			}
			if _, ok := exceptions[edge]; ok {
				used[edge] = true
				continue
			}
			bad = append(bad, edge+": "+why)
		}
	}
	sort.Strings(bad)
	return bad, used
}

// pkgNames and stdUsed are filled by listImports.
var (
	pkgNames map[string]string
	stdUsed  map[string]bool
)

// shadowing are our packages named like a standard library package the
// module uses (so a file that needs both imports one under an alias), each
// with why it is not renamed yet.
var shadowing = map[string]string{}

func TestNoPackageShadowsTheStandardLibrary(t *testing.T) {
	listImports(t)
	stdNames := map[string]string{}
	for p := range stdUsed {
		stdNames[p[strings.LastIndex(p, "/")+1:]] = p
	}
	seen := map[string]bool{}
	for pkg, name := range pkgNames {
		sp, clash := stdNames[name]
		if !clash {
			continue
		}
		if _, ok := shadowing[pkg]; ok {
			seen[pkg] = true
			continue
		}
		t.Errorf("package %s is named %q like the standard library's %s, which this module imports: rename it", pkg, name, sp)
	}
	for pkg := range shadowing {
		if !seen[pkg] {
			t.Errorf("shadowing exception %q no longer happens: remove it from internal/layering", pkg)
		}
	}
}

func sealedArea(rel string) string {
	for _, s := range sealed {
		if inside(rel, s) {
			return s
		}
	}
	return ""
}

func layerName(i int) string { return strings.Join(layers[i], ", ") }

// listImports maps each of the module's packages (module-relative) to the
// module packages it imports in its non-test files, over every build tag
// combination the Makefile builds. It also fills names (package →
// package name) and std (the standard library packages the module uses).
func listImports(t *testing.T) map[string][]string {
	t.Helper()
	names, std := map[string]string{}, map[string]bool{}
	defer func() { pkgNames, stdUsed = names, std }()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	out := map[string]map[string]bool{}
	for _, tags := range []string{"", "nodevnet", "nodevnet,nok8s"} {
		cmd := exec.Command(goBin, "list", "-tags", tags, "-f", `{{.ImportPath}} {{.Name}}{{range .Imports}} {{.}}{{end}}`, "github.com/veilhq/veil/...")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		raw, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tags, err, stderr.Bytes())
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 || !strings.HasPrefix(f[0], module) {
				continue
			}
			pkg := strings.TrimPrefix(f[0], module)
			if out[pkg] == nil {
				out[pkg] = map[string]bool{}
			}
			names[pkg] = f[1]
			for _, d := range f[2:] {
				switch {
				case strings.HasPrefix(d, module):
					out[pkg][strings.TrimPrefix(d, module)] = true
				case !strings.Contains(strings.Split(d, "/")[0], "."):
					std[d] = true
				}
			}
		}
	}
	res := map[string][]string{}
	for p, ds := range out {
		for d := range ds {
			res[p] = append(res[p], d)
		}
		sort.Strings(res[p])
	}
	return res
}
