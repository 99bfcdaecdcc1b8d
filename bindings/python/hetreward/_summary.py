"""Model.summary(): a statsmodels-style table of the estimates.

Every number comes from the library's coefficient table (hetreward_model_coefficients, via
Model.coefficients): estimate, SE, z, p-value and CI under the model's interval method (Wald,
or the calibrated bootstrap intervals the model carries). Nothing is re-derived here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence


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
        names = _names(theta_names, "theta", d1) + _names(gamma_names, "gamma", d2)
        table = model.coefficients(alpha, "all")
        rows = [
            SummaryRow(name, float(r["estimate"]), float(r["se"]), float(r["z"]),
                       float(r["p_value"]), float(r["lower"]), float(r["upper"]))
            for name, r in zip(names, table)
        ]
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
