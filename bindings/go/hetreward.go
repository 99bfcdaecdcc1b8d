package hetreward

/*
#cgo pkg-config: hetreward
#include <hetreward.h>
#include <stdlib.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Status is a hetreward_status code of the C API. The values are stable (never renumbered).
// A Status is also an error, so errors.Is(err, StatusCancelled) tests an *Error's code.
type Status uint32

// The status codes of include/hetreward.h.
const (
	StatusOK                  Status = C.HETREWARD_OK
	StatusNullPointer         Status = C.HETREWARD_NULL_POINTER
	StatusInvalidArgument     Status = C.HETREWARD_INVALID_ARGUMENT
	StatusDimensionMismatch   Status = C.HETREWARD_DIMENSION_MISMATCH
	StatusNonFinite           Status = C.HETREWARD_NON_FINITE
	StatusSingularInformation Status = C.HETREWARD_SINGULAR_INFORMATION
	StatusNotConverged        Status = C.HETREWARD_NOT_CONVERGED
	StatusIO                  Status = C.HETREWARD_IO
	StatusBadFormat           Status = C.HETREWARD_BAD_FORMAT
	StatusCancelled           Status = C.HETREWARD_CANCELLED
	StatusInternal            Status = C.HETREWARD_INTERNAL
)

// String gives the C name of the code, e.g. "HETREWARD_CANCELLED" (hetreward_status_name).
func (s Status) String() string {
	return C.GoString(C.hetreward_status_name(C.uint32_t(s)))
}

// Error makes a Status usable as an errors.Is target.
func (s Status) Error() string { return "hetreward: " + s.String() }

// Error is the error of every failed call: the C status code and the library's message for
// it (hetreward_last_error_message, read on the same OS thread as the call). A cancelled fit
// also carries its cause (the context's error, or the progress function's), reachable with
// errors.Is / errors.Unwrap.
type Error struct {
	Status  Status
	Message string
	cause   error
}

func (e *Error) Error() string {
	msg := "hetreward: " + e.Status.String()
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.cause != nil {
		msg += " (" + e.cause.Error() + ")"
	}
	return msg
}

// Unwrap returns the cause of a cancelled fit, or nil.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is this error's Status, so errors.Is(err, StatusIO) works.
func (e *Error) Is(target error) bool {
	s, ok := target.(Status)
	return ok && s == e.Status
}

// ErrClosed is returned by methods called on a handle after its Close.
var ErrClosed = errors.New("hetreward: use of a closed handle")

// Version is the loaded library's version, "MAJOR.MINOR.PATCH" (hetreward_version).
func Version() string { return C.GoString(C.hetreward_version()) }

// HeaderVersion is the version of the header this package was compiled against. It equals
// Version() unless the shared library found at run time is not the one built with.
func HeaderVersion() string {
	return fmt.Sprintf("%d.%d.%d", C.HETREWARD_VERSION_MAJOR, C.HETREWARD_VERSION_MINOR,
		C.HETREWARD_VERSION_PATCH)
}

// call runs one fallible C call and turns its status into an error. The goroutine is locked
// to its OS thread so that the thread-local last-error message read afterwards is this
// call's.
func call(f func() C.hetreward_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := f()
	if s == C.HETREWARD_OK {
		return nil
	}
	return &Error{Status: Status(s), Message: C.GoString(C.hetreward_last_error_message())}
}

// dimErr is an error found on the Go side before the C call (a slice length that cannot
// match, which C could otherwise read past); it has the status the library would give.
func dimErr(format string, args ...any) error {
	return &Error{Status: StatusDimensionMismatch, Message: fmt.Sprintf(format, args...)}
}

// Pointers to the first element of a slice, for the duration of one C call (no copy);
// nil for an empty slice. The element types match C's exactly (float32 = float,
// float64 = double, int64 = int64_t).
func f32ptr(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

func f64ptr(s []float64) *C.double {
	if len(s) == 0 {
		return nil
	}
	return (*C.double)(unsafe.Pointer(&s[0]))
}

func i64ptr(s []int64) *C.int64_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&s[0]))
}

// Solver is the fitting algorithm (hetreward_solver).
type Solver uint32

const (
	// SolverNewton is damped Newton / Fisher scoring with multi-start (the default; fast).
	SolverNewton Solver = C.HETREWARD_SOLVER_NEWTON
	// SolverAGD is the paper's Algorithm 1, alternating gradient descent (step sizes Eta1, Eta2).
	SolverAGD Solver = C.HETREWARD_SOLVER_AGD
)

// String gives the library's name of the code, as the CLI spells it (hetreward_option_name),
// or "Solver(N)" for a code the library does not know.
func (s Solver) String() string {
	return optionName(C.HETREWARD_OPTION_SOLVER, uint32(s), "Solver")
}

// Covariance is the covariance kind of the standard errors (hetreward_covariance).
type Covariance uint32

const (
	// CovarianceExpected is the inverse expected information, the paper's S^2 (the default).
	CovarianceExpected Covariance = C.HETREWARD_COVARIANCE_EXPECTED
	// CovarianceObserved is the inverse observed Hessian.
	CovarianceObserved Covariance = C.HETREWARD_COVARIANCE_OBSERVED
	// CovarianceRobust is the HC0 sandwich.
	CovarianceRobust Covariance = C.HETREWARD_COVARIANCE_ROBUST
	// CovarianceCluster is the sandwich with scores summed per cluster (needs cluster ids).
	CovarianceCluster Covariance = C.HETREWARD_COVARIANCE_CLUSTER
)

// String gives the library's name of the code, as the CLI spells it (hetreward_option_name),
// or "Covariance(N)" for a code the library does not know.
func (c Covariance) String() string {
	return optionName(C.HETREWARD_OPTION_COVARIANCE, uint32(c), "Covariance")
}

// Init is where the solver starts (hetreward_init).
type Init uint32

const (
	// InitDefault starts from the homogeneous fit (gamma = 0).
	InitDefault Init = C.HETREWARD_INIT_DEFAULT
	// InitRandom draws every coefficient from U(-1, 1) with the params' Seed (the paper's).
	InitRandom Init = C.HETREWARD_INIT_RANDOM
	// InitExplicit starts from FitParams.Theta0 and Gamma0.
	InitExplicit Init = C.HETREWARD_INIT_EXPLICIT
)

// String gives the library's name of the code, as the CLI spells it (hetreward_option_name),
// or "Init(N)" for a code the library does not know.
func (i Init) String() string {
	return optionName(C.HETREWARD_OPTION_INIT, uint32(i), "Init")
}

// Termination is why the solver stopped (hetreward_termination).
type Termination uint32

const (
	TerminationConverged     Termination = C.HETREWARD_TERMINATION_CONVERGED
	TerminationMaxIterations Termination = C.HETREWARD_TERMINATION_MAX_ITERATIONS
	TerminationStalled       Termination = C.HETREWARD_TERMINATION_STALLED
	TerminationDiverged      Termination = C.HETREWARD_TERMINATION_DIVERGED
)

// String gives the library's name of the code, as the CLI spells it (hetreward_option_name),
// or "Termination(N)" for a code the library does not know.
func (t Termination) String() string {
	return optionName(C.HETREWARD_OPTION_TERMINATION, uint32(t), "Termination")
}

// DiffMethod is how the variance of a reward difference is computed (hetreward_diff_method).
type DiffMethod uint32

const (
	// DiffExact: both rewards share theta_hat (the default).
	DiffExact DiffMethod = C.HETREWARD_DIFF_EXACT
	// DiffIndependent: the paper's formula, as if the two rewards were independent.
	DiffIndependent DiffMethod = C.HETREWARD_DIFF_INDEPENDENT
	// DiffBound: the paper's upper bound.
	DiffBound DiffMethod = C.HETREWARD_DIFF_BOUND
)

// String gives the library's name of the code, as the CLI spells it (hetreward_option_name),
// or "DiffMethod(N)" for a code the library does not know.
func (m DiffMethod) String() string {
	return optionName(C.HETREWARD_OPTION_DIFF, uint32(m), "DiffMethod")
}

// Verdict of a comparison of a0 with a1 (hetreward_verdict).
type Verdict uint32

const (
	// Tie: the CI of r(a0) - r(a1) contains 0.
	Tie Verdict = C.HETREWARD_VERDICT_TIE
	// Win: the CI lies above 0, a0 is significantly better.
	Win Verdict = C.HETREWARD_VERDICT_WIN
	// Loss: the CI lies below 0, a1 is significantly better.
	Loss Verdict = C.HETREWARD_VERDICT_LOSS
)

// String gives the library's name of the code, as the CLI spells it (hetreward_option_name),
// or "Verdict(N)" for a code the library does not know.
func (v Verdict) String() string {
	return optionName(C.HETREWARD_OPTION_VERDICT, uint32(v), "Verdict")
}

// Policy is the selection rule of Model.Select (hetreward_policy).
type Policy uint32

const (
	// BoN maximises reward - penalty.
	BoN Policy = C.HETREWARD_POLICY_BON
	// PBoN maximises lower - penalty (pessimistic Best-of-N).
	PBoN Policy = C.HETREWARD_POLICY_PBON
)

// String gives the library's name of the code, as the CLI spells it (hetreward_option_name),
// or "Policy(N)" for a code the library does not know.
func (p Policy) String() string {
	return optionName(C.HETREWARD_OPTION_POLICY, uint32(p), "Policy")
}
