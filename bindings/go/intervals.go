package hetreward

/*
#include <hetreward.h>
#include <stdlib.h>
*/
import "C"

import "runtime"

// Intervals is how a model's confidence intervals are computed (hetreward_intervals).
type Intervals uint32

const (
	// IntervalsWald are the paper's Wald intervals (the default).
	IntervalsWald Intervals = C.HETREWARD_INTERVALS_WALD
	// IntervalsBootstrap is the parametric bootstrap, percentile intervals (small samples).
	IntervalsBootstrap Intervals = C.HETREWARD_INTERVALS_BOOTSTRAP
	// IntervalsResized is the adaptively resized parametric bootstrap (high dimension).
	IntervalsResized Intervals = C.HETREWARD_INTERVALS_RESIZED
	// IntervalsAuto picks at fit time (the one-step cluster jackknife when the dataset has
	// cluster ids); the model says which.
	IntervalsAuto Intervals = C.HETREWARD_INTERVALS_AUTO
	// IntervalsClusterJackknife refits leaving out each cluster (annotator), t(G-1) quantiles.
	IntervalsClusterJackknife Intervals = C.HETREWARD_INTERVALS_CLUSTER_JACKKNIFE
	// IntervalsClusterOneStep is the cluster jackknife by one Newton step per cluster.
	IntervalsClusterOneStep Intervals = C.HETREWARD_INTERVALS_CLUSTER_ONESTEP
)

// String gives the library's name of the code, as the CLI spells it (hetreward_option_name),
// or "Intervals(N)" for a code the library does not know.
func (i Intervals) String() string {
	return optionName(C.HETREWARD_OPTION_INTERVALS, uint32(i), "Intervals")
}

// IntervalInfo is a model's interval method, its figures and the fit's interval diagnostics
// (hetreward_interval_info), plus the warning in plain words ("" when there is none).
type IntervalInfo struct {
	Method        Intervals // the method the intervals use (never IntervalsAuto)
	Requested     Intervals // the method asked for (IntervalsAuto when auto picked Method)
	Reps          int       // bootstrap refits B (0 for Wald)
	Diverged      int       // refits that did not converge
	Seed          uint64    // seed of the label draws
	Shrink        float64   // resized bootstrap's shrink s (1 otherwise)
	AlphaHat      float64   // resized bootstrap's inflation estimate (1 otherwise)
	CHat          float64   // SD* / (alpha_hat SE_wald) averaged over training rows
	D1OverN       float64   // d1 / n
	MLEFinite     bool      // the fit reached a finite optimum
	MaxAbsGamma   float64   // max |gamma_hat_k|
	DivergedShare float64   // share of refits that did not converge
	Warning       string    // why the intervals may under-cover, if they may
}

// Intervals returns the model's interval method, figures and diagnostics.
func (m *Model) Intervals() (IntervalInfo, error) {
	if !m.h.acquire() {
		return IntervalInfo{}, ErrClosed
	}
	defer m.h.release()
	var i C.hetreward_interval_info
	var n C.size_t
	err := call(func() C.hetreward_status { return C.hetreward_model_intervals(m.p, &i) })
	if err == nil {
		err = call(func() C.hetreward_status {
			return C.hetreward_model_interval_warning(m.p, nil, 0, &n)
		})
	}
	warning := ""
	if err == nil && n > 0 {
		buf := C.malloc(n + 1)
		defer C.free(buf)
		err = call(func() C.hetreward_status {
			return C.hetreward_model_interval_warning(m.p, (*C.char)(buf), n+1, &n)
		})
		warning = C.GoStringN((*C.char)(buf), C.int(n))
	}
	runtime.KeepAlive(m)
	if err != nil {
		return IntervalInfo{}, err
	}
	return IntervalInfo{
		Method:        Intervals(i.method),
		Requested:     Intervals(i.requested),
		Reps:          int(i.reps),
		Diverged:      int(i.diverged),
		Seed:          uint64(i.seed),
		Shrink:        float64(i.shrink),
		AlphaHat:      float64(i.alpha_hat),
		CHat:          float64(i.c_hat),
		D1OverN:       float64(i.d1_over_n),
		MLEFinite:     bool(i.mle_finite),
		MaxAbsGamma:   float64(i.max_abs_gamma),
		DivergedShare: float64(i.diverged_share),
		Warning:       warning,
	}, nil
}

// Wald returns a copy of the model with the paper's Wald intervals, whatever method it
// carries (close it like any model).
func (m *Model) Wald() (*Model, error) {
	if !m.h.acquire() {
		return nil, ErrClosed
	}
	defer m.h.release()
	var out *C.hetreward_model
	err := call(func() C.hetreward_status { return C.hetreward_model_wald(m.p, &out) })
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	return newModel(out), nil
}
