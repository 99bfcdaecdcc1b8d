package hetreward_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	hetreward "github.com/hetreward/hetreward/bindings/go"
)

const d1, d2 = 4, 2

var trueTheta = []float64{1.0, -0.5, 0.75, 0.25}
var trueGamma = []float64{0.5, -0.3}

// rng is splitmix64, as in c-tests/common.h: tiny, seeded, the same on every platform.
type rng uint64

func (s *rng) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func (s *rng) uniform() float64 { return float64(s.next()>>11) / 9007199254740992.0 }

type data struct {
	n               int
	z, psi0, psi, y []float64
	cluster         []int64
}

// makeData draws n comparisons from the model itself (P(y = 1) = mu(sigma theta . z)),
// from 20 annotators with a one-hot and a graded covariate.
func makeData(n int, seed uint64) data {
	s := rng(seed)
	d := data{n: n}
	for i := 0; i < n; i++ {
		c := int64(i % 20)
		psi := []float64{float64(c % 2), float64(c%5) / 4}
		sigma := 1.0
		for k := range psi {
			sigma += trueGamma[k] * psi[k]
		}
		t := 0.0
		for j := 0; j < d1; j++ {
			v := 4*s.uniform() - 2
			d.z = append(d.z, v)
			t += trueTheta[j] * v
		}
		y := 0.0
		if s.uniform() < 1/(1+math.Exp(-sigma*t)) {
			y = 1
		}
		d.psi0 = append(d.psi0, 1)
		d.psi = append(d.psi, psi...)
		d.y = append(d.y, y)
		d.cluster = append(d.cluster, c)
	}
	return d
}

func phis(m int, seed uint64) []float32 {
	s := rng(seed)
	out := make([]float32, m*d1)
	for i := range out {
		out[i] = float32(2*s.uniform() - 1)
	}
	return out
}

func mustDataset(t *testing.T, d data) *hetreward.Dataset {
	t.Helper()
	ds, err := hetreward.NewDataset(d1, d2, d.z, d.psi0, d.psi, d.y, d.cluster)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ds.Close)
	return ds
}

