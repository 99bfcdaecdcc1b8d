package hetreward

/*
#include <hetreward.h>
*/
import "C"

import "runtime"

// Heterogeneity is the annotator-heterogeneity diagnostic of a model's estimate on a dataset
// with cluster (annotator) ids (hetreward_model_heterogeneity): per coefficient, theta first
// then gamma, the design effect (cluster-robust variance over the expected-information
// variance: near 1 when comparisons are independent given the covariates) and the effective
// number of clusters k (the design effect's noise SD is about sqrt(2 / k)).
type Heterogeneity struct {
	// DesignEffects holds d1 + d2 values, theta first.
	DesignEffects []float64
	// EffectiveClusters holds each coefficient's k, at most Clusters - 1.
	EffectiveClusters []float64
	// Clusters is the number of clusters G in the dataset.
	Clusters int
	// Worst indexes the coefficient with the largest standardised excess
	// (design effect - 1) / sqrt(2 / k): 0..d1 is theta, d1.. is gamma.
	Worst int
	// WorstDesignEffect and ExcessZ are that coefficient's design effect and excess.
	WorstDesignEffect float64
	ExcessZ           float64
	// IndependentCoverage approximates the coverage of a 95% interval that assumes
	// independent comparisons for that coefficient: 2 Phi(1.96 / sqrt(design effect)) - 1.
	IndependentCoverage float64
	// Warning is set when intervals that assume independence (Wald, bootstrap, resized)
	// would under-cover.
	Warning bool
}

// Heterogeneity computes the diagnostic of the model's estimate on ds, which must have
// cluster ids (e.g. the data the model was fitted on) and the model's d1 and d2. Errors:
// StatusInvalidArgument (no cluster ids, fewer than 2 clusters), StatusDimensionMismatch,
// StatusSingularInformation. Safe to call from several goroutines.
func (m *Model) Heterogeneity(ds *Dataset) (Heterogeneity, error) {
	if !m.h.acquire() {
		return Heterogeneity{}, ErrClosed
	}
	defer m.h.release()
	if !ds.h.acquire() {
		return Heterogeneity{}, ErrClosed
	}
	defer ds.h.release()
	// The dimensions under this use (D1 and D2 would take a new one, refused after a Close).
	p := int(C.hetreward_model_d1(m.p)) + int(C.hetreward_model_d2(m.p))
	de := make([]float64, p+1) // never empty: &de[0] is valid
	k := make([]float64, p+1)
	var info C.hetreward_heterogeneity
	err := call(func() C.hetreward_status {
		return C.hetreward_model_heterogeneity(m.p, ds.p, C.size_t(p),
			(*C.double)(&de[0]), (*C.double)(&k[0]), &info)
	})
	runtime.KeepAlive(m)
	runtime.KeepAlive(ds)
	if err != nil {
		return Heterogeneity{}, err
	}
	return Heterogeneity{
		DesignEffects:       de[:p],
		EffectiveClusters:   k[:p],
		Clusters:            int(info.clusters),
		Worst:               int(info.worst),
		WorstDesignEffect:   float64(info.worst_design_effect),
		ExcessZ:             float64(info.worst_excess_z),
		IndependentCoverage: float64(info.independent_coverage),
		Warning:             bool(info.warning),
	}, nil
}
