package hetreward

/*
#include <hetreward.h>
#include <stdlib.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Model is a fitted reward model: theta, gamma, their covariance and the fit report. It is
// immutable, so any number of goroutines may score, compare and select with one Model at
// once (results do not depend on it). Close frees it; a finalizer does so too.
type Model struct {
	p *C.hetreward_model // never changes; valid while a use of h is held
	h handle
}

func newModel(p *C.hetreward_model) *Model {
	m := &Model{p: p}
	m.h.free = func() { C.hetreward_model_free(p) }
	runtime.SetFinalizer(m, (*Model).Close)
	return m
}

// Close frees the model. It is idempotent, and safe while other goroutines use the model:
// their calls in flight finish with it (the last one frees it), later calls return
// ErrClosed or zero.
func (m *Model) Close() {
	m.h.close()
	runtime.SetFinalizer(m, nil)
}

// Reward is a reward with its standard error and (1 - alpha) confidence interval.
type Reward struct {
	Reward float64 // r = theta . phi
	SE     float64 // sqrt(phi^T S_theta^2 phi / n)
	Lower  float64 // reward - q_{1-alpha/2} se (the pessimistic reward of pBoN)
	Upper  float64 // reward + q_{1-alpha/2} se
}

// Comparison is a reward difference D = r(a0) - r(a1) with its SE, CI, p-value and verdict.
type Comparison struct {
	Diff    float64
	SE      float64
	Lower   float64
	Upper   float64
	PValue  float64 // two-sided p-value of D = 0
	Verdict Verdict // Win: a0 significantly better
}

// Candidate is one candidate's figures in a selection.
type Candidate struct {
	Reward
	Penalty float64 // the caller's penalty (0 if none)
	Score   float64 // the policy's objective: reward - penalty (BoN) or lower - penalty (pBoN)
}

// FitReport is how a model was fitted (hetreward_fit_report).
type FitReport struct {
	Solver          Solver
	Covariance      Covariance
	Termination     Termination
	Converged       bool
	Iterations      int // of the winning start
	TotalIterations int // over all starts
	Starts          int
	GradNorm        float64
	NegLogLik       float64 // final mean negative log-likelihood
	Seconds         float64
	Tol             float64
}

// N is the training sample size (0 after Close).
func (m *Model) N() int {
	if !m.h.acquire() {
		return 0
	}
	defer m.h.release()
	v := int(C.hetreward_model_n(m.p))
	return v
}

// D1 is the reward-feature dimension: the length of theta and of every feature vector.
func (m *Model) D1() int {
	if !m.h.acquire() {
		return 0
	}
	defer m.h.release()
	v := int(C.hetreward_model_d1(m.p))
	return v
}

// D2 is the annotator-covariate dimension (length of gamma, may be 0).
func (m *Model) D2() int {
	if !m.h.acquire() {
		return 0
	}
	defer m.h.release()
	v := int(C.hetreward_model_d2(m.p))
	return v
}

type vecGetter func(*C.hetreward_model, *C.double, C.size_t) C.hetreward_status

func (m *Model) vector(get vecGetter, n func() int) ([]float64, error) {
	// The length first: n() takes a use of its own, refused (0) once Close has run, and then
	// so is this one.
	size := n()
	if !m.h.acquire() {
		return nil, ErrClosed
	}
	defer m.h.release()
	out := make([]float64, size)
	err := call(func() C.hetreward_status { return get(m.p, f64ptr(out), C.size_t(len(out))) })
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Theta returns theta_hat (d1 values).
func (m *Model) Theta() ([]float64, error) {
	return m.vector(func(p *C.hetreward_model, o *C.double, n C.size_t) C.hetreward_status {
		return C.hetreward_model_theta(p, o, n)
	}, m.D1)
}

// Gamma returns gamma_hat (d2 values).
func (m *Model) Gamma() ([]float64, error) {
	return m.vector(func(p *C.hetreward_model, o *C.double, n C.size_t) C.hetreward_status {
		return C.hetreward_model_gamma(p, o, n)
	}, m.D2)
}

// ThetaSE returns the standard errors of theta_hat.
func (m *Model) ThetaSE() ([]float64, error) {
	return m.vector(func(p *C.hetreward_model, o *C.double, n C.size_t) C.hetreward_status {
		return C.hetreward_model_theta_se(p, o, n)
	}, m.D1)
}

// GammaSE returns the standard errors of gamma_hat.
func (m *Model) GammaSE() ([]float64, error) {
	return m.vector(func(p *C.hetreward_model, o *C.double, n C.size_t) C.hetreward_status {
		return C.hetreward_model_gamma_se(p, o, n)
	}, m.D2)
}

// Report returns how the model was fitted.
func (m *Model) Report() (FitReport, error) {
	if !m.h.acquire() {
		return FitReport{}, ErrClosed
	}
	defer m.h.release()
	var r C.hetreward_fit_report
	err := call(func() C.hetreward_status { return C.hetreward_model_report(m.p, &r) })
	runtime.KeepAlive(m)
	if err != nil {
		return FitReport{}, err
	}
	return FitReport{
		Solver:          Solver(r.solver),
		Covariance:      Covariance(r.covariance),
		Termination:     Termination(r.termination),
		Converged:       bool(r.converged),
		Iterations:      int(r.iterations),
		TotalIterations: int(r.total_iterations),
		Starts:          int(r.starts),
		GradNorm:        float64(r.grad_norm),
		NegLogLik:       float64(r.neg_loglik),
		Seconds:         float64(r.seconds),
		Tol:             float64(r.tol),
	}, nil
}

// rows returns how many rows of d1 values a flat slice holds.
func (m *Model) rows(name string, phi []float32) (int, int, error) {
	if !m.h.acquire() {
		return 0, 0, ErrClosed
	}
	defer m.h.release()
	d1 := int(C.hetreward_model_d1(m.p)) // under this use: never 0 after a racing Close
	if len(phi)%d1 != 0 {
		return 0, 0, dimErr("%s has %d values, not a multiple of the model's d1 = %d", name, len(phi), d1)
	}
	return len(phi) / d1, d1, nil
}

func toReward(r *C.hetreward_reward) Reward {
	return Reward{Reward: float64(r.reward), SE: float64(r.se), Lower: float64(r.lower), Upper: float64(r.upper)}
}

// Score scores m answers: phi holds m embeddings of d1 values each, row after row (no copy
// is made: the slice is read in place during the call). alpha in (0, 1) sets the (1 - alpha)
// CIs. Errors: StatusDimensionMismatch, StatusNonFinite (the message gives the flat index),
// StatusInvalidArgument (alpha).
func (m *Model) Score(phi []float32, alpha float64) ([]Reward, error) {
	if !m.h.acquire() {
		return nil, ErrClosed
	}
	defer m.h.release()
	rows, d1, err := m.rows("phi", phi)
	if err != nil {
		return nil, err
	}
	out := make([]C.hetreward_reward, rows)
	var outp *C.hetreward_reward
	if rows > 0 {
		outp = &out[0]
	}
	err = call(func() C.hetreward_status {
		return C.hetreward_model_score(m.p, f32ptr(phi), C.size_t(rows), C.size_t(d1), C.double(alpha), outp)
	})
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	res := make([]Reward, rows)
	for i := range out {
		res[i] = toReward(&out[i])
	}
	return res, nil
}

// Compare compares pairs of answers: row i of phi0 (answer a0) with row i of phi1 (answer
// a1), D = r(a0) - r(a1), with its SE under method, (1 - alpha) CI, p-value and verdict.
func (m *Model) Compare(phi0, phi1 []float32, alpha float64, method DiffMethod) ([]Comparison, error) {
	if !m.h.acquire() {
		return nil, ErrClosed
	}
	defer m.h.release()
	rows, d1, err := m.rows("phi0", phi0)
	if err != nil {
		return nil, err
	}
	if len(phi1) != len(phi0) {
		return nil, dimErr("phi1 has %d values, phi0 has %d", len(phi1), len(phi0))
	}
	out := make([]C.hetreward_comparison, rows)
	var outp *C.hetreward_comparison
	if rows > 0 {
		outp = &out[0]
	}
	err = call(func() C.hetreward_status {
		return C.hetreward_model_compare(m.p, f32ptr(phi0), f32ptr(phi1), C.size_t(rows), C.size_t(d1),
			C.double(alpha), C.hetreward_diff_method(method), outp)
	})
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	res := make([]Comparison, rows)
	for i := range out {
		c := &out[i]
		res[i] = Comparison{Diff: float64(c.diff), SE: float64(c.se), Lower: float64(c.lower),
			Upper: float64(c.upper), PValue: float64(c.p_value), Verdict: Verdict(c.verdict)}
	}
	return res, nil
}

// Select picks the best of the candidate answers to one prompt (phi: one row of d1 values
// per candidate) under policy, with optional per-candidate penalties (nil = none). It
// returns the 0-based index of the chosen candidate and every candidate's figures. Ties go
// to the lowest index. Errors: StatusDimensionMismatch (no candidates), StatusNonFinite,
// StatusInvalidArgument (alpha, policy).
func (m *Model) Select(phi []float32, penalty []float64, alpha float64, policy Policy) (int, []Candidate, error) {
	if !m.h.acquire() {
		return 0, nil, ErrClosed
	}
	defer m.h.release()
	rows, d1, err := m.rows("phi", phi)
	if err != nil {
		return 0, nil, err
	}
	if penalty != nil && len(penalty) != rows {
		return 0, nil, dimErr("penalty has %d values for %d candidates", len(penalty), rows)
	}
	out := make([]C.hetreward_candidate, rows)
	var outp *C.hetreward_candidate
	if rows > 0 {
		outp = &out[0]
	}
	var index C.size_t
	err = call(func() C.hetreward_status {
		return C.hetreward_model_select(m.p, f32ptr(phi), C.size_t(rows), C.size_t(d1), f64ptr(penalty),
			C.double(alpha), C.hetreward_policy(policy), &index, outp)
	})
	runtime.KeepAlive(m)
	if err != nil {
		return 0, nil, err
	}
	res := make([]Candidate, rows)
	for i := range out {
		c := &out[i]
		res[i] = Candidate{Reward: toReward(&c.reward), Penalty: float64(c.penalty), Score: float64(c.score)}
	}
	return int(index), res, nil
}

// Rationality returns sigma_hat = psi0 + gamma_hat . psi of an annotator profile and its
// standard error (psi has d2 values).
func (m *Model) Rationality(psi0 float64, psi []float64) (sigma, se float64, err error) {
	if !m.h.acquire() {
		return 0, 0, ErrClosed
	}
	defer m.h.release()
	var s, e C.double
	err = call(func() C.hetreward_status {
		return C.hetreward_model_rationality(m.p, C.double(psi0), f64ptr(psi), C.size_t(len(psi)), &s, &e)
	})
	runtime.KeepAlive(m)
	if err != nil {
		return 0, 0, err
	}
	return float64(s), float64(e), nil
}

// RationalityInterval returns sigma_hat = psi0 + gamma_hat . psi with its standard error and
// (1 - alpha) interval under the model's interval method (Reward holds sigma; for a bootstrap
// model the percentile interval of the refits' rationalities, not sigma +- q se).
func (m *Model) RationalityInterval(psi0 float64, psi []float64, alpha float64) (Reward, error) {
	if !m.h.acquire() {
		return Reward{}, ErrClosed
	}
	defer m.h.release()
	var r C.hetreward_reward
	err := call(func() C.hetreward_status {
		return C.hetreward_model_rationality_interval(m.p, C.double(psi0), f64ptr(psi), C.size_t(len(psi)), C.double(alpha), &r)
	})
	runtime.KeepAlive(m)
	if err != nil {
		return Reward{}, err
	}
	return toReward(&r), nil
}

// Save writes the model file (atomically: a temporary file is renamed over path).
func (m *Model) Save(path string) error {
	if !m.h.acquire() {
		return ErrClosed
	}
	defer m.h.release()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	err := call(func() C.hetreward_status { return C.hetreward_model_save(m.p, cpath) })
	runtime.KeepAlive(m)
	return err
}

// MarshalBinary serialises the model in the model file format (hetreward_model_save_buffer).
func (m *Model) MarshalBinary() ([]byte, error) {
	if !m.h.acquire() {
		return nil, ErrClosed
	}
	defer m.h.release()
	var size C.size_t
	err := call(func() C.hetreward_status { return C.hetreward_model_save_buffer(m.p, nil, 0, &size) })
	if err != nil {
		runtime.KeepAlive(m)
		return nil, err
	}
	buf := make([]byte, int(size))
	var written C.size_t
	err = call(func() C.hetreward_status {
		return C.hetreward_model_save_buffer(m.p, (*C.uint8_t)(unsafe.Pointer(&buf[0])), size, &written)
	})
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	return buf[:int(written)], nil
}

// LoadModel reads a model file written by Model.Save or `hetreward fit --out`. Errors:
// StatusIO, StatusBadFormat (not a model, wrong version, truncated, checksum mismatch).
func LoadModel(path string) (*Model, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var out *C.hetreward_model
	if err := call(func() C.hetreward_status { return C.hetreward_model_load(cpath, &out) }); err != nil {
		return nil, err
	}
	return newModel(out), nil
}

// LoadModelBuffer reads a model from the bytes of MarshalBinary (or of a model file); buf is
// only read during the call. Errors: StatusBadFormat.
func LoadModelBuffer(buf []byte) (*Model, error) {
	var p *C.uint8_t
	if len(buf) > 0 {
		p = (*C.uint8_t)(unsafe.Pointer(&buf[0]))
	}
	var out *C.hetreward_model
	err := call(func() C.hetreward_status { return C.hetreward_model_load_buffer(p, C.size_t(len(buf)), &out) })
	if err != nil {
		return nil, err
	}
	return newModel(out), nil
}
