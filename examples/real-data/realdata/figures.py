"""The report's PNG figures (matplotlib, no display)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def forest(ranking, calibrated_label, path):
    """The six LLMs' mean rewards with expected-information (Wald), cluster-robust and
    calibrated 95% CIs."""
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    rows = ranking[::-1]
    y = np.arange(len(rows))
    for off, cov, color, label in ((0.2, "expected", "C0", "expected information (Wald)"),
                                   (0.0, "cluster", "C3", "cluster-robust (judge)"),
                                   (-0.2, "calibrated", "C2", calibrated_label)):
        r = np.array([x[f"reward_{cov}"] for x in rows])
        lo = np.array([x[f"lower_{cov}"] for x in rows])
        hi = np.array([x[f"upper_{cov}"] for x in rows])
        ax.errorbar(r, y + off, xerr=[r - lo, hi - r], fmt="o", color=color, capsize=3,
                    label=label)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{x['model']} (human rank {x['human_rank']})" for x in rows])
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_xlabel("mean reward over MT-Bench questions (theta . phi), 95% CI")
    ax.set_title("MT-Bench: the six LLMs' rewards (heterogeneous model)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize=8)
    return _save(fig, path)


def rationality(rat, path):
    """sigma of authors (fixed at 1 by psi0) and experts (1 + gamma) with the Wald,
    cluster-robust and calibrated CIs."""
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.plot([1.0], [0], "ks")
    labels = ["authors (sigma = psi0 = 1, reference)"]
    names = dict(expected="expected information (Wald)", cluster="cluster-robust")
    cal = rat["calibrated"]["intervals"]
    names["calibrated"] = f"calibrated ({cal['method']}, B = {cal['reps']})"
    for i, (cov, color) in enumerate((("expected", "C0"), ("cluster", "C3"),
                                      ("calibrated", "C2")), start=1):
        r = rat[cov]
        lo, hi = r["sigma_expert_ci"]
        ax.errorbar([r["sigma_expert"]], [i], xerr=[[r["sigma_expert"] - lo],
                                                    [hi - r["sigma_expert"]]],
                    fmt="o", color=color, capsize=4)
        labels.append(f"experts, {names[cov]}")
    ax.set_yticks(range(4))
    ax.set_yticklabels(labels)
    ax.set_ylim(-0.6, 3.6)
    ax.set_xlabel("rationality sigma = psi0 + gamma * expert, 95% CI by method")
    ax.set_title("MT-Bench: rationality of expert judges vs paper authors")
    return _save(fig, path)


def bon(table, path):
    """Mean human win rate of the answer chosen by BoN and pBoN (cross-fitted), by N."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    n = [r["n"] for r in table]
    for key, style, label in (("oracle", "k:", "human-best (oracle)"),
                              ("bon", "C0o-", "BoN (max reward)"),
                              ("pbon", "C3s-", "pBoN (max lower bound)"),
                              ("random", "C7--", "random answer")):
        # ± one SE from the paired bootstrap over questions.
        ax.errorbar(n, [r[key] for r in table], yerr=[r[key + "_se"] for r in table],
                    fmt=style, capsize=3, label=label)
    ax.set_xticks(n)
    ax.set_xlabel("N (candidate answers per question)")
    ax.set_ylabel("held-out human win rate of the choice")
    ax.set_title("MT-Bench: Best-of-N vs pessimistic Best-of-N (cross-fitted)")
    ax.legend(fontsize=8)
    return _save(fig, path)


def reliability(rows, ece, acc, path):
    """Reliability diagram of held-out HH-RLHF predictions."""
    fig, (ax, axh) = plt.subplots(2, 1, figsize=(5.5, 5.5), sharex=True,
                                  gridspec_kw=dict(height_ratios=[3, 1]))
    ax.plot([0, 1], [0, 1], "k:", label="perfect calibration")
    # Each bin's observed frequency with its Wilson 95% interval (few pairs: wide).
    n = np.array([r["n"] for r in rows], dtype=float)
    f = np.array([r["freq"] for r in rows])
    zq = 1.959963984540054
    centre = (f + zq ** 2 / (2 * n)) / (1 + zq ** 2 / n)
    half = zq * np.sqrt(f * (1 - f) / n + zq ** 2 / (4 * n ** 2)) / (1 + zq ** 2 / n)
    mp = [r["mean_p"] for r in rows]
    err = np.maximum([f - (centre - half), centre + half - f], 0.0)  # rounding at f = 0, 1
    ax.errorbar(mp, f, yerr=err, fmt="C0o-", capsize=3,
                label=f"held-out, Wilson 95% CI (ECE {ece:.3f}, accuracy {acc:.3f})")
    ax.set_ylabel("observed frequency of y = 1")
    ax.set_title("HH-RLHF harmless-base: held-out calibration")
    ax.legend(fontsize=8, loc="upper left")
    centers = [(r["lo"] + r["hi"]) / 2 for r in rows]
    axh.bar(centers, [r["n"] for r in rows], width=0.09, color="C7")
    axh.set_xlabel("predicted P(y = 1)")
    axh.set_ylabel("pairs")
    return _save(fig, path)


def dimensions(scan, chosen, path):
    """Held-out log-loss and accuracy by PCA dimension, heterogeneous vs homogeneous."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.2))
    dims = [r["dim"] for r in scan]
    for key, style, label in (("hetero", "C3o-", "heterogeneous"),
                              ("homo", "C0s--", "homogeneous")):
        # ± one SE over questions (judgments of a question are clustered).
        for ax, what in ((a1, "log_loss"), (a2, "accuracy")):
            v = [r[key][what] if r[key] else np.nan for r in scan]
            se = [r[key][what + "_se"] if r[key] else np.nan for r in scan]
            ax.errorbar(dims, v, yerr=se, fmt=style, capsize=3, label=label)
    for a in (a1, a2):
        a.set_xscale("log", base=2)
        a.set_xticks(dims)
        a.set_xticklabels([str(x) for x in dims])
        a.minorticks_off()
        a.axvline(chosen, color="grey", lw=0.8, ls=":")
        a.set_xlabel("PCA dimension d1")
    a1.set_ylabel("held-out log-loss")
    a2.set_ylabel("held-out accuracy")
    a1.legend(fontsize=8)
    fig.suptitle("MT-Bench: choosing the embedding dimension (question-level folds)")
    return _save(fig, path)
