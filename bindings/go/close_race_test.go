package hetreward_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	hetreward "github.com/hetreward/hetreward/bindings/go"
)

// raceFor is the time each close-while-in-use scenario runs (issue 32, class 1).
const raceFor = 2 * time.Second

// closeWhileUsed runs rounds until raceFor is spent: each round makes a handle, starts the
// users (each calls its function until it returns ErrClosed), lets them run a moment, then
// closes the handle from two goroutines at once. Any error other than ErrClosed fails; a use
// of a freed C object crashes the test binary (SIGSEGV) or is reported by -race.
func closeWhileUsed(t *testing.T, round func(i int) (closeIt func(), users []func() error)) {
	t.Helper()
	rounds, uses := 0, 0
	var mu sync.Mutex
	for end := time.Now().Add(raceFor); time.Now().Before(end); rounds++ {
		closeIt, users := round(rounds)
		var wg sync.WaitGroup
		for _, use := range users {
			wg.Add(1)
			go func(use func() error) {
				defer wg.Done()
				n := 0
				for {
					err := use()
					if errors.Is(err, hetreward.ErrClosed) {
						break
					}
					if err != nil {
						t.Errorf("a call racing Close: %v", err)
						break
					}
					n++
				}
				mu.Lock()
				uses += n
				mu.Unlock()
			}(use)
		}
		time.Sleep(time.Duration(rounds%7) * 300 * time.Microsecond)
		wg.Add(2)
		go func() { defer wg.Done(); closeIt() }()
		go func() { defer wg.Done(); closeIt() }()
		wg.Wait()
		if t.Failed() {
			break
		}
	}
	t.Logf("%d rounds, %d calls before Close", rounds, uses)
}

// closed turns a method returning zero after Close into an ErrClosed for closeWhileUsed.
func closed(v int) error {
	if v == 0 {
		return hetreward.ErrClosed
	}
	return nil
}

func TestCloseModelWhileInUse(t *testing.T) {
	buf := mustBytes(t, sharedModel(t))
	phi, one := phis(2000, 3), phis(1, 4)
	closeWhileUsed(t, func(int) (func(), []func() error) {
		m, err := hetreward.LoadModelBuffer(buf)
		if err != nil {
			t.Fatal(err)
		}
		return m.Close, []func() error{
			func() error { _, err := m.Score(phi, 0.05); return err },
			func() error { _, err := m.Score(one, 0.05); return err },
			func() error { _, err := m.Compare(phi, phi, 0.05, hetreward.DiffExact); return err },
			func() error { _, _, err := m.Select(phi[:200], nil, 0.05, hetreward.PBoN); return err },
			func() error { _, err := m.Coefficients(0.05, hetreward.CoefficientsAll); return err },
			func() error { _, err := m.MarshalBinary(); return err },
			func() error { _, err := m.Intervals(); return err },
			func() error {
				w, err := m.Wald()
				if err == nil {
					w.Close()
				}
				return err
			},
			func() error { _, err := m.Theta(); return err },
			func() error { _, err := m.Report(); return err },
			func() error { _, _, err := m.Rationality(1, []float64{0.5, 0.5}); return err },
			func() error { return closed(m.D1()) },
		}
	})
}

func TestCloseDatasetWhileInUse(t *testing.T) {
	d := makeData(400, 1)
	m := sharedModel(t)
	fitters := make([]*hetreward.Fitter, 2)
	for i := range fitters {
		p := hetreward.DefaultFitParams()
		if i == 1 {
			p.Solver = hetreward.SolverAGD
		}
		f, err := hetreward.NewFitter(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fitters[i] = f
	}
	fitWith := func(f *hetreward.Fitter, ds *hetreward.Dataset) func() error {
		return func() error {
			m, err := f.Fit(context.Background(), ds)
			if err == nil {
				m.Close()
			}
			return err
		}
	}
	closeWhileUsed(t, func(int) (func(), []func() error) {
		ds, err := hetreward.NewDataset(d1, d2, d.z, d.psi0, d.psi, d.y, d.cluster)
		if err != nil {
			t.Fatal(err)
		}
		return ds.Close, []func() error{
			fitWith(fitters[0], ds), fitWith(fitters[1], ds),
			func() error { _, err := m.Heterogeneity(ds); return err },
			func() error { return closed(ds.N()) },
		}
	})
}

func TestCloseFitterWhileInUse(t *testing.T) {
	d := makeData(400, 1)
	ds := mustDataset(t, d)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	closeWhileUsed(t, func(i int) (func(), []func() error) {
		p := hetreward.DefaultFitParams()
		p.Seed = uint64(i)
		f, err := hetreward.NewFitter(p)
		if err != nil {
			t.Fatal(err)
		}
		return f.Close, []func() error{
			func() error {
				m, err := f.Fit(context.Background(), ds)
				if errors.Is(err, hetreward.StatusCancelled) {
					return nil // Cancel below reached this fit
				}
				if err == nil {
					m.Close()
				}
				return err
			},
			func() error {
				f.Cancel()
				time.Sleep(500 * time.Microsecond)
				// Cancel returns nothing: a Fit with a done context (it starts no fit) tells
				// whether the fitter was closed.
				if _, err := f.Fit(done, ds); errors.Is(err, hetreward.ErrClosed) {
					return err
				}
				return nil
			},
		}
	})
}
