package hetreward

/*
#include <hetreward.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void hetreward_go_set_progress(hetreward_fit_params *params, uintptr_t handle);
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// FitParams are the options of a fit (hetreward_fit_params). Start from DefaultFitParams and
// change the fields you care about.
type FitParams struct {
	Solver     Solver     // SolverNewton (default) or SolverAGD
	Covariance Covariance // covariance kind of the standard errors; default CovarianceExpected
	Eta1       float64    // agd step size for theta, > 0; default 0.1 (ignored by Newton)
	Eta2       float64    // agd step size for gamma, > 0; default 0.08 (ignored by Newton)
	MaxIter    uint64     // iteration cap per start; 0 = the solver's default (Newton 100, agd 10000)
	Tol        float64    // tolerance on the gradient norm of the mean NLL, >= 0; default 1e-8
	Seed       uint64     // seed of random starts; the result is deterministic for a seed
	Init       Init       // InitDefault, InitRandom or InitExplicit (then Theta0, Gamma0)
	Restarts   uint32     // extra seeded starts of Newton when d2 > 0; default 2
	Theta0     []float64  // explicit start for theta (d1 values), with InitExplicit
	Gamma0     []float64  // explicit start for gamma (d2 values), with InitExplicit
	Threads    uint32     // worker threads; 0 = one per core (results do not depend on it)
	// RequireConverged makes a fit that misses Tol fail with StatusNotConverged; otherwise
	// such a fit returns a model whose Report says Converged = false.
	RequireConverged bool
	// Intervals is the model's interval method (IntervalsWald, the paper's, by default);
	// BootstrapReps its refits B (0 = the method's default, else 10..100000).
	Intervals     Intervals
	BootstrapReps uint32
	// Progress, if not nil, is called before every solver iteration (with the state it starts
	// from; Iteration 0 is the start point; not after the last), on one of the library's
	// worker threads (never concurrently with itself for one fit). A non-nil error cancels the
	// fit: Fit then returns an *Error with StatusCancelled that wraps it. A panic in Progress
	// is recovered and cancels the fit the same way.
	Progress func(Progress) error
}

// Progress is what a progress function sees once per solver iteration.
type Progress struct {
	Start     int     // which start is running, 0-based
	Iteration int     // iterations done in this start
	MaxIter   int     // the iteration cap of this start
	NegLogLik float64 // current mean negative log-likelihood
	GradNorm  float64 // current gradient norm (the fit stops when it is <= Tol)
}

// DefaultFitParams returns the library's defaults (hetreward_fit_default_params).
func DefaultFitParams() FitParams {
	c := C.hetreward_fit_default_params()
	return FitParams{
		Solver:           Solver(c.solver),
		Covariance:       Covariance(c.covariance),
		Eta1:             float64(c.eta1),
		Eta2:             float64(c.eta2),
		MaxIter:          uint64(c.max_iter),
		Tol:              float64(c.tol),
		Seed:             uint64(c.seed),
		Init:             Init(c.init),
		Restarts:         uint32(c.restarts),
		Threads:          uint32(c.threads),
		RequireConverged: bool(c.require_converged),
		Intervals:        Intervals(c.intervals),
		BootstrapReps:    uint32(c.bootstrap_reps),
	}
}

// fitState is what the C progress callback reaches through the fitter's cgo.Handle. It is
// touched by the fitting goroutine and by the library's worker threads, so under a mutex.
type fitState struct {
	mu       sync.Mutex
	progress func(Progress) error
	ctx      context.Context // of the running fit; nil when none runs
	cause    error           // why the callback asked to stop
}

//export hetrewardGoProgress
func hetrewardGoProgress(p *C.hetreward_progress, handle C.uintptr_t) (stop C.int) {
	st := cgo.Handle(handle).Value().(*fitState)
	st.mu.Lock()
	defer st.mu.Unlock()
	defer func() {
		// A panic must not unwind into the library's (Rust) frames: it cancels the fit.
		if r := recover(); r != nil {
			st.cause = fmt.Errorf("hetreward: progress function panicked: %v", r)
			stop = 1
		}
	}()
	if st.ctx == nil {
		return 0
	}
	if err := st.ctx.Err(); err != nil {
		st.cause = err
		return 1
	}
	if st.progress != nil {
		err := st.progress(Progress{
			Start:     int(p.start),
			Iteration: int(p.iteration),
			MaxIter:   int(p.max_iter),
			NegLogLik: float64(p.neg_loglik),
			GradNorm:  float64(p.grad_norm),
		})
		if err != nil {
			st.cause = err
			return 1
		}
	}
	return 0
}

// Fitter holds the params of a fit and can fit any number of datasets, one at a time (Fit
// calls on one Fitter are serialised). Close frees it; a finalizer does so too.
type Fitter struct {
	mu     sync.Mutex          // held by Fit and Close: one fit at a time
	p      *C.hetreward_fitter // never changes; valid while a use of h is held
	h      handle
	state  *fitState
	handle cgo.Handle
}

// NewFitter validates params and creates a fitter (hetreward_fitter_new). Errors:
// StatusInvalidArgument (e.g. Eta1 not positive), StatusNonFinite (Theta0/Gamma0),
// StatusNullPointer.
func NewFitter(params FitParams) (*Fitter, error) {
	c := C.hetreward_fit_default_params() // struct_size set by the library
	c.solver = C.hetreward_solver(params.Solver)
	c.covariance = C.hetreward_covariance(params.Covariance)
	c.eta1 = C.double(params.Eta1)
	c.eta2 = C.double(params.Eta2)
	c.max_iter = C.uint64_t(params.MaxIter)
	c.tol = C.double(params.Tol)
	c.seed = C.uint64_t(params.Seed)
	c.init = C.hetreward_init(params.Init)
	c.restarts = C.uint32_t(params.Restarts)
	c.threads = C.uint32_t(params.Threads)
	c.require_converged = C.bool(params.RequireConverged)
	c.intervals = C.hetreward_intervals(params.Intervals)
	c.bootstrap_reps = C.uint32_t(params.BootstrapReps)
	// theta0/gamma0 live in a struct passed to C, so they must be C memory (cgo forbids Go
	// pointers inside Go memory handed to C); hetreward_fitter_new copies them.
	if len(params.Theta0) > 0 {
		c.theta0 = cDoubles(params.Theta0)
		c.theta0_len = C.size_t(len(params.Theta0))
		defer C.free(unsafe.Pointer(c.theta0))
	}
	if len(params.Gamma0) > 0 {
		c.gamma0 = cDoubles(params.Gamma0)
		c.gamma0_len = C.size_t(len(params.Gamma0))
		defer C.free(unsafe.Pointer(c.gamma0))
	}
	st := &fitState{progress: params.Progress}
	h := cgo.NewHandle(st)
	C.hetreward_go_set_progress(&c, C.uintptr_t(h))
	var out *C.hetreward_fitter
	if err := call(func() C.hetreward_status { return C.hetreward_fitter_new(&c, &out) }); err != nil {
		h.Delete()
		return nil, err
	}
	f := &Fitter{p: out, state: st, handle: h}
	f.h.free = func() {
		C.hetreward_fitter_free(out)
		h.Delete()
	}
	runtime.SetFinalizer(f, (*Fitter).Close)
	return f, nil
}

func cDoubles(v []float64) *C.double {
	p := (*C.double)(C.malloc(C.size_t(len(v)) * C.size_t(unsafe.Sizeof(C.double(0)))))
	copy(unsafe.Slice((*float64)(unsafe.Pointer(p)), len(v)), v)
	return p
}

// Fit fits a model to d (hetreward_fitter_fit) and blocks until done. It stops early with an
// *Error of StatusCancelled, wrapping ctx.Err(), when ctx is done: the context is checked
// before every solver iteration. Errors: StatusDimensionMismatch (Theta0/Gamma0 lengths),
// StatusInvalidArgument (CovarianceCluster without cluster ids), StatusSingularInformation,
// StatusNotConverged (with RequireConverged), StatusCancelled, ErrClosed.
func (f *Fitter) Fit(ctx context.Context, d *Dataset) (*Model, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// A use of both for the whole fit: a Close of d (or a Cancel racing a Close) frees
	// nothing until the fit returns.
	if !f.h.acquire() {
		return nil, ErrClosed
	}
	defer f.h.release()
	if !d.h.acquire() {
		return nil, ErrClosed
	}
	defer d.h.release()
	if err := ctx.Err(); err != nil {
		return nil, &Error{Status: StatusCancelled, Message: "the context was done before the fit started", cause: err}
	}
	f.state.mu.Lock()
	f.state.ctx, f.state.cause = ctx, nil
	f.state.mu.Unlock()

	var out *C.hetreward_model
	err := call(func() C.hetreward_status { return C.hetreward_fitter_fit(f.p, d.p, &out) })
	runtime.KeepAlive(f)
	runtime.KeepAlive(d)

	f.state.mu.Lock()
	cause := f.state.cause
	f.state.ctx, f.state.cause = nil, nil
	f.state.mu.Unlock()
	if err != nil {
		if e, ok := err.(*Error); ok && e.Status == StatusCancelled {
			e.cause = cause
		}
		return nil, err
	}
	return newModel(out), nil
}

// Cancel asks the running fit to stop before its next iteration (hetreward_fitter_cancel);
// Fit then returns StatusCancelled. Safe from any goroutine while the fitter is open. A
// request made while no fit runs applies to the next fit (then is cleared); prefer a
// context, which only ever affects the fit it was given to.
func (f *Fitter) Cancel() {
	if !f.h.acquire() {
		return
	}
	defer f.h.release()
	C.hetreward_fitter_cancel(f.p)
}

// Close frees the fitter, waiting for a running Fit to return first. It is idempotent.
func (f *Fitter) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.h.close()
	runtime.SetFinalizer(f, nil)
}
