"""hetreward: reward learning from heterogeneous human preferences, with uncertainty.

A pure-Python (ctypes) binding of the hetreward C library: fit a reward model from pairwise
comparisons whose annotators differ in rationality, then score answers with standard errors
and confidence intervals, compare answers (win / tie / loss) and pick the best of N,
optionally pessimistically (pBoN). No math is done in Python; numpy arrays are handed to the
library in place (their dtype and layout are checked, never silently converted).

    import numpy as np, hetreward as hr
    with hr.Dataset(z, psi0, psi, y) as data, hr.Fitter() as fitter:
        model = fitter.fit(data)
    print(model.summary())
    best, candidates = model.select(phi.astype(np.float32), policy="pbon")

The library is found through HETREWARD_LIB, next to this package, or the system loader (see
hetreward._native).
"""

from ._core import (
    CANDIDATE_DTYPE,
    COEFFICIENT_DTYPE,
    COMPARISON_DTYPE,
    REWARD_DTYPE,
    UNBOUNDED_DTYPE,
    VERDICTS,
    Dataset,
    Fitter,
    FitReport,
    Model,
    Progress,
)
from ._native import LIBRARY_VERSION
from ._summary import Summary, SummaryRow
from .errors import (
    BadFormatError,
    CancelledError,
    DimensionMismatchError,
    HetrewardError,
    HetrewardIOError,
    InternalError,
    InvalidArgumentError,
    NonFiniteError,
    NotConvergedError,
    NullPointerError,
    SingularInformationError,
)

__version__ = "0.2.0"


def library_version() -> str:
    """The loaded C library's version, "MAJOR.MINOR.PATCH"."""
    return LIBRARY_VERSION


__all__ = [
    "Dataset", "Fitter", "Model", "Progress", "FitReport", "Summary", "SummaryRow",
    "REWARD_DTYPE", "COMPARISON_DTYPE", "CANDIDATE_DTYPE", "COEFFICIENT_DTYPE", "UNBOUNDED_DTYPE",
    "VERDICTS",
    "library_version",
    "HetrewardError", "NullPointerError", "InvalidArgumentError", "DimensionMismatchError",
    "NonFiniteError", "SingularInformationError", "NotConvergedError", "HetrewardIOError",
    "BadFormatError", "CancelledError", "InternalError",
]
