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

// Dataset is a validated training set: n comparisons with reward features z (n x d1),
// psi0 (n), annotator covariates psi (n x d2), labels y (n) and optional cluster ids (n).
//
// The library copies the arrays, so they may be reused after the constructor returns. A
// Dataset is immutable: any number of goroutines may fit with it at once. Close frees it (a
// finalizer does so too, but at an unpredictable time); models fitted from it stay valid.
type Dataset struct {
	p *C.hetreward_dataset // never changes; valid while a use of h is held
	h handle
}

func newDataset(p *C.hetreward_dataset) *Dataset {
	d := &Dataset{p: p}
	d.h.free = func() { C.hetreward_dataset_free(p) }
	runtime.SetFinalizer(d, (*Dataset).Close)
	return d
}

// Close frees the dataset. It is idempotent; later method calls return ErrClosed or zero.
// It is safe while other goroutines use the dataset (a Fit in progress keeps it until it
// returns; the last user frees it).
func (d *Dataset) Close() {
	d.h.close()
	runtime.SetFinalizer(d, nil)
}

// N is the number of samples (0 after Close).
func (d *Dataset) N() int {
	if !d.h.acquire() {
		return 0
	}
	defer d.h.release()
	n := int(C.hetreward_dataset_n(d.p))
	return n
}

// D1 is the reward-feature dimension (0 after Close).
func (d *Dataset) D1() int {
	if !d.h.acquire() {
		return 0
	}
	defer d.h.release()
	v := int(C.hetreward_dataset_d1(d.p))
	return v
}

// D2 is the annotator-covariate dimension, possibly 0 (0 after Close).
func (d *Dataset) D2() int {
	if !d.h.acquire() {
		return 0
	}
	defer d.h.release()
	v := int(C.hetreward_dataset_d2(d.p))
	return v
}

// checkLens verifies the flat slices against n = len(y), d1, d2 before C reads them.
func checkLens(d1, d2 int, names [2]string, a, b, psi0, psi, y int, cluster []int64) error {
	n := y
	if d1 < 0 || d2 < 0 {
		return &Error{Status: StatusInvalidArgument, Message: "d1 and d2 must not be negative"}
	}
	if a != n*d1 {
		return dimErr("%s has %d values, want n*d1 = %d*%d (n = len(y))", names[0], a, n, d1)
	}
	if names[1] != "" && b != n*d1 {
		return dimErr("%s has %d values, want n*d1 = %d*%d (n = len(y))", names[1], b, n, d1)
	}
	if psi0 != n {
		return dimErr("psi0 has %d values, want n = len(y) = %d", psi0, n)
	}
	if psi != n*d2 {
		return dimErr("psi has %d values, want n*d2 = %d*%d", psi, n, d2)
	}
	if cluster != nil && len(cluster) != n {
		return dimErr("cluster has %d values, want n = len(y) = %d (or nil)", len(cluster), n)
	}
	return nil
}

// NewDataset builds a dataset from flat row-major float64 slices: n = len(y) samples,
// z n x d1 (row i = phi(a1_i) - phi(a0_i)), psi0 n, psi n x d2 (nil when d2 = 0), y n labels
// 0 or 1 (1 = the annotator preferred a1), cluster nil or n annotator ids (for
// CovarianceCluster). The library validates and copies them (hetreward_dataset_new).
func NewDataset(d1, d2 int, z, psi0, psi, y []float64, cluster []int64) (*Dataset, error) {
	if err := checkLens(d1, d2, [2]string{"z", ""}, len(z), 0, len(psi0), len(psi), len(y), cluster); err != nil {
		return nil, err
	}
	var out *C.hetreward_dataset
	err := call(func() C.hetreward_status {
		return C.hetreward_dataset_new(C.size_t(len(y)), C.size_t(d1), C.size_t(d2), f64ptr(z),
			f64ptr(psi0), f64ptr(psi), f64ptr(y), i64ptr(cluster), &out)
	})
	if err != nil {
		return nil, err
	}
	return newDataset(out), nil
}

// NewDatasetF32 is NewDataset with float32 slices (widened to float64 exactly).
func NewDatasetF32(d1, d2 int, z, psi0, psi, y []float32, cluster []int64) (*Dataset, error) {
	if err := checkLens(d1, d2, [2]string{"z", ""}, len(z), 0, len(psi0), len(psi), len(y), cluster); err != nil {
		return nil, err
	}
	var out *C.hetreward_dataset
	err := call(func() C.hetreward_status {
		return C.hetreward_dataset_new_f32(C.size_t(len(y)), C.size_t(d1), C.size_t(d2), f32ptr(z),
			f32ptr(psi0), f32ptr(psi), f32ptr(y), i64ptr(cluster), &out)
	})
	if err != nil {
		return nil, err
	}
	return newDataset(out), nil
}

// DatasetFromPairs builds a dataset from the two answers' features instead of their
// difference: phi0 and phi1 are n x d1, z = phi1 - phi0 row by row. Other arguments as
// NewDataset (hetreward_dataset_from_pairs).
func DatasetFromPairs(d1, d2 int, phi0, phi1, psi0, psi, y []float64, cluster []int64) (*Dataset, error) {
	if err := checkLens(d1, d2, [2]string{"phi0", "phi1"}, len(phi0), len(phi1), len(psi0), len(psi), len(y), cluster); err != nil {
		return nil, err
	}
	var out *C.hetreward_dataset
	err := call(func() C.hetreward_status {
		return C.hetreward_dataset_from_pairs(C.size_t(len(y)), C.size_t(d1), C.size_t(d2),
			f64ptr(phi0), f64ptr(phi1), f64ptr(psi0), f64ptr(psi), f64ptr(y), i64ptr(cluster), &out)
	})
	if err != nil {
		return nil, err
	}
	return newDataset(out), nil
}

// DatasetFromPairsF32 is DatasetFromPairs with float32 slices (hetreward_dataset_from_pairs_f32).
func DatasetFromPairsF32(d1, d2 int, phi0, phi1, psi0, psi, y []float32, cluster []int64) (*Dataset, error) {
	if err := checkLens(d1, d2, [2]string{"phi0", "phi1"}, len(phi0), len(phi1), len(psi0), len(psi), len(y), cluster); err != nil {
		return nil, err
	}
	var out *C.hetreward_dataset
	err := call(func() C.hetreward_status {
		return C.hetreward_dataset_from_pairs_f32(C.size_t(len(y)), C.size_t(d1), C.size_t(d2),
			f32ptr(phi0), f32ptr(phi1), f32ptr(psi0), f32ptr(psi), f32ptr(y), i64ptr(cluster), &out)
	})
	if err != nil {
		return nil, err
	}
	return newDataset(out), nil
}

// LoadDataset reads a training set from a .csv or .safetensors file (docs/contract.md §6;
// hetreward_dataset_load). Errors: StatusIO, StatusBadFormat, StatusInvalidArgument.
func LoadDataset(path string) (*Dataset, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var out *C.hetreward_dataset
	if err := call(func() C.hetreward_status { return C.hetreward_dataset_load(cpath, &out) }); err != nil {
		return nil, err
	}
	return newDataset(out), nil
}
