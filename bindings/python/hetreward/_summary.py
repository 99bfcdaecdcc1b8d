"""Model.summary(): a statsmodels-style table of the estimates.

Where the numbers come from:

* estimates and standard errors: the library (hetreward_model_theta/_se, _gamma/_se);
* theta rows' p-value and CI: the library, as the reward difference of the unit vector e_j
  against the zero vector (hetreward_model_compare, exact method), whose SE is exactly
  theta_se[j];
* gamma rows' p-value and CI: the C API has no call for them, so they are the textbook Wald
  test of the library's estimate and SE with the standard normal of Python's standard library
  (statistics.NormalDist) — the same normal quantile and tail as the library's own to ~1e-15.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import List, Optional, Sequence

import numpy as np


@dataclass(frozen=True)
class SummaryRow:
    name: str
    estimate: float
    se: float
    z: float
    p_value: float
    lower: float
    upper: float


def _fmt(x: float) -> str:
    if x != x or x in (float("inf"), float("-inf")):
        return f"{x:>11}"
    if x == 0 or 1e-4 <= abs(x) < 1e6:
        return f"{x:11.4f}"
    return f"{x:11.3e}"


def _names(given: Optional[Sequence[str]], prefix: str, d: int) -> List[str]:
    if given is None:
        return [f"{prefix}[{i}]" for i in range(d)]
    if len(given) != d:
        raise ValueError(f"{prefix}_names has {len(given)} names for {d} coefficients")
    return [str(g) for g in given]


class Summary:
    """The result of Model.summary(): ``rows`` (SummaryRow: name, estimate, se, z, p_value,
    lower, upper), ``alpha``, the fit ``report``; ``str()`` / ``as_text()`` give the table."""

    def __init__(self, rows, alpha, n, report):
        self.rows: List[SummaryRow] = rows
        self.alpha = alpha
        self.n = n
        self.report = report

    @classmethod
    def of(cls, model, alpha, theta_names, gamma_names) -> "Summary":
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        d1, d2 = model.d1, model.d2
        tn, gn = _names(theta_names, "theta", d1), _names(gamma_names, "gamma", d2)
        theta, theta_se = model.theta, model.theta_se
        tests = model.compare(np.eye(d1, dtype=np.float32), np.zeros((d1, d1), dtype=np.float32),
                              alpha=alpha, method="exact")
        rows = [
            SummaryRow(tn[j], float(theta[j]), float(theta_se[j]), float(theta[j] / theta_se[j]),
                       float(tests["p_value"][j]), float(tests["lower"][j]),
                       float(tests["upper"][j]))
            for j in range(d1)
        ]
        normal = NormalDist()
        q = normal.inv_cdf(1 - alpha / 2)
        gamma, gamma_se = model.gamma, model.gamma_se
        for k in range(d2):
            g, se = float(gamma[k]), float(gamma_se[k])
            z = g / se
            rows.append(SummaryRow(gn[k], g, se, z, 2 * normal.cdf(-abs(z)), g - q * se, g + q * se))
        return cls(rows, alpha, model.n, model.report)

    def as_text(self) -> str:
        r = self.report
        width = 78
        lo, hi = f"[{self.alpha / 2:g}", f"{1 - self.alpha / 2:g}]"
        name_w = max([14] + [len(row.name) + 1 for row in self.rows])
        width = max(width, name_w + 66)

        def pair(k1, v1, k2, v2):
            half = width // 2
            return f"{k1:<16}{v1:>{half - 18}}  " + f"{k2:<18}{v2:>{width - half - 20}}"

        lines = [
            "hetreward fit results".center(width).rstrip(),
            "=" * width,
            pair("Observations:", str(self.n), "Solver:", r.solver),
            pair("Covariance:", r.covariance, "Converged:", str(r.converged)),
            pair("Iterations:", str(r.iterations), "Starts:", str(r.starts)),
            pair("Mean NLL:", f"{r.neg_loglik:.6g}", "Gradient norm:", f"{r.grad_norm:.3g}"),
            "=" * width,
            " " * name_w + "".join(f"{h:>11}" for h in ("coef", "std err", "z", "P>|z|", lo, hi)),
            "-" * width,
        ]
        for row in self.rows:
            lines.append(f"{row.name:<{name_w}}" + "".join(
                _fmt(v) for v in (row.estimate, row.se, row.z, row.p_value, row.lower, row.upper)))
        lines.append("=" * width)
        lines.append("theta: reward coefficients, r = theta . phi")
        lines.append("gamma: rationality coefficients, sigma = psi0 + gamma . psi")
        return "\n".join(lines)

    __str__ = as_text

    def __repr__(self) -> str:
        return self.as_text()
