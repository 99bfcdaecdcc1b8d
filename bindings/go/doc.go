// Package hetreward is the Go binding of hetreward, a library for reward learning from
// heterogeneous human preferences with uncertainty quantification: fit a reward model from
// pairwise comparisons whose annotators differ in rationality, then score answers with
// standard errors and confidence intervals, compare two answers (win / tie / loss), and pick
// the best of N answers, optionally pessimistically (pBoN, by the reward's lower bound).
//
// It is a thin cgo layer over the C API in include/hetreward.h; no math is done in Go.
// Build against an installed library (scripts/install.sh --prefix DIR) through pkg-config:
//
//	PKG_CONFIG_PATH=DIR/lib/pkgconfig CGO_LDFLAGS="-Wl,-rpath,DIR/lib" go test
//
// CGO_LDFLAGS carries an rpath (no LD_LIBRARY_PATH needed) and, being part of Go's build
// cache key unlike pkg-config's output, makes a reinstall to another prefix rebuild this
// package (see the README for reinstalls and for using the module through replace or go.work).
//
// # Conventions
//
// Dataset, Fitter and Model wrap the C handles. Each has an idempotent Close and a finalizer
// (Close early: the finalizer runs at the garbage collector's convenience). Datasets and
// models are immutable, so any number of goroutines may use one at once; a Fitter runs one
// Fit at a time. Close is safe at any time from any goroutine: calls already running finish
// with the C object (the last one frees it), later calls return ErrClosed (or zero).
//
// Feature vectors are flat []float32 slices, row after row (m rows of d1 values), as
// inference engines hand out embeddings. They are passed to C in place, never copied, and
// only read during the call.
//
// Every failure is an *Error carrying the C status code and the library's message:
//
//	var e *hetreward.Error
//	if errors.As(err, &e) && e.Status == hetreward.StatusNonFinite { ... }
//	if errors.Is(err, hetreward.StatusCancelled) { ... }
//
// Fitter.Fit takes a context.Context: when it is done the fit stops after the current
// solver iteration and returns StatusCancelled wrapping ctx.Err(). FitParams.Progress sees
// every iteration and cancels the fit by returning an error.
package hetreward
