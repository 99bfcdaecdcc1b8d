package hetreward_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	hetreward "github.com/hetreward/hetreward/bindings/go"
)

// option is a Go constant of an option type: its value and its String().
type option struct {
	code uint32
	name string
}

func opt[T interface {
	~uint32
	String() string
}](v T) option {
	return option{uint32(v), v.String()}
}

// goOptions is every exported option constant of the package, by Go name. The test fails if
// the package declares one that is missing here (see goConstants), so the list cannot fall
// behind.
var goOptions = map[string]option{
	"SolverNewton":              opt(hetreward.SolverNewton),
	"SolverAGD":                 opt(hetreward.SolverAGD),
	"CovarianceExpected":        opt(hetreward.CovarianceExpected),
	"CovarianceObserved":        opt(hetreward.CovarianceObserved),
	"CovarianceRobust":          opt(hetreward.CovarianceRobust),
	"CovarianceCluster":         opt(hetreward.CovarianceCluster),
	"InitDefault":               opt(hetreward.InitDefault),
	"InitRandom":                opt(hetreward.InitRandom),
	"InitExplicit":              opt(hetreward.InitExplicit),
	"TerminationConverged":      opt(hetreward.TerminationConverged),
	"TerminationMaxIterations":  opt(hetreward.TerminationMaxIterations),
	"TerminationStalled":        opt(hetreward.TerminationStalled),
	"TerminationDiverged":       opt(hetreward.TerminationDiverged),
	"DiffExact":                 opt(hetreward.DiffExact),
	"DiffIndependent":           opt(hetreward.DiffIndependent),
	"DiffBound":                 opt(hetreward.DiffBound),
	"Tie":                       opt(hetreward.Tie),
	"Win":                       opt(hetreward.Win),
	"Loss":                      opt(hetreward.Loss),
	"BoN":                       opt(hetreward.BoN),
	"PBoN":                      opt(hetreward.PBoN),
	"IntervalsWald":             opt(hetreward.IntervalsWald),
	"IntervalsBootstrap":        opt(hetreward.IntervalsBootstrap),
	"IntervalsResized":          opt(hetreward.IntervalsResized),
	"IntervalsAuto":             opt(hetreward.IntervalsAuto),
	"IntervalsClusterJackknife": opt(hetreward.IntervalsClusterJackknife),
	"IntervalsClusterOneStep":   opt(hetreward.IntervalsClusterOneStep),
	"CoefficientsTheta":         opt(hetreward.CoefficientsTheta),
	"CoefficientsGamma":         opt(hetreward.CoefficientsGamma),
	"CoefficientsAll":           opt(hetreward.CoefficientsAll),
}

// headerConstants reads every integer #define of include/hetreward.h.
func headerConstants(t *testing.T) map[string]uint32 {
	text, err := os.ReadFile(filepath.Join("..", "..", "include", "hetreward.h"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint32{}
	re := regexp.MustCompile(`(?m)^\s*#define\s+(HETREWARD_\w+)\s+(\d+)\s*$`)
	for _, m := range re.FindAllStringSubmatch(string(text), -1) {
		v, err := strconv.ParseUint(m[2], 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		out[m[1]] = uint32(v)
	}
	return out
}

// goConstants maps each exported constant of the package's sources whose value is
// C.HETREWARD_<family>_* (an option family of the header) to that C name.
func goConstants(t *testing.T, families []string) map[string]string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, pkg := range pkgs {
		for _, file := range pkg.Files {
			for _, decl := range file.Decls {
				gen, ok := decl.(*ast.GenDecl)
				if !ok || gen.Tok != token.CONST {
					continue
				}
				for _, spec := range gen.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i >= len(vs.Values) {
							continue
						}
						sel, ok := vs.Values[i].(*ast.SelectorExpr)
						if !ok {
							continue
						}
						if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "C" {
							continue
						}
						for _, f := range families {
							if strings.HasPrefix(sel.Sel.Name, "HETREWARD_"+f+"_") {
								out[name.Name] = sel.Sel.Name
							}
						}
					}
				}
			}
		}
	}
	return out
}

// TestOptionsMatchHeader checks every option constant of the package against the header: its
// value is the C constant's, its String() is the library's name (which spells the constant:
// HETREWARD_INTERVALS_CLUSTER_JACKKNIFE is "cluster-jackknife"), and every constant of each
// family the package wraps has a Go constant.
func TestOptionsMatchHeader(t *testing.T) {
	header := headerConstants(t)
	var families []string
	for name := range header {
		if strings.HasPrefix(name, "HETREWARD_OPTION_") {
			families = append(families, strings.TrimPrefix(name, "HETREWARD_OPTION_"))
		}
	}
	sort.Strings(families)
	if len(families) < 10 {
		t.Fatalf("only %d option families in the header: %v", len(families), families)
	}
	declared := goConstants(t, families)
	if len(declared) != len(goOptions) {
		t.Errorf("the package declares %d option constants, the test lists %d", len(declared),
			len(goOptions))
	}
	wrapped := map[string]bool{}
	for goName, cName := range declared {
		o, ok := goOptions[goName]
		if !ok {
			t.Errorf("%s (= C.%s) is not in goOptions", goName, cName)
			continue
		}
		if want := header[cName]; o.code != want {
			t.Errorf("%s = %d, the header's %s = %d", goName, o.code, cName, want)
		}
		for _, f := range families {
			if suffix := strings.TrimPrefix(cName, "HETREWARD_"+f+"_"); suffix != cName {
				spelled := strings.ToUpper(strings.ReplaceAll(o.name, "-", "_"))
				if spelled != suffix {
					t.Errorf("%s.String() = %q, which does not spell %s", goName, o.name, cName)
				}
				wrapped[f] = true
			}
		}
	}
	for cName := range header {
		for f := range wrapped {
			if strings.HasPrefix(cName, "HETREWARD_"+f+"_") {
				found := false
				for _, c := range declared {
					found = found || c == cName
				}
				if !found {
					t.Errorf("%s: no Go constant", cName)
				}
			}
		}
	}
	if len(wrapped) < 9 {
		t.Errorf("only %d families wrapped: %v", len(wrapped), wrapped)
	}
}

func TestUnknownOptionCodes(t *testing.T) {
	if s := hetreward.Intervals(99).String(); s != "Intervals(99)" {
		t.Error(s)
	}
	if s := hetreward.Verdict(3).String(); s != "Verdict(3)" {
		t.Error(s)
	}
}
