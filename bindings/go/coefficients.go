package hetreward

/*
#include <hetreward.h>
*/
import "C"

import "runtime"

// Coefficients selects the rows of Model.Coefficients (hetreward_coefficients).
type Coefficients uint32

const (
	// CoefficientsTheta selects the d1 reward coefficients theta_j.
	CoefficientsTheta Coefficients = C.HETREWARD_COEFFICIENTS_THETA
	// CoefficientsGamma selects the d2 rationality coefficients gamma_k.
	CoefficientsGamma Coefficients = C.HETREWARD_COEFFICIENTS_GAMMA
	// CoefficientsAll selects all d1 + d2 rows, theta first.
	CoefficientsAll Coefficients = C.HETREWARD_COEFFICIENTS_ALL
)

// String gives the library's name of the code, as the CLI spells it (hetreward_option_name),
// or "Coefficients(N)" for a code the library does not know.
func (c Coefficients) String() string {
	return optionName(C.HETREWARD_OPTION_COEFFICIENTS, uint32(c), "Coefficients")
}

// Coefficient is one row of the library's coefficient table (hetreward_coefficient): the
// estimate, SE, z, p-value and (1 - alpha) CI of one coefficient under the model's interval
// method.
type Coefficient struct {
	Block    Coefficients // CoefficientsTheta or CoefficientsGamma
	Index    int          // 0-based index in that vector
	Estimate float64      // on the reported scale (de-inflated / bias-corrected by resized)
	SE       float64      // Wald SE, or the bootstrap refits' SD
	Z        float64      // Estimate / SE
	PValue   float64      // two-sided p-value of "coefficient = 0" under the method
	Lower    float64
	Upper    float64
}

// Coefficients returns the coefficient table at level alpha under the model's interval
// method (Intervals; the paper's Wald table of any model is that of Wald()'s copy). which
// selects the rows. Errors: StatusInvalidArgument (alpha, which).
func (m *Model) Coefficients(alpha float64, which Coefficients) ([]Coefficient, error) {
	if !m.h.acquire() {
		return nil, ErrClosed
	}
	defer m.h.release()
	var count C.size_t
	err := call(func() C.hetreward_status {
		return C.hetreward_model_coefficients(m.p, C.hetreward_coefficients(which), C.double(alpha), nil, 0, &count)
	})
	if err != nil {
		runtime.KeepAlive(m)
		return nil, err
	}
	out := make([]C.hetreward_coefficient, int(count)+1) // never empty: &out[0] is valid
	err = call(func() C.hetreward_status {
		return C.hetreward_model_coefficients(m.p, C.hetreward_coefficients(which), C.double(alpha),
			&out[0], C.size_t(len(out)), &count)
	})
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	res := make([]Coefficient, int(count))
	for i := range res {
		c := &out[i]
		res[i] = Coefficient{Block: Coefficients(c.block), Index: int(c.index),
			Estimate: float64(c.estimate), SE: float64(c.se), Z: float64(c.z),
			PValue: float64(c.p_value), Lower: float64(c.lower), Upper: float64(c.upper)}
	}
	return res, nil
}

// Unbounded is a coefficient whose interval is unbounded (hetreward_unbounded): one annotator
// carries it alone (its covariate is zero in every other annotator's rows), so the data without
// that annotator cannot estimate it.
type Unbounded struct {
	Block     Coefficients // CoefficientsTheta or CoefficientsGamma
	Index     int          // 0-based index in that vector
	Annotator int64        // the id of the annotator that carries it, as the data gave it
}

// Unbounded returns the coefficients whose intervals are unbounded, each with the annotator
// that carries it alone, theta before gamma. Empty but for a cluster interval method on such
// data; those coefficients' rows of Coefficients have an infinite SE and bounds.
func (m *Model) Unbounded() ([]Unbounded, error) {
	if !m.h.acquire() {
		return nil, ErrClosed
	}
	defer m.h.release()
	var count C.size_t
	err := call(func() C.hetreward_status {
		return C.hetreward_model_unbounded(m.p, nil, 0, &count)
	})
	if err != nil {
		runtime.KeepAlive(m)
		return nil, err
	}
	out := make([]C.hetreward_unbounded, int(count)+1) // never empty: &out[0] is valid
	err = call(func() C.hetreward_status {
		return C.hetreward_model_unbounded(m.p, &out[0], C.size_t(len(out)), &count)
	})
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	res := make([]Unbounded, int(count))
	for i := range res {
		u := &out[i]
		res[i] = Unbounded{Block: Coefficients(u.block), Index: int(u.index),
			Annotator: int64(u.annotator)}
	}
	return res, nil
}
