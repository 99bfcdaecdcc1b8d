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

// Leverage is the annotators' leverage diagnostics of a model's estimate on a dataset with
// cluster (annotator) ids (hetreward_model_leverage), after MacKinnon, Nielsen & Webb's
// summclust: per annotator its leverage tr(I_g I^-1) and, per coefficient, its partial
// leverage (its share of the coefficient's information); per coefficient the effective
// number of annotators 1 / sum_g P_gj^2.
type Leverage struct {
	// ClusterIDs holds the annotators' ids, increasing: the order of Leverages and Partial.
	ClusterIDs []int64
	// Leverages holds each annotator's leverage (they sum to d1 + d2).
	Leverages []float64
	// Partial holds G x (d1 + d2) partial leverages, row-major (one row per annotator,
	// theta first then gamma); each coefficient's column sums to 1.
	Partial []float64
	// Effective holds each coefficient's effective number of annotators.
	Effective []float64
	// MaxLeverage is the largest leverage, of annotator MaxLeverageCluster.
	MaxLeverage        float64
	MaxLeverageCluster int64
	// MinEffective is the smallest effective number, of coefficient MinEffectiveCoefficient
	// (0..d1 is theta, d1.. is gamma).
	MinEffective            float64
	MinEffectiveCoefficient int
	// MaxPartial is the largest partial leverage, of annotator MaxPartialCluster for
	// coefficient MaxPartialCoefficient.
	MaxPartial            float64
	MaxPartialCluster     int64
	MaxPartialCoefficient int
	// Warning is set when a coefficient rests on few annotators: its effective number is
	// below 10 or one annotator's partial leverage is above 0.5.
	Warning bool
}

// Leverage computes the leverage diagnostics of the model's estimate on ds, which must have
// cluster ids and the model's d1 and d2 (two calls: the summary, which gives the number of
// annotators, then the per-annotator values). Errors: StatusInvalidArgument (no cluster ids,
// fewer than 3 clusters), StatusDimensionMismatch, StatusSingularInformation. Safe to call
// from several goroutines.
func (m *Model) Leverage(ds *Dataset) (Leverage, error) {
	if !m.h.acquire() {
		return Leverage{}, ErrClosed
	}
	defer m.h.release()
	if !ds.h.acquire() {
		return Leverage{}, ErrClosed
	}
	defer ds.h.release()
	p := int(C.hetreward_model_d1(m.p)) + int(C.hetreward_model_d2(m.p))
	eff := make([]float64, p)
	var info C.hetreward_leverage_info
	info.struct_size = C.size_t(C.sizeof_hetreward_leverage_info)
	err := call(func() C.hetreward_status {
		return C.hetreward_model_leverage(m.p, ds.p, C.size_t(p), f64ptr(eff), 0, nil, nil,
			nil, &info)
	})
	if err != nil {
		return Leverage{}, err
	}
	g := int(info.clusters)
	ids := make([]int64, g)
	lev := make([]float64, g)
	part := make([]float64, g*p)
	err = call(func() C.hetreward_status {
		return C.hetreward_model_leverage(m.p, ds.p, C.size_t(p), f64ptr(eff), C.size_t(g),
			i64ptr(ids), f64ptr(lev), f64ptr(part), &info)
	})
	runtime.KeepAlive(m)
	runtime.KeepAlive(ds)
	if err != nil {
		return Leverage{}, err
	}
	return Leverage{
		ClusterIDs:              ids,
		Leverages:               lev,
		Partial:                 part,
		Effective:               eff,
		MaxLeverage:             float64(info.max_leverage),
		MaxLeverageCluster:      int64(info.max_leverage_cluster),
		MinEffective:            float64(info.min_effective),
		MinEffectiveCoefficient: int(info.min_effective_coefficient),
		MaxPartial:              float64(info.max_partial),
		MaxPartialCluster:       int64(info.max_partial_cluster),
		MaxPartialCoefficient:   int(info.max_partial_coefficient),
		Warning:                 bool(info.warning),
	}, nil
}