func fit(t *testing.T, ds *hetreward.Dataset, p hetreward.FitParams) *hetreward.Model {
	t.Helper()
	f, err := hetreward.NewFitter(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := f.Fit(context.Background(), ds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

var (
	modelOnce sync.Once
	shared    *hetreward.Model
	sharedErr error
)

// sharedModel is one fit of makeData(1000, 1), used by the read-only tests.
func sharedModel(t *testing.T) *hetreward.Model {
	t.Helper()
	modelOnce.Do(func() {
		d := makeData(1000, 1)
		ds, err := hetreward.NewDataset(d1, d2, d.z, d.psi0, d.psi, d.y, d.cluster)
		if err != nil {
			sharedErr = err
			return
		}
		defer ds.Close()
		f, err := hetreward.NewFitter(hetreward.DefaultFitParams())
		if err != nil {
			sharedErr = err
			return
		}
		defer f.Close()
		shared, sharedErr = f.Fit(context.Background(), ds)
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// statusOf asserts err is an *Error with the given status (via errors.As) and returns it.
func statusOf(t *testing.T, err error, want hetreward.Status, needle string) *hetreward.Error {
	t.Helper()
	var e *hetreward.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *hetreward.Error", err, err)
	}
	if e.Status != want || !errors.Is(err, want) {
		t.Fatalf("status %v, want %v (error: %v)", e.Status, want, err)
	}
	if !strings.Contains(e.Message, needle) {
		t.Fatalf("message %q does not contain %q", e.Message, needle)
	}
	return e
}

func TestVersion(t *testing.T) {
	if hetreward.Version() != hetreward.HeaderVersion() {
		t.Fatalf("library %s, header %s", hetreward.Version(), hetreward.HeaderVersion())
	}
	if hetreward.StatusCancelled.String() != "HETREWARD_CANCELLED" {
		t.Fatal(hetreward.StatusCancelled.String())
	}
}

func TestFit(t *testing.T) {
	m := sharedModel(t)
	if m.N() != 1000 || m.D1() != d1 || m.D2() != d2 {
		t.Fatalf("n, d1, d2 = %d, %d, %d", m.N(), m.D1(), m.D2())
	}
	theta, _ := m.Theta()
	gamma, _ := m.Gamma()
	thetaSE, _ := m.ThetaSE()
	gammaSE, err := m.GammaSE()
	if err != nil {
		t.Fatal(err)
	}
	for j := range theta {
		if !(thetaSE[j] > 0) || math.Abs(theta[j]-trueTheta[j]) > 5*thetaSE[j] {
			t.Errorf("theta[%d] = %g +- %g, truth %g", j, theta[j], thetaSE[j], trueTheta[j])
		}
	}
	for k := range gamma {
		if !(gammaSE[k] > 0) || math.Abs(gamma[k]-trueGamma[k]) > 5*gammaSE[k] {
			t.Errorf("gamma[%d] = %g +- %g, truth %g", k, gamma[k], gammaSE[k], trueGamma[k])
		}
	}
	r, err := m.Report()
	if err != nil {
		t.Fatal(err)
	}
	if !r.Converged || r.Termination != hetreward.TerminationConverged || r.Solver != hetreward.SolverNewton ||
		r.Covariance != hetreward.CovarianceExpected || r.Iterations < 1 || r.Starts < 1 ||
		r.GradNorm > r.Tol || !(r.NegLogLik > 0 && r.NegLogLik < math.Ln2) {
		t.Fatalf("report %+v", r)
	}
}

func TestFitVariants(t *testing.T) {
	d := makeData(400, 2)
	base := fit(t, mustDataset(t, d), hetreward.DefaultFitParams())
	want, _ := base.Theta()

	// float32 data and the pairs form: z = phi1 - phi0 with phi0 = 0.
	z32 := make([]float32, len(d.z))
	for i, v := range d.z {
		z32[i] = float32(v)
	}
	f32 := func(v []float64) []float32 {
		out := make([]float32, len(v))
		for i := range v {
			out[i] = float32(v[i])
		}
		return out
	}
	// The f32 data are the f64 data rounded, so the fit differs slightly; the pairs form of
	// the same values is the same dataset exactly.
	ds32, err := hetreward.NewDatasetF32(d1, d2, z32, f32(d.psi0), f32(d.psi), f32(d.y), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ds32.Close()
	pairs32, err := hetreward.DatasetFromPairsF32(d1, d2, make([]float32, len(z32)), z32, f32(d.psi0), f32(d.psi), f32(d.y), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pairs32.Close()
	pairs64, err := hetreward.DatasetFromPairs(d1, d2, make([]float64, len(d.z)), d.z, d.psi0, d.psi, d.y, d.cluster)
	if err != nil {
		t.Fatal(err)
	}
	defer pairs64.Close()
	if pairs64.N() != 400 || pairs64.D1() != d1 || pairs64.D2() != d2 {
		t.Fatal("pairs dataset dimensions")
	}
	a, _ := fit(t, ds32, hetreward.DefaultFitParams()).Theta()
	b, _ := fit(t, pairs32, hetreward.DefaultFitParams()).Theta()
	c, _ := fit(t, pairs64, hetreward.DefaultFitParams()).Theta()
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(c, want) {
		t.Fatalf("f32 %v, pairs f32 %v, pairs f64 %v, f64 %v", a, b, c, want)
	}
	for j := range a {
		if !near(a[j], want[j], 1e-4) {
			t.Fatalf("f32 fit %v far from f64 fit %v", a, want)
		}
	}

	// agd from an explicit start, cluster covariance, several thread counts: same estimate.
	p := hetreward.DefaultFitParams()
	p.Covariance = hetreward.CovarianceCluster
	p.Init = hetreward.InitExplicit
	p.Theta0 = []float64{0.5, 0, 0, 0}
	p.Gamma0 = []float64{0, 0}
	p.Threads = 1
	one := fit(t, pairs64, p)
	p.Threads = 2
	two := fit(t, pairs64, p)
	t1, _ := one.ThetaSE()
	t2, _ := two.ThetaSE()
	if !reflect.DeepEqual(t1, t2) {
		t.Fatalf("thread count changed the SEs: %v vs %v", t1, t2)
	}
	if r, _ := one.Report(); r.Covariance != hetreward.CovarianceCluster {
		t.Fatalf("covariance %v", r.Covariance)
	}
	p = hetreward.DefaultFitParams()
	p.Solver = hetreward.SolverAGD
	p.MaxIter = 50
	agd := fit(t, pairs64, p)
	if r, _ := agd.Report(); r.Solver != hetreward.SolverAGD || r.Converged ||
		r.Termination != hetreward.TerminationMaxIterations {
		t.Fatalf("agd report %+v", r)
	}
}

func TestScore(t *testing.T) {
	m := sharedModel(t)
	theta, _ := m.Theta()
	phi := phis(6, 7)
	r95, err := m.Score(phi, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	r90, _ := m.Score(phi, 0.10)
	if len(r95) != 6 {
		t.Fatalf("%d results", len(r95))
	}
	for i, r := range r95 {
		want := 0.0
		for j := 0; j < d1; j++ {
			want += theta[j] * float64(phi[i*d1+j])
		}
		if !near(r.Reward, want, 1e-12) || !(r.SE > 0) ||
			!near(r.Upper-r.Reward, r.Reward-r.Lower, 1e-12) ||
			!near((r.Upper-r.Lower)/(r90[i].Upper-r90[i].Lower), 1.959963984540054/1.6448536269514722, 1e-9) {
			t.Fatalf("row %d: %+v (theta . phi = %g)", i, r, want)
		}
	}
	// A unit vector scores theta_j with SE theta_se_j.
	se, _ := m.ThetaSE()
	unit := make([]float32, d1)
	unit[2] = 1
	r, _ := m.Score(unit, 0.05)
	if !near(r[0].Reward, theta[2], 1e-15) || !near(r[0].SE, se[2], 1e-12) {
		t.Fatalf("unit vector: %+v, theta %g se %g", r[0], theta[2], se[2])
	}
	// Empty batch.
	if r, err := m.Score(nil, 0.05); err != nil || len(r) != 0 {
		t.Fatalf("empty: %v %v", r, err)
	}
}

func TestCoefficients(t *testing.T) {
	m := sharedModel(t)
	theta, _ := m.Theta()
	se, _ := m.ThetaSE()
	gamma, _ := m.Gamma()
	all, err := m.Coefficients(0.05, hetreward.CoefficientsAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != d1+d2 {
		t.Fatalf("%d rows", len(all))
	}
	for j := 0; j < d1; j++ {
		c := all[j]
		if c.Block != hetreward.CoefficientsTheta || c.Index != j || c.Estimate != theta[j] || c.SE != se[j] ||
			c.Z != theta[j]/se[j] || !near(c.Upper-c.Estimate, 1.959963984540054*se[j], 1e-12) ||
			(c.PValue < 0.05) != (c.Lower > 0 || c.Upper < 0) {
			t.Fatalf("theta row %d: %+v", j, c)
		}
	}
	for k := 0; k < d2; k++ {
		if c := all[d1+k]; c.Block != hetreward.CoefficientsGamma || c.Index != k || c.Estimate != gamma[k] {
			t.Fatalf("gamma row %d: %+v", k, c)
		}
	}
	g, err := m.Coefficients(0.05, hetreward.CoefficientsGamma)
	if err != nil || len(g) != d2 || g[0] != all[d1] {
		t.Fatalf("gamma only: %v %v", g, err)
	}
	_, err = m.Coefficients(1.5, hetreward.CoefficientsAll)
	statusOf(t, err, hetreward.StatusInvalidArgument, "`alpha`")
	_, err = m.Coefficients(0.05, hetreward.Coefficients(9))
	statusOf(t, err, hetreward.StatusInvalidArgument, "`which`")
}

func TestCompare(t *testing.T) {
	m := sharedModel(t)
	phi0, phi1 := phis(5, 11), phis(5, 12)
	exact, err := m.Compare(phi0, phi1, 0.05, hetreward.DiffExact)
	if err != nil {
		t.Fatal(err)
	}
	indep, _ := m.Compare(phi0, phi1, 0.05, hetreward.DiffIndependent)
	bound, _ := m.Compare(phi0, phi1, 0.05, hetreward.DiffBound)
	r0, _ := m.Score(phi0, 0.05)
	r1, _ := m.Score(phi1, 0.05)
	for i := range exact {
		e := exact[i]
		if !near(e.Diff, r0[i].Reward-r1[i].Reward, 1e-12) ||
			!near(indep[i].SE, math.Hypot(r0[i].SE, r1[i].SE), 1e-12) ||
			!near(bound[i].SE, r0[i].SE+r1[i].SE, 1e-12) ||
			!(e.Lower < e.Diff && e.Diff < e.Upper) || !(e.PValue >= 0 && e.PValue <= 1) {
			t.Fatalf("pair %d: exact %+v indep %+v bound %+v", i, e, indep[i], bound[i])
		}
		want := hetreward.Tie
		if e.Lower > 0 {
			want = hetreward.Win
		} else if e.Upper < 0 {
			want = hetreward.Loss
		}
		if e.Verdict != want {
			t.Fatalf("pair %d: verdict %v, CI [%g, %g]", i, e.Verdict, e.Lower, e.Upper)
		}
	}
	// A strong answer against its negation wins, and the reverse loses.
	good := []float32{1, -1, 1, 1}
	bad := []float32{-1, 1, -1, -1}
	c, _ := m.Compare(append(append([]float32{}, good...), bad...), append(append([]float32{}, bad...), good...), 0.05, hetreward.DiffExact)
	if c[0].Verdict != hetreward.Win || c[1].Verdict != hetreward.Loss || c[0].Verdict.String() != "win" {
		t.Fatalf("verdicts %v %v", c[0].Verdict, c[1].Verdict)
	}
}

func TestSelect(t *testing.T) {
	m := sharedModel(t)
	phi := phis(16, 21)
	rewards, _ := m.Score(phi, 0.05)
	bon, cands, err := m.Select(phi, nil, 0.05, hetreward.BoN)
	if err != nil {
		t.Fatal(err)
	}
	pbon, pcands, _ := m.Select(phi, nil, 0.05, hetreward.PBoN)
	argmax := func(f func(int) float64) int {
		best := 0
		for i := 1; i < len(rewards); i++ {
			if f(i) > f(best) {
				best = i
			}
		}
		return best
	}
	if bon != argmax(func(i int) float64 { return rewards[i].Reward }) ||
		pbon != argmax(func(i int) float64 { return rewards[i].Lower }) {
		t.Fatalf("bon %d, pbon %d", bon, pbon)
	}
	for i := range cands {
		if cands[i].Reward != rewards[i] || cands[i].Score != rewards[i].Reward || pcands[i].Score != rewards[i].Lower {
			t.Fatalf("candidate %d: %+v vs %+v", i, cands[i], rewards[i])
		}
	}
	// A huge penalty on the BoN choice moves it.
	pen := make([]float64, 16)
	pen[bon] = 1e6
	moved, pc, err := m.Select(phi, pen, 0.05, hetreward.BoN)
	if err != nil || moved == bon || pc[bon].Penalty != 1e6 {
		t.Fatalf("penalised selection %d (was %d), %v", moved, bon, err)
	}
}

func TestRationality(t *testing.T) {
	m := sharedModel(t)
	gamma, _ := m.Gamma()
	gse, _ := m.GammaSE()
	sigma, se, err := m.Rationality(1, []float64{1, 0})
	if err != nil || !near(sigma, 1+gamma[0], 1e-12) || !near(se, gse[0], 1e-12) {
		t.Fatalf("sigma %g se %g err %v (gamma %v, se %v)", sigma, se, err, gamma, gse)
	}
	_, _, err = m.Rationality(1, []float64{1})
	statusOf(t, err, hetreward.StatusDimensionMismatch, "")
}

func sameScores(t *testing.T, a, b *hetreward.Model) {
	t.Helper()
	phi := phis(32, 5)
	ra, err := a.Score(phi, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Score(phi, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ra, rb) {
		t.Fatal("scores differ after the round trip")
	}
	ta, _ := a.Theta()
	tb, _ := b.Theta()
	ga, _ := a.GammaSE()
	gb, _ := b.GammaSE()
	if !reflect.DeepEqual(ta, tb) || !reflect.DeepEqual(ga, gb) || a.N() != b.N() {
		t.Fatal("parameters differ after the round trip")
	}
}

func TestSaveLoadFile(t *testing.T) {
	m := sharedModel(t)
	path := filepath.Join(t.TempDir(), "model.hrm")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := hetreward.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	sameScores(t, m, loaded)
	ra, _ := m.Report()
	rb, _ := loaded.Report()
	if ra.Iterations != rb.Iterations || ra.NegLogLik != rb.NegLogLik {
		t.Fatalf("report %+v vs %+v", ra, rb)
	}

	_, err = hetreward.LoadModel(filepath.Join(t.TempDir(), "missing.hrm"))
	statusOf(t, err, hetreward.StatusIO, "missing.hrm")
	garbage := filepath.Join(t.TempDir(), "garbage.hrm")
	if err := os.WriteFile(garbage, []byte("not a model at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = hetreward.LoadModel(garbage)
	statusOf(t, err, hetreward.StatusBadFormat, "")
	err = m.Save(filepath.Join(t.TempDir(), "no", "such", "dir", "m.hrm"))
	statusOf(t, err, hetreward.StatusIO, "")
}

func TestSaveLoadBuffer(t *testing.T) {
	m := sharedModel(t)
	buf, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := hetreward.LoadModelBuffer(buf)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	sameScores(t, m, loaded)
	// The buffer is the file's bytes.
	path := filepath.Join(t.TempDir(), "model.hrm")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	file, _ := os.ReadFile(path)
	if !reflect.DeepEqual(file, buf) {
		t.Fatal("MarshalBinary differs from the saved file")
	}
	// Truncated and corrupted buffers are rejected.
	_, err = hetreward.LoadModelBuffer(buf[:len(buf)/2])
	statusOf(t, err, hetreward.StatusBadFormat, "")
	bad := append([]byte{}, buf...)
	bad[len(bad)/2] ^= 0xff
	_, err = hetreward.LoadModelBuffer(bad)
	statusOf(t, err, hetreward.StatusBadFormat, "")
	_, err = hetreward.LoadModelBuffer(nil)
	if err == nil {
		t.Fatal("empty buffer accepted")
	}
}

func TestErrors(t *testing.T) {
	m := sharedModel(t)
	phi := phis(3, 1)
	phi[1*d1+2] = float32(math.NaN())
	_, err := m.Score(phi, 0.05)
	e := statusOf(t, err, hetreward.StatusNonFinite, "6") // flat index 1*4+2
	if !strings.Contains(e.Error(), "HETREWARD_NON_FINITE") {
		t.Fatalf("Error() = %q", e.Error())
	}
	_, err = m.Score(phis(2, 1), 1.5)
	statusOf(t, err, hetreward.StatusInvalidArgument, "alpha")
	_, err = m.Score(make([]float32, d1+1), 0.05) // not a whole number of rows
	statusOf(t, err, hetreward.StatusDimensionMismatch, "multiple")
	_, err = m.Compare(phis(2, 1), phis(3, 1), 0.05, hetreward.DiffExact)
	statusOf(t, err, hetreward.StatusDimensionMismatch, "")
	_, err = m.Compare(phis(2, 1), phis(2, 2), 0.05, hetreward.DiffMethod(99))
	statusOf(t, err, hetreward.StatusInvalidArgument, "")
	_, _, err = m.Select(nil, nil, 0.05, hetreward.PBoN)
	statusOf(t, err, hetreward.StatusDimensionMismatch, "")
	_, _, err = m.Select(phis(3, 1), []float64{0, math.Inf(1), 0}, 0.05, hetreward.PBoN)
	statusOf(t, err, hetreward.StatusNonFinite, "")

	// Bad data: a label that is not 0/1; slices of the wrong length (caught in Go).
	d := makeData(100, 3)
	d.y[5] = 0.5
	_, err = hetreward.NewDataset(d1, d2, d.z, d.psi0, d.psi, d.y, nil)
	statusOf(t, err, hetreward.StatusInvalidArgument, "")
	_, err = hetreward.NewDataset(d1, d2, d.z[:10], d.psi0, d.psi, d.y, nil)
	statusOf(t, err, hetreward.StatusDimensionMismatch, "z")
	_, err = hetreward.LoadDataset(filepath.Join(t.TempDir(), "none.csv"))
	statusOf(t, err, hetreward.StatusIO, "")

	// Bad params, and the cluster covariance without cluster ids.
	p := hetreward.DefaultFitParams()
	p.Eta1 = -1
	_, err = hetreward.NewFitter(p)
	statusOf(t, err, hetreward.StatusInvalidArgument, "eta1")
	d = makeData(100, 3)
	ds, err := hetreward.NewDataset(d1, d2, d.z, d.psi0, d.psi, d.y, nil)
	if err != nil {
		t.Fatal(err)
	}
	p = hetreward.DefaultFitParams()
	p.Covariance = hetreward.CovarianceCluster
	f, _ := hetreward.NewFitter(p)
	_, err = f.Fit(context.Background(), ds)
	statusOf(t, err, hetreward.StatusInvalidArgument, "cluster")
	p.Covariance = hetreward.CovarianceExpected
	p.Solver = hetreward.SolverAGD
	p.MaxIter = 3
	p.RequireConverged = true
	g, _ := hetreward.NewFitter(p)
	_, err = g.Fit(context.Background(), ds)
	statusOf(t, err, hetreward.StatusNotConverged, "")

	// Closed handles: Close is idempotent, later calls fail cleanly.
	f.Close()
	f.Close()
	g.Close()
	if _, err := f.Fit(context.Background(), ds); err != hetreward.ErrClosed {
		t.Fatalf("fit on a closed fitter: %v", err)
	}
	ds.Close()
	ds.Close()
	if ds.N() != 0 {
		t.Fatal("closed dataset has samples")
	}
	loaded, _ := hetreward.LoadModelBuffer(mustBytes(t, m))
	loaded.Close()
	loaded.Close()
	if _, err := loaded.Score(phis(1, 1), 0.05); err != hetreward.ErrClosed {
		t.Fatalf("score on a closed model: %v", err)
	}
}

func mustBytes(t *testing.T, m *hetreward.Model) []byte {
	t.Helper()
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Many goroutines score, compare and select with one model at once: every result equals the
// sequential one bitwise.
func TestConcurrentScoring(t *testing.T) {
	m := sharedModel(t)
	phi := phis(256, 9)
	type results struct {
		r   []hetreward.Reward
		c   []hetreward.Comparison
		idx int
		can []hetreward.Candidate
		sig float64
	}
	compute := func() (results, error) {
		var res results
		var err error
		if res.r, err = m.Score(phi, 0.05); err != nil {
			return res, err
		}
		if res.c, err = m.Compare(phi[:128*d1], phi[128*d1:], 0.05, hetreward.DiffExact); err != nil {
			return res, err
		}
		if res.idx, res.can, err = m.Select(phi[:16*d1], nil, 0.05, hetreward.PBoN); err != nil {
			return res, err
		}
		res.sig, _, err = m.Rationality(1, []float64{1, 0.75})
		return res, err
	}
	want, err := compute()
	if err != nil {
		t.Fatal(err)
	}
	const workers, reps = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < reps; i++ {
				got, err := compute()
				if err != nil {
					errs <- err
					return
				}
				if !reflect.DeepEqual(got, want) {
					errs <- fmt.Errorf("worker %d rep %d: results differ from the sequential ones", w, i)
					return
				}
				// Errors on one goroutine carry their own message, whatever the others do.
				bad := phis(1, 1)
				bad[w%d1] = float32(math.Inf(1))
				_, err = m.Score(bad, 0.05)
				var e *hetreward.Error
				if !errors.As(err, &e) || e.Status != hetreward.StatusNonFinite ||
					!strings.Contains(e.Message, fmt.Sprint(w%d1)) {
					errs <- fmt.Errorf("worker %d: error %v", w, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A fit that would run for a very long time (agd, tol 0, a huge cap) stops when its context
// is cancelled; the error is StatusCancelled and wraps context.Canceled.
func TestCancelContext(t *testing.T) {
	ds := mustDataset(t, makeData(300, 5))
	started := make(chan struct{})
	var once sync.Once
	var last int
	var mu sync.Mutex
	p := hetreward.DefaultFitParams()
	p.Solver = hetreward.SolverAGD
	p.Init = hetreward.InitRandom
	p.MaxIter = 1_000_000_000
	p.Tol = 0
	p.Progress = func(pr hetreward.Progress) error {
		mu.Lock()
		last = pr.Iteration
		mu.Unlock()
		if pr.Iteration >= 2 {
			once.Do(func() { close(started) })
		}
		return nil
	}
	f, err := hetreward.NewFitter(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	t0 := time.Now()
	m, err := f.Fit(ctx, ds)
	if m != nil {
		t.Fatal("a cancelled fit returned a model")
	}
	statusOf(t, err, hetreward.StatusCancelled, "cancel")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v does not wrap context.Canceled", err)
	}
	mu.Lock()
	if last < 2 || last > 100_000_000 {
		t.Fatalf("stopped at iteration %d", last)
	}
	mu.Unlock()
	if time.Since(t0) > 30*time.Second {
		t.Fatal("cancellation took too long")
	}

	// A deadline works the same way; a done context stops the fit before it starts.
	ctx, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err = f.Fit(ctx, ds)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, hetreward.StatusCancelled) {
		t.Fatalf("deadline: %v", err)
	}
	_, err = f.Fit(ctx, ds)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, hetreward.StatusCancelled) {
		t.Fatalf("done context: %v", err)
	}
	cancel()
}

// The progress function sees every iteration; returning an error cancels the fit, which
// then wraps that error; a panic is recovered into an error; the fitter fits again after.
func TestProgressAndFitterReuse(t *testing.T) {
	ds := mustDataset(t, makeData(300, 5))
	stop := errors.New("enough")
	var calls, lastIter, maxIter int
	panicAt := -1
	p := hetreward.DefaultFitParams()
	p.Solver = hetreward.SolverAGD
	p.Init = hetreward.InitRandom
	p.Progress = func(pr hetreward.Progress) error {
		calls++
		lastIter, maxIter = pr.Iteration, pr.MaxIter
		if !(pr.GradNorm >= 0 && pr.NegLogLik > 0) {
			return fmt.Errorf("bad progress %+v", pr)
		}
		if pr.Iteration == panicAt {
			panic("boom")
		}
		if pr.Iteration >= 3 && panicAt < 0 {
			return stop
		}
		return nil
	}
	f, err := hetreward.NewFitter(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Fit(context.Background(), ds)
	statusOf(t, err, hetreward.StatusCancelled, "")
	if !errors.Is(err, stop) || calls != 4 || lastIter != 3 || maxIter != 10000 {
		t.Fatalf("err %v, calls %d, last %d, max %d", err, calls, lastIter, maxIter)
	}
	panicAt = 1
	_, err = f.Fit(context.Background(), ds)
	statusOf(t, err, hetreward.StatusCancelled, "")
	if !strings.Contains(err.Error(), "boom") {
		t.Fatalf("panic not reported: %v", err)
	}
	// Fitter.Cancel before a fit applies to that fit only.
	panicAt = 1 << 62
	f.Cancel()
	_, err = f.Fit(context.Background(), ds)
	statusOf(t, err, hetreward.StatusCancelled, "")
	calls = 0
	m, err := f.Fit(context.Background(), ds)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if r, _ := m.Report(); calls == 0 || r.Iterations == 0 {
		t.Fatalf("calls %d, report %+v", calls, r)
	}
}

// Handles dropped without Close are freed by their finalizers without trouble.
func TestFinalizers(t *testing.T) {
	buf := mustBytes(t, sharedModel(t))
	d := makeData(100, 4)
	for i := 0; i < 50; i++ {
		if _, err := hetreward.LoadModelBuffer(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := hetreward.NewDataset(d1, d2, d.z, d.psi0, d.psi, d.y, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := hetreward.NewFitter(hetreward.DefaultFitParams()); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
}

func TestIntervalsAutoAndWaldCopy(t *testing.T) {
	// With annotator ids auto picks the one-step cluster jackknife (one draw per annotator).
	cp := hetreward.DefaultFitParams()
	cp.Intervals = hetreward.IntervalsAuto
	clustered := fit(t, mustDataset(t, makeData(300, 5)), cp)
	if ci, err := clustered.Intervals(); err != nil || ci.Method != hetreward.IntervalsClusterOneStep || ci.Reps != 20 {
		t.Fatalf("clustered auto: %+v %v", ci, err)
	}
	// Without them, by the problem's shape (issue 11).
	d := makeData(300, 5)
	d.cluster = nil
	ds := mustDataset(t, d)
	p := hetreward.DefaultFitParams()
	if p.Intervals != hetreward.IntervalsWald || p.BootstrapReps != 0 {
		t.Fatalf("defaults: %v %d", p.Intervals, p.BootstrapReps)
	}
	p.Intervals = hetreward.IntervalsAuto
	p.BootstrapReps = 30
	m := fit(t, ds, p)
	info, err := m.Intervals()
	if err != nil {
		t.Fatal(err)
	}
	if info.Requested != hetreward.IntervalsAuto || info.Method == hetreward.IntervalsAuto || info.Reps != 30 {
		t.Fatalf("intervals: %+v", info)
	}
	w, err := m.Wald()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wi, err := w.Intervals()
	if err != nil || wi.Method != hetreward.IntervalsWald {
		t.Fatalf("wald copy: %+v %v", wi, err)
	}
	psi := []float64{0.5, 0.5}
	sigma, se, err := m.Rationality(1, psi)
	if err != nil {
		t.Fatal(err)
	}
	ri, err := m.RationalityInterval(1, psi, 0.05)
	if err != nil || ri.Reward != sigma || ri.SE != se || !(ri.Lower < ri.Upper) {
		t.Fatalf("rationality interval: %+v %v (sigma %v se %v)", ri, err, sigma, se)
	}
	if _, err := m.RationalityInterval(1, psi, 0); err == nil {
		t.Fatal("alpha = 0 accepted")
	}
	p.BootstrapReps = 5
	if _, err := hetreward.NewFitter(p); err == nil {
		t.Fatal("B = 5 accepted")
	}
}

func TestHeterogeneity(t *testing.T) {
	// Comparisons independent given the covariates: design effects near 1 and no warning;
	// the summary is the coefficient with the largest standardised excess; a dataset without
	// cluster ids is refused by name.
	d := makeData(300, 5)
	ds := mustDataset(t, d)
	m := fit(t, ds, hetreward.DefaultFitParams())
	h, err := m.Heterogeneity(ds)
	if err != nil {
		t.Fatal(err)
	}
	p := m.D1() + m.D2()
	if h.Clusters != 20 || len(h.DesignEffects) != p || len(h.EffectiveClusters) != p {
		t.Fatalf("shape: %+v", h)
	}
	worst, best := -1, math.Inf(-1)
	for j := 0; j < p; j++ {
		if k := h.EffectiveClusters[j]; k < 1 || k > 19 {
			t.Fatalf("effective clusters[%d] = %v", j, k)
		}
		if de := h.DesignEffects[j]; de < 0.3 || de > 2.5 {
			t.Fatalf("design effect[%d] = %v", j, de)
		}
		excess := (h.DesignEffects[j] - 1) / math.Sqrt(2/h.EffectiveClusters[j])
		if excess > best {
			worst, best = j, excess
		}
	}
	if h.Worst != worst || math.Abs(h.ExcessZ-best) > 1e-12*math.Max(1, math.Abs(best)) {
		t.Fatalf("worst %d (excess %v), want %d (%v)", h.Worst, h.ExcessZ, worst, best)
	}
	if h.WorstDesignEffect != h.DesignEffects[worst] {
		t.Fatalf("worst design effect %v, want %v", h.WorstDesignEffect, h.DesignEffects[worst])
	}
	coverage := math.Erf(1.959963984540054 / math.Sqrt(2*h.WorstDesignEffect))
	if math.Abs(h.IndependentCoverage-coverage) > 1e-9 || h.Warning {
		t.Fatalf("coverage %v (want %v), warning %v", h.IndependentCoverage, coverage, h.Warning)
	}
	d.cluster = nil
	plain := mustDataset(t, d)
	_, err = m.Heterogeneity(plain)
	statusOf(t, err, hetreward.StatusInvalidArgument, "cluster")
	plain.Close()
	if _, err := m.Heterogeneity(plain); !errors.Is(err, hetreward.ErrClosed) {
		t.Fatalf("closed dataset: %v", err)
	}
}

func TestLeverage(t *testing.T) {
	// 20 annotators of 15 rows: the leverages sum to d1 + d2, each coefficient's partial
	// leverages to 1, the effective numbers are 1 / sum P^2 and the summary is the arrays'.
	// With the second rationality covariate non-zero for annotator 3 only, that annotator
	// carries gamma_1 and the diagnostic warns.
	d := makeData(300, 5)
	for i := 0; i < d.n; i++ {
		if d.cluster[i] != 3 {
			d.psi[2*i+1] = 0
		}
	}
	ds := mustDataset(t, d)
	m := fit(t, ds, hetreward.DefaultFitParams())
	l, err := m.Leverage(ds)
	if err != nil {
		t.Fatal(err)
	}
	p := m.D1() + m.D2()
	g := len(l.ClusterIDs)
	if g != 20 || len(l.Leverages) != g || len(l.Partial) != g*p || len(l.Effective) != p {
		t.Fatalf("shape: %+v", l)
	}
	sum := 0.0
	for _, v := range l.Leverages {
		sum += v
	}
	// Products in single precision, sums in double (docs/diagnostics.md): 1e-6.
	if math.Abs(sum-float64(p)) > 1e-6*float64(p) {
		t.Fatalf("leverages sum to %v, want %d", sum, p)
	}
	for j := 0; j < p; j++ {
		s1, s2 := 0.0, 0.0
		for c := 0; c < g; c++ {
			v := l.Partial[c*p+j]
			s1 += v
			s2 += v * v
		}
		if math.Abs(s1-1) > 1e-6 || math.Abs(l.Effective[j]-1/s2) > 1e-9*l.Effective[j] {
			t.Fatalf("coefficient %d: partial sum %v, effective %v vs %v", j, s1, l.Effective[j], 1/s2)
		}
	}
	lone := m.D1() + 1
	if l.MaxPartialCoefficient != lone || l.MaxPartialCluster != 3 || l.MaxPartial <= 0.5 {
		t.Fatalf("lone covariate: %+v", l)
	}
	if l.MinEffectiveCoefficient != lone || l.MinEffective > 3 || !l.Warning {
		t.Fatalf("lone covariate: %+v", l)
	}
	d.cluster = nil
	plain := mustDataset(t, d)
	_, err = m.Leverage(plain)
	statusOf(t, err, hetreward.StatusInvalidArgument, "cluster")
}

func TestUnbounded(t *testing.T) {
	// Annotator 3 alone in the second rationality covariate: the cluster jackknife cannot
	// estimate gamma_1 without it, so the model lists it with its carrier and its coefficient
	// row is unbounded; the Wald copy lists none.
	d := makeData(300, 5)
	for i := 0; i < d.n; i++ {
		if d.cluster[i] != 3 {
			d.psi[2*i+1] = 0
		}
	}
	ds := mustDataset(t, d)
	p := hetreward.DefaultFitParams()
	p.Intervals = hetreward.IntervalsClusterJackknife
	m := fit(t, ds, p)
	u, err := m.Unbounded()
	if err != nil {
		t.Fatal(err)
	}
	want := []hetreward.Unbounded{{Block: hetreward.CoefficientsGamma, Index: 1, Annotator: 3}}
	if len(u) != 1 || u[0] != want[0] {
		t.Fatalf("unbounded: %+v, want %+v", u, want)
	}
	rows, err := m.Coefficients(0.05, hetreward.CoefficientsGamma)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(rows[1].SE, 1) || !math.IsInf(rows[1].Upper, 1) || math.IsInf(rows[0].SE, 0) {
		t.Fatalf("gamma rows: %+v", rows)
	}
	w, err := m.Wald()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if u, err := w.Unbounded(); err != nil || len(u) != 0 {
		t.Fatalf("Wald copy: %+v, %v", u, err)
	}
}
