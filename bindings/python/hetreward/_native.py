"""The C library, loaded with ctypes, and a prototype for every function of include/hetreward.h.

Nothing here computes anything: it finds libhetreward, declares the C structs and signatures
(``PROTOTYPES``, checked against the header by ``tests/test_prototypes.py``), and reads the
thread's last error message.

Where the library is looked for, in order:

1. the ``HETREWARD_LIB`` environment variable: the path of ``libhetreward.so`` (or of a folder
   holding it);
2. inside this package: ``_libhetreward.*.so``, the library the wheel bundles (built from the
   Rust sources by ``pip install ./bindings/python`` / ``pip wheel``, see setup.py);
3. the system's loader: ``LD_LIBRARY_PATH``, the ``ldconfig`` cache (e.g. after
   ``scripts/install.sh --prefix /usr/local && ldconfig``), ``ctypes.util.find_library``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_bool,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)

#: The (major, minor) of the C API this package was written for. While major is 0, a minor
#: change may break the ABI, so both must match the loaded library.
ABI_VERSION = (0, 2)

# Typedefs of the header (all uint32_t).
hetreward_status = c_uint32
hetreward_solver = c_uint32
hetreward_covariance = c_uint32
hetreward_init = c_uint32
hetreward_termination = c_uint32
hetreward_diff_method = c_uint32
hetreward_verdict = c_uint32
hetreward_policy = c_uint32
hetreward_intervals = c_uint32
hetreward_shard_sections = c_uint32
hetreward_option_family = c_uint32

# The option families of hetreward_option_name() (HETREWARD_OPTION_* of the header; checked
# against it by tests/test_options.py).
HETREWARD_OPTION_SOLVER = 0
HETREWARD_OPTION_INIT = 1
HETREWARD_OPTION_COVARIANCE = 2
HETREWARD_OPTION_INTERVALS = 3
HETREWARD_OPTION_TERMINATION = 4
HETREWARD_OPTION_DIFF = 5
HETREWARD_OPTION_VERDICT = 6
HETREWARD_OPTION_POLICY = 7
HETREWARD_OPTION_COEFFICIENTS = 8
HETREWARD_OPTION_SHARD = 9


class hetreward_dataset(Structure):
    """Opaque."""


class hetreward_fitter(Structure):
    """Opaque."""


class hetreward_model(Structure):
    """Opaque."""


class hetreward_shard_stats(Structure):
    """Opaque."""


class hetreward_progress(Structure):
    _fields_ = [
        ("start", c_size_t),
        ("iteration", c_size_t),
        ("max_iter", c_size_t),
        ("neg_loglik", c_double),
        ("grad_norm", c_double),
    ]


hetreward_progress_callback = CFUNCTYPE(c_int, POINTER(hetreward_progress), c_void_p)


class hetreward_fit_params(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("solver", hetreward_solver),
        ("covariance", hetreward_covariance),
        ("eta1", c_double),
        ("eta2", c_double),
        ("max_iter", c_uint64),
        ("tol", c_double),
        ("seed", c_uint64),
        ("init", hetreward_init),
        ("restarts", c_uint32),
        ("theta0", POINTER(c_double)),
        ("theta0_len", c_size_t),
        ("gamma0", POINTER(c_double)),
        ("gamma0_len", c_size_t),
        ("threads", c_uint32),
        ("require_converged", c_bool),
        ("progress", hetreward_progress_callback),
        ("progress_user_data", c_void_p),
        ("intervals", hetreward_intervals),
        ("bootstrap_reps", c_uint32),
    ]


class hetreward_interval_info(Structure):
    _fields_ = [
        ("method", hetreward_intervals),
        ("requested", hetreward_intervals),
        ("reps", c_size_t),
        ("diverged", c_size_t),
        ("seed", c_uint64),
        ("shrink", c_double),
        ("alpha_hat", c_double),
        ("c_hat", c_double),
        ("d1_over_n", c_double),
        ("mle_finite", c_bool),
        ("max_abs_gamma", c_double),
        ("diverged_share", c_double),
        ("has_warning", c_bool),
    ]


class hetreward_heterogeneity(Structure):
    _fields_ = [
        ("clusters", c_size_t),
        ("worst", c_size_t),
        ("worst_design_effect", c_double),
        ("worst_excess_z", c_double),
        ("independent_coverage", c_double),
        ("warning", c_bool),
    ]


class hetreward_leverage_info(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("clusters", c_size_t),
        ("max_leverage", c_double),
        ("max_leverage_cluster", c_int64),
        ("min_effective", c_double),
        ("min_effective_coefficient", c_size_t),
        ("max_partial", c_double),
        ("max_partial_cluster", c_int64),
        ("max_partial_coefficient", c_size_t),
        ("warning", c_bool),
    ]


class hetreward_fit_report(Structure):
    _fields_ = [
        ("solver", hetreward_solver),
        ("covariance", hetreward_covariance),
        ("termination", hetreward_termination),
        ("converged", c_bool),
        ("iterations", c_size_t),
        ("total_iterations", c_size_t),
        ("starts", c_size_t),
        ("grad_norm", c_double),
        ("neg_loglik", c_double),
        ("seconds", c_double),
        ("tol", c_double),
    ]


class hetreward_reward(Structure):
    _fields_ = [("reward", c_double), ("se", c_double), ("lower", c_double), ("upper", c_double)]


class hetreward_comparison(Structure):
    _fields_ = [
        ("diff", c_double),
        ("se", c_double),
        ("lower", c_double),
        ("upper", c_double),
        ("p_value", c_double),
        ("verdict", hetreward_verdict),
    ]


class hetreward_candidate(Structure):
    _fields_ = [("reward", hetreward_reward), ("penalty", c_double), ("score", c_double)]


hetreward_coefficients = c_uint32


class hetreward_coefficient(Structure):
    _fields_ = [
        ("block", hetreward_coefficients),
        ("index", c_size_t),
        ("estimate", c_double),
        ("se", c_double),
        ("z", c_double),
        ("p_value", c_double),
        ("lower", c_double),
        ("upper", c_double),
    ]


class hetreward_unbounded(Structure):
    _fields_ = [("block", hetreward_coefficients), ("index", c_size_t), ("annotator", c_int64)]


class hetreward_shard_summary(Structure):
    _fields_ = [("n", c_uint64), ("d1", c_uint64), ("d2", c_uint64), ("clustered", c_bool),
                ("schema", c_uint32)]


class hetreward_distributed_rounds(Structure):
    _fields_ = [("total", c_uint64), ("points", c_uint64), ("products", c_uint64),
                ("preconditioner", c_uint64), ("covariance", c_uint64)]


#: int (*)(const uint8_t *request, size_t request_len, hetreward_shard_stats **out_answer,
#: void *user_data)
hetreward_shard_oracle = CFUNCTYPE(
    c_int, POINTER(c_uint8), c_size_t, POINTER(POINTER(hetreward_shard_stats)), c_void_p
)

_P = POINTER
#: name -> (restype, argtypes), in the header's order. Pointers to const and to mutable data
#: are both POINTER(T) here (ctypes has no const).
PROTOTYPES = {
    "hetreward_last_error_message": (c_char_p, []),
    "hetreward_status_name": (c_char_p, [c_uint32]),
    "hetreward_version": (c_char_p, []),
    "hetreward_option_name": (c_char_p, [hetreward_option_family, c_uint32]),
    "hetreward_option_at": (c_char_p, [hetreward_option_family, c_size_t, _P(c_uint32)]),
    "hetreward_dataset_new": (
        hetreward_status,
        [c_size_t, c_size_t, c_size_t, _P(c_double), _P(c_double), _P(c_double), _P(c_double),
         _P(c_int64), _P(_P(hetreward_dataset))],
    ),
    "hetreward_dataset_new_f32": (
        hetreward_status,
        [c_size_t, c_size_t, c_size_t, _P(c_float), _P(c_float), _P(c_float), _P(c_float),
         _P(c_int64), _P(_P(hetreward_dataset))],
    ),
    "hetreward_dataset_from_pairs": (
        hetreward_status,
        [c_size_t, c_size_t, c_size_t, _P(c_double), _P(c_double), _P(c_double), _P(c_double),
         _P(c_double), _P(c_int64), _P(_P(hetreward_dataset))],
    ),
    "hetreward_dataset_from_pairs_f32": (
        hetreward_status,
        [c_size_t, c_size_t, c_size_t, _P(c_float), _P(c_float), _P(c_float), _P(c_float),
         _P(c_float), _P(c_int64), _P(_P(hetreward_dataset))],
    ),
    "hetreward_dataset_load": (hetreward_status, [c_char_p, _P(_P(hetreward_dataset))]),
    "hetreward_dataset_new_shard": (
        hetreward_status,
        [c_size_t, c_size_t, c_size_t, _P(c_double), _P(c_double), _P(c_double), _P(c_double),
         _P(c_int64), _P(_P(hetreward_dataset))],
    ),
    "hetreward_dataset_new_shard_f32": (
        hetreward_status,
        [c_size_t, c_size_t, c_size_t, _P(c_float), _P(c_float), _P(c_float), _P(c_float),
         _P(c_int64), _P(_P(hetreward_dataset))],
    ),
    "hetreward_dataset_load_shard": (hetreward_status, [c_char_p, _P(_P(hetreward_dataset))]),
    "hetreward_dataset_n": (c_size_t, [_P(hetreward_dataset)]),
    "hetreward_dataset_d1": (c_size_t, [_P(hetreward_dataset)]),
    "hetreward_dataset_d2": (c_size_t, [_P(hetreward_dataset)]),
    "hetreward_dataset_free": (None, [_P(hetreward_dataset)]),
    "hetreward_fit_default_params": (hetreward_fit_params, []),
    "hetreward_fitter_new": (hetreward_status, [_P(hetreward_fit_params), _P(_P(hetreward_fitter))]),
    "hetreward_fitter_fit": (
        hetreward_status,
        [_P(hetreward_fitter), _P(hetreward_dataset), _P(_P(hetreward_model))],
    ),
    "hetreward_fitter_cancel": (None, [_P(hetreward_fitter)]),
    "hetreward_fitter_free": (None, [_P(hetreward_fitter)]),
    "hetreward_model_n": (c_size_t, [_P(hetreward_model)]),
    "hetreward_model_d1": (c_size_t, [_P(hetreward_model)]),
    "hetreward_model_d2": (c_size_t, [_P(hetreward_model)]),
    "hetreward_model_theta": (hetreward_status, [_P(hetreward_model), _P(c_double), c_size_t]),
    "hetreward_model_gamma": (hetreward_status, [_P(hetreward_model), _P(c_double), c_size_t]),
    "hetreward_model_theta_se": (hetreward_status, [_P(hetreward_model), _P(c_double), c_size_t]),
    "hetreward_model_gamma_se": (hetreward_status, [_P(hetreward_model), _P(c_double), c_size_t]),
    "hetreward_model_report": (hetreward_status, [_P(hetreward_model), _P(hetreward_fit_report)]),
    "hetreward_model_score": (
        hetreward_status,
        [_P(hetreward_model), _P(c_float), c_size_t, c_size_t, c_double, _P(hetreward_reward)],
    ),
    "hetreward_model_compare": (
        hetreward_status,
        [_P(hetreward_model), _P(c_float), _P(c_float), c_size_t, c_size_t, c_double,
         hetreward_diff_method, _P(hetreward_comparison)],
    ),
    "hetreward_model_select": (
        hetreward_status,
        [_P(hetreward_model), _P(c_float), c_size_t, c_size_t, _P(c_double), c_double,
         hetreward_policy, _P(c_size_t), _P(hetreward_candidate)],
    ),
    "hetreward_model_rationality": (
        hetreward_status,
        [_P(hetreward_model), c_double, _P(c_double), c_size_t, _P(c_double), _P(c_double)],
    ),
    "hetreward_model_coefficients": (
        hetreward_status,
        [_P(hetreward_model), hetreward_coefficients, c_double, _P(hetreward_coefficient),
         c_size_t, _P(c_size_t)],
    ),
    "hetreward_model_unbounded": (
        hetreward_status,
        [_P(hetreward_model), _P(hetreward_unbounded), c_size_t, _P(c_size_t)],
    ),
    "hetreward_model_rationality_interval": (
        hetreward_status,
        [_P(hetreward_model), c_double, _P(c_double), c_size_t, c_double, _P(hetreward_reward)],
    ),
    "hetreward_model_intervals": (
        hetreward_status,
        [_P(hetreward_model), _P(hetreward_interval_info)],
    ),
    "hetreward_model_interval_warning": (
        hetreward_status,
        [_P(hetreward_model), c_char_p, c_size_t, _P(c_size_t)],
    ),
    "hetreward_model_heterogeneity": (
        hetreward_status,
        [_P(hetreward_model), _P(hetreward_dataset), c_size_t, _P(c_double), _P(c_double),
         _P(hetreward_heterogeneity)],
    ),
    "hetreward_model_leverage": (
        hetreward_status,
        [_P(hetreward_model), _P(hetreward_dataset), c_size_t, _P(c_double), c_size_t,
         _P(c_int64), _P(c_double), _P(c_double), _P(hetreward_leverage_info)],
    ),
    "hetreward_model_wald": (hetreward_status, [_P(hetreward_model), _P(_P(hetreward_model))]),
    "hetreward_model_save": (hetreward_status, [_P(hetreward_model), c_char_p]),
    "hetreward_model_load": (hetreward_status, [c_char_p, _P(_P(hetreward_model))]),
    "hetreward_model_save_buffer": (
        hetreward_status,
        [_P(hetreward_model), _P(c_uint8), c_size_t, _P(c_size_t)],
    ),
    "hetreward_model_load_buffer": (
        hetreward_status,
        [_P(c_uint8), c_size_t, _P(_P(hetreward_model))],
    ),
    "hetreward_model_free": (None, [_P(hetreward_model)]),
    "hetreward_shard_stats_compute": (
        hetreward_status,
        [_P(hetreward_dataset), _P(c_double), c_size_t, _P(c_double), c_size_t,
         hetreward_shard_sections, _P(c_double), c_size_t, c_size_t,
         _P(_P(hetreward_shard_stats))],
    ),
    "hetreward_shard_stats_merge": (
        hetreward_status,
        [_P(hetreward_shard_stats), _P(hetreward_shard_stats)],
    ),
    "hetreward_shard_stats_byte_size": (
        hetreward_status,
        [_P(hetreward_shard_stats), _P(c_size_t)],
    ),
    "hetreward_shard_stats_to_bytes": (
        hetreward_status,
        [_P(hetreward_shard_stats), _P(c_uint8), c_size_t],
    ),
    "hetreward_shard_stats_from_bytes": (
        hetreward_status,
        [_P(c_uint8), c_size_t, _P(_P(hetreward_shard_stats))],
    ),
    "hetreward_shard_stats_value": (
        hetreward_status,
        [_P(hetreward_shard_stats), _P(c_uint64), _P(c_double), _P(c_double), c_size_t],
    ),
    "hetreward_shard_stats_free": (None, [_P(hetreward_shard_stats)]),
    "hetreward_shard_summary_of": (
        hetreward_status,
        [_P(hetreward_dataset), _P(hetreward_shard_summary)],
    ),
    "hetreward_shard_stats_compute_request": (
        hetreward_status,
        [_P(hetreward_dataset), _P(c_uint8), c_size_t, c_size_t, _P(_P(hetreward_shard_stats))],
    ),
    "hetreward_fit_distributed": (
        hetreward_status,
        [_P(hetreward_fitter), _P(hetreward_shard_summary), c_size_t, hetreward_shard_oracle,
         c_void_p, _P(_P(hetreward_model)), _P(hetreward_distributed_rounds)],
    ),
}


def _candidates():
    env = os.environ.get("HETREWARD_LIB")
    if env:
        if os.path.isdir(env):
            yield from sorted(glob.glob(os.path.join(env, "libhetreward.so*")))
        else:
            yield env
        return  # an explicit choice is not second-guessed
    here = os.path.dirname(os.path.abspath(__file__))
    yield from sorted(glob.glob(os.path.join(here, "_libhetreward*.so")))
    yield "libhetreward.so"
    found = ctypes.util.find_library("hetreward")
    if found:
        yield found


def _load() -> ctypes.CDLL:
    tried = []
    for name in _candidates():
        try:
            return ctypes.CDLL(name)
        except OSError as exc:
            tried.append(f"{name}: {exc}")
    raise ImportError(
        "hetreward: cannot load libhetreward. Set HETREWARD_LIB to the path of libhetreward.so "
        "(e.g. PREFIX/lib/libhetreward.so after scripts/install.sh --prefix PREFIX), install "
        "the package with its bundled library (pip install ./bindings/python, which builds it "
        "with cargo), or add the library's folder to LD_LIBRARY_PATH. Tried:\n  "
        + "\n  ".join(tried or ["(nothing: HETREWARD_LIB is set but empty)"])
    )


lib = _load()
for _name, (_restype, _argtypes) in PROTOTYPES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes

#: The loaded library's version string, "MAJOR.MINOR.PATCH".
LIBRARY_VERSION = lib.hetreward_version().decode()
_major, _minor = (int(x) for x in LIBRARY_VERSION.split(".")[:2])
if (_major, _minor) != ABI_VERSION:
    raise ImportError(
        f"hetreward: the library at {lib._name} is version {LIBRARY_VERSION}, this package "
        f"needs {ABI_VERSION[0]}.{ABI_VERSION[1]}.x"
    )
if lib.hetreward_fit_default_params().struct_size != ctypes.sizeof(hetreward_fit_params):
    raise ImportError("hetreward: hetreward_fit_params has a different size in the library")


def last_error() -> str:
    """This thread's last error message (call right after the failed call, same thread)."""
    return lib.hetreward_last_error_message().decode("utf-8", "replace")


def status_name(status: int) -> str:
    return lib.hetreward_status_name(status).decode()


def option_codes(family: int) -> dict:
    """name -> code of every option of a family (HETREWARD_OPTION_*), in code order, as the
    library names them (hetreward_option_at: the names the CLI uses). The binding's option
    tables are built from this at import, never spelled here."""
    table, code, index = {}, c_uint32(), 0
    while True:
        name = lib.hetreward_option_at(family, index, ctypes.byref(code))
        if name is None:
            break
        table[name.decode()] = code.value
        index += 1
    if not table:
        raise ImportError(f"hetreward: the library names no option of family {family}")
    return table


def option_names(family: int) -> dict:
    """code -> name of every option of a family (the inverse of option_codes)."""
    return {code: name for name, code in option_codes(family).items()}
