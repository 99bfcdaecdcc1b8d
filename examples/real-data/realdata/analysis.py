"""The analyses of the real-data report. Every estimate, SE, CI, comparison and selection comes
from the hetreward library through its Python binding; this module only arranges data (PCA of
the embeddings, folds, tables) and scores held-out predictions (log-loss, accuracy, human win
rates), which are evaluation, not model fitting."""

import itertools
import math
from dataclasses import dataclass

import numpy as np

import hetreward as hr

from .data import MODELS

ALPHA = 0.05


# --- features ---------------------------------------------------------------------------------

class PCA:
    """Principal components of unit-norm embeddings (centred, by SVD), fitted without labels."""

    def __init__(self, x):
        x = np.asarray(x, dtype=np.float64)
        self.mean = x.mean(axis=0)
        _, s, vt = np.linalg.svd(x - self.mean, full_matrices=False)
        self.components = vt
        self.explained = s ** 2 / np.sum(s ** 2)

    def transform(self, x, k):
        """The first k coordinates, float32 (the binding's dtype for answers' features)."""
        return ((np.asarray(x, np.float64) - self.mean) @ self.components[:k].T).astype(np.float32)

    def save_projection(self, path, k, **meta):
        """Writes the map of `transform(x, k)` as a companion file of a model (see
        docs/model-format.md, "Companion: feature projection"): float64 `mean` (D,) and
        `components` (k, D), string metadata `meta` plus format and dimensions."""
        from safetensors.numpy import save_file

        info = {"format": "hetreward-projection-1", "dim_in": str(len(self.mean)),
                "dim_out": str(k), **{key: str(v) for key, v in meta.items()}}
        save_file({"mean": np.ascontiguousarray(self.mean, np.float64),
                   "components": np.ascontiguousarray(self.components[:k], np.float64)},
                  str(path), metadata=info)


def sigmoid(t):
    return 1.0 / (1.0 + np.exp(-t))


def predict(model, z, psi):
    """P(y = 1) = sigmoid(sigma * theta . z), sigma = 1 + gamma . psi (psi0 = 1), from the
    fitted coefficients (held-out evaluation only)."""
    sigma = np.ones(len(z)) if psi is None else 1.0 + psi @ model.gamma
    return sigmoid(sigma * (z @ model.theta))


def held_out_scores(p, y, groups=None):
    """Mean log-loss and accuracy of probabilities p for labels y; with ``groups`` (e.g. the
    question of each judgment) also their standard errors with the groups as clusters
    (``log_loss_se``, ``accuracy_se``: judgments of one question are not independent)."""
    eps = 1e-12
    pc = np.clip(p, eps, 1 - eps)
    loss = -(y * np.log(pc) + (1 - y) * np.log(1 - pc))
    hit = ((p > 0.5) == (y > 0.5)).astype(np.float64)
    out = dict(log_loss=float(np.mean(loss)), accuracy=float(np.mean(hit)), n=int(len(y)))
    if groups is not None:
        out.update(log_loss_se=clustered_mean_se(loss, groups),
                   accuracy_se=clustered_mean_se(hit, groups))
    return out


def clustered_mean_se(v, groups):
    """The cluster-robust standard error of the mean of v with clusters ``groups``:
    sqrt(Q / (Q - 1) * sum_q (sum_{i in q} (v_i - mean))^2) / n over Q groups."""
    v = np.asarray(v, np.float64)
    _, g = np.unique(np.asarray(groups), return_inverse=True)
    q = g.max() + 1
    sums = np.bincount(g, weights=v - v.mean(), minlength=q)
    return float(math.sqrt(q / (q - 1) * np.sum(sums ** 2)) / len(v))


def fit(z, y, psi=None, cluster=None, covariance="expected", intervals=None, seed=None):
    """A hetreward fit (library defaults: Newton, multi-start) of z (n, d1) float64.
    ``intervals`` (None = the library's default, the paper's Wald) is the model's interval
    method, which every consumer (score, compare, select, rationality) then uses; ``seed``
    seeds the fit and its bootstrap refits."""
    n = len(y)
    with hr.Dataset(np.ascontiguousarray(z, np.float64), np.ones(n),
                    None if psi is None else np.ascontiguousarray(psi, np.float64),
                    np.ascontiguousarray(y, np.float64),
                    None if cluster is None else np.ascontiguousarray(cluster, np.int64)) as ds, \
            hr.Fitter(covariance=covariance, intervals=intervals, seed=seed) as f:
        return f.fit(ds)


def question_folds(questions, k, seed):
    """Question id -> fold in 0..k-1 (a seeded shuffle, balanced)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(sorted(questions))
    return {int(q): i % k for i, q in enumerate(order)}


# --- MT-Bench ---------------------------------------------------------------------------------

@dataclass
class MTData:
    """Non-tie judgments as arrays, plus what the analyses need to map them back."""
    rows: list        # the non-tie judgment dicts, in array order
    y: np.ndarray     # 1 = model_b preferred (a1 = model_b's answer, a0 = model_a's)
    psi: np.ndarray   # (n, 1) expert indicator
    cluster: np.ndarray  # judge ids 0..J-1
    question: np.ndarray
    judges: list
    ties: int


def mt_arrays(mt):
    """The fitting data of MT-Bench: ties dropped (and counted), y, psi, judge clusters."""
    rows = [j for j in mt.judgments if j["winner"] != "tie"]
    judges = sorted({j["judge"] for j in mt.judgments})
    jid = {name: i for i, name in enumerate(judges)}
    return MTData(
        rows=rows,
        y=np.array([j["winner"] == "model_b" for j in rows], dtype=np.float64),
        psi=np.array([[float(j["expert"])] for j in rows]),
        cluster=np.array([jid[j["judge"]] for j in rows], dtype=np.int64),
        question=np.array([j["question"] for j in rows]),
        judges=judges,
        ties=len(mt.judgments) - len(rows))


def mt_z(d, phi):
    """z = phi(model_b's answer) - phi(model_a's answer) at the judged turn, float64."""
    a = np.stack([phi[(j["question"], j["model_a"], j["turn"])] for j in d.rows])
    b = np.stack([phi[(j["question"], j["model_b"], j["turn"])] for j in d.rows])
    return b.astype(np.float64) - a.astype(np.float64)


def identity_features(d):
    """The text-free baseline: phi = one-hot of the LLM without the first one (a Bradley-Terry
    model of the 6 LLMs; rewards are identified up to a shift, so one LLM is the reference)."""
    eye = np.eye(len(MODELS))[:, 1:]
    idx = {m: i for i, m in enumerate(MODELS)}
    return np.stack([eye[idx[j["model_b"]]] - eye[idx[j["model_a"]]] for j in d.rows])


def cross_fit(z, d, folds, hetero=True):
    """Held-out probabilities: each judgment predicted by the model fitted on the other folds'
    questions. Returns (p, failures)."""
    p = np.full(len(d.y), np.nan)
    fold = np.array([folds[q] for q in d.question])
    failures = []
    for k in sorted(set(folds.values())):
        tr, te = fold != k, fold == k
        try:
            m = fit(z[tr], d.y[tr], d.psi[tr] if hetero else None)
        except hr.HetrewardError as e:
            failures.append(f"fold {k}: {e.status_name}: {e.message}")
            continue
        with m:
            p[te] = predict(m, z[te], d.psi[te] if hetero else None)
    return p, failures


def dimension_scan(pca_phi, d, folds, dims):
    """Held-out log-loss and accuracy of the heterogeneous and homogeneous models by PCA
    dimension (question-level folds), with standard errors over questions."""
    out = []
    for k in dims:
        phi = {key: v[:k] for key, v in pca_phi.items()}
        z = mt_z(d, phi)
        row = dict(dim=k)
        for name, het in (("hetero", True), ("homo", False)):
            p, fails = cross_fit(z, d, folds, het)
            ok = ~np.isnan(p)
            row[name] = held_out_scores(p[ok], d.y[ok], d.question[ok]) if ok.any() else None
            row[name + "_failures"] = fails
        out.append(row)
    return out


def subset(d, rows):
    """The judgments ``rows`` (a boolean mask) of ``d``."""
    idx = np.flatnonzero(rows)
    return MTData(rows=[d.rows[i] for i in idx], y=d.y[idx], psi=d.psi[idx],
                  cluster=d.cluster[idx], question=d.question[idx], judges=d.judges, ties=0)


def nested_cross_fit(pca_phi, d, folds, dims, seed, hetero=True):
    """Held-out probabilities with d1 chosen by NESTED cross-validation: for each outer fold,
    d1 is the dimension with the lowest log-loss over inner question-level folds of the other
    folds' questions only, then the model of that d1 is fitted on them and predicts the outer
    fold. The accuracy so obtained never saw the judgments it reports. Returns (p, chosen d1
    per outer fold, failures)."""
    p = np.full(len(d.y), np.nan)
    fold = np.array([folds[q] for q in d.question])
    outer = sorted(set(folds.values()))
    chosen, failures = {}, []
    for k in outer:
        tr = fold != k
        inner_d = subset(d, tr)
        inner_folds = question_folds(set(inner_d.question.tolist()), len(outer) - 1, seed + 1 + k)
        scan = dimension_scan(pca_phi, inner_d, inner_folds, dims)
        key = "hetero" if hetero else "homo"
        ok = [r for r in scan if r[key] and not r[key + "_failures"]]
        chosen[k] = min(ok, key=lambda r: r[key]["log_loss"])["dim"]
        z = mt_z(d, {key_: v[:chosen[k]] for key_, v in pca_phi.items()})
        try:
            m = fit(z[tr], d.y[tr], d.psi[tr] if hetero else None)
        except hr.HetrewardError as e:
            failures.append(f"fold {k}: {e.status_name}: {e.message}")
            continue
        with m:
            p[~tr] = predict(m, z[~tr], d.psi[~tr] if hetero else None)
    return p, chosen, failures


def trivial_cross_fit(d, folds):
    """The trivial baseline that reads no text and knows no LLM: every held-out judgment gets
    the training folds' frequency of "model_b preferred" (so it always predicts the majority
    side: on this order-matched subset, the second answer)."""
    fold = np.array([folds[q] for q in d.question])
    p = np.empty(len(d.y))
    for k in sorted(set(folds.values())):
        p[fold == k] = d.y[fold != k].mean()
    return p


def choose_dim(scan):
    """The dimension with the lowest held-out log-loss of the heterogeneous model (all folds
    fitted)."""
    ok = [r for r in scan if r["hetero"] and not r["hetero_failures"]]
    return min(ok, key=lambda r: r["hetero"]["log_loss"])["dim"]


def heterogeneity(m, z, d):
    """The library's annotator-heterogeneity diagnostic of model m on the MT-Bench data with
    the judges as clusters (design effect per coefficient, effective judges, warning)."""
    n = len(d.y)
    with hr.Dataset(np.ascontiguousarray(z, np.float64), np.ones(n),
                    np.ascontiguousarray(d.psi, np.float64), np.ascontiguousarray(d.y, np.float64),
                    np.ascontiguousarray(d.cluster, np.int64)) as ds:
        h = m.heterogeneity(ds)
    return dict(h, design_effects=h["design_effects"].tolist(),
                effective_clusters=h["effective_clusters"].tolist())


def judge_bootstrap(z, d, reps, seed, alpha=ALPHA):
    """The judge-resampling (cluster pairs) bootstrap of gamma: ``reps`` times, draw the
    judges with replacement (seeded), refit with the library on their judgments (a judge drawn
    twice counts twice, as a new cluster), and record gamma. Returns the SD, the percentile
    interval and how many refits failed (dropped)."""
    rng = np.random.default_rng(seed)
    judges = np.unique(d.cluster)
    rows = {g: np.flatnonzero(d.cluster == g) for g in judges}
    draws, failed = [], 0
    for _ in range(reps):
        pick = rng.choice(judges, size=len(judges), replace=True)
        idx = np.concatenate([rows[g] for g in pick])
        try:
            with fit(z[idx], d.y[idx], d.psi[idx]) as m:
                draws.append(float(m.gamma[0]))
        except hr.HetrewardError:
            failed += 1
    g = np.array(draws)
    return dict(reps=reps, failed=failed, gamma_sd=float(g.std(ddof=1)),
                gamma_ci=(float(np.quantile(g, alpha / 2)),
                          float(np.quantile(g, 1 - alpha / 2))))


def model_params(m, alpha=ALPHA):
    """Estimates and SEs of a fitted model as plain lists (full precision) with its report."""
    r = m.report
    return dict(theta=m.theta.tolist(), gamma=m.gamma.tolist(), theta_se=m.theta_se.tolist(),
                gamma_se=m.gamma_se.tolist(), n=m.n, d1=m.d1, d2=m.d2,
                converged=r.converged, iterations=r.iterations, neg_loglik=r.neg_loglik,
                grad_norm=r.grad_norm, covariance=r.covariance, solver=r.solver)


def rationality(m_exp, m_clu, m_cal):
    """Experts' vs authors' rationality: gamma (sigma_expert - sigma_author, authors fixed at
    sigma = psi0 = 1) and sigma_expert, with expected-information (Wald), cluster-robust and
    calibrated CIs, each the library's own interval under the model's method
    (``rationality_interval``: Wald for the first two; for the calibrated model the refits'
    percentile interval under the plain bootstrap, the bias-corrected estimate +- q SD* under
    the resized one, the estimate +- t(G-1) jackknife SE under the cluster methods)."""
    out = {}
    for label, m in (("expected", m_exp), ("cluster", m_clu), ("calibrated", m_cal)):
        # gamma = sigma(psi = 1) - sigma(psi = 0) = the rationality of psi0 = 0, psi = 1.
        g, gse, glo, ghi = m.rationality_interval(0.0, [1.0], ALPHA)
        s, sse, slo, shi = m.rationality_interval(1.0, [1.0], ALPHA)
        out[label] = dict(gamma=g, gamma_se=gse, gamma_ci=(glo, ghi),
                          sigma_expert=s, sigma_expert_se=sse, sigma_expert_ci=(slo, shi),
                          sigma_author=m.rationality(1.0, [0.0])[0])
    info = m_cal.intervals()
    out["calibrated"].update(intervals=info, method=info["method"])
    return out


def answer_phi(phi, questions):
    """phi_bar[(question, model)] = mean of the two turns' features (a two-turn answer's reward
    is the mean of its turns' rewards; r is linear in phi so the library's CIs stay exact)."""
    out = {}
    for q in questions:
        for m in MODELS:
            turns = [phi.get((q, m, t)) for t in (1, 2)]
            if all(v is not None for v in turns):
                out[(q, m)] = ((turns[0].astype(np.float64) + turns[1]) / 2).astype(np.float32)
    return out


def human_scores(mt):
    """Per question and LLM: human wins, ties, losses over all judgments (both turns)."""
    tally = {}
    for j in mt.judgments:
        for side, other in (("model_a", "model_b"), ("model_b", "model_a")):
            t = tally.setdefault((j["question"], j[side]), [0, 0, 0])
            if j["winner"] == "tie":
                t[1] += 1
            elif j["winner"] == side:
                t[0] += 1
            else:
                t[2] += 1
    return {k: dict(wins=w, ties=t, losses=lo, n=w + t + lo, rate=(w + t / 2) / (w + t + lo))
            for k, (w, t, lo) in tally.items()}


def human_majority(mt):
    """(question, a, b) with a < b -> +1 (humans prefer a), -1 (b) or 0 (tie/even), from the
    votes of all judges and both turns."""
    votes = {}
    for j in mt.judgments:
        a, b = sorted((j["model_a"], j["model_b"]))
        v = 0 if j["winner"] == "tie" else (1 if j[j["winner"]] == a else -1)
        votes.setdefault((j["question"], a, b), []).append(v)
    return {k: int(np.sign(sum(v))) for k, v in votes.items()}


def compare_llms(m, phibar, questions, mt, alpha=ALPHA):
    """Paper §5.2.2 on real answers: for each pair of LLMs, per-question reward differences
    with the library's exact-difference CIs, win / tie / loss, win rate; beside them the human
    judgments of the same pair."""
    majority = human_majority(mt)
    pairs = []
    for a, b in itertools.combinations(MODELS, 2):
        qs = [q for q in questions if (q, a) in phibar and (q, b) in phibar]
        c = m.compare(np.stack([phibar[(q, a)] for q in qs]),
                      np.stack([phibar[(q, b)] for q in qs]), alpha=alpha, method="exact")
        verdicts = [hr.VERDICTS[v] for v in c["verdict"]]
        wins, ties, losses = (verdicts.count(v) for v in ("win", "tie", "loss"))
        hw = ht = hl = 0
        for j in mt.judgments:
            if {j["model_a"], j["model_b"]} == {a, b}:
                if j["winner"] == "tie":
                    ht += 1
                elif j[j["winner"]] == a:
                    hw += 1
                else:
                    hl += 1
        agree = [np.sign(c["diff"][i]) == majority[(q, a, b)] for i, q in enumerate(qs)
                 if majority.get((q, a, b), 0) != 0]
        pairs.append(dict(a=a, b=b, questions=len(qs), wins=wins, ties=ties, losses=losses,
                          win_rate=(wins + ties / 2) / len(qs),
                          mean_diff=float(np.mean(c["diff"])),
                          human_wins=hw, human_ties=ht, human_losses=hl,
                          human_win_rate=(hw + ht / 2) / max(hw + ht + hl, 1),
                          majority_agreement=float(np.mean(agree)) if agree else float("nan"),
                          majority_n=len(agree)))
    return pairs


def ranking(models_by_cov, phibar, questions, mt, alpha=ALPHA):
    """Each LLM's mean reward over the questions all six answered (one score call on the mean
    feature vector: exact, r is linear) with CIs from each model of ``models_by_cov`` (label ->
    model: covariances, interval methods); rank intervals from the
    library's exact pairwise tests of the mean rewards at Bonferroni level alpha / 15."""
    common = [q for q in questions if all((q, mm) in phibar for mm in MODELS)]
    mean_phi = np.stack([np.mean([phibar[(q, mm)].astype(np.float64) for q in common], axis=0)
                         for mm in MODELS]).astype(np.float32)
    hs = human_scores(mt)
    rows = {mm: dict(model=mm) for mm in MODELS}
    for cov, m in models_by_cov.items():
        s = m.score(mean_phi, alpha=alpha)
        for i, mm in enumerate(MODELS):
            # "reward" is the MLE's (the first model's); a calibrated model may re-centre it
            # (resized: de-inflated), kept as reward_<cov>.
            rows[mm].setdefault("reward", float(s["reward"][i]))
            rows[mm].update({f"reward_{cov}": float(s["reward"][i]),
                             f"se_{cov}": float(s["se"][i]),
                             f"lower_{cov}": float(s["lower"][i]),
                             f"upper_{cov}": float(s["upper"][i])})
        # Rank intervals: r_i - r_j significant at alpha / (number of pairs).
        npairs = len(MODELS) * (len(MODELS) - 1) // 2
        better = {mm: 0 for mm in MODELS}
        worse = {mm: 0 for mm in MODELS}
        for i, j in itertools.combinations(range(len(MODELS)), 2):
            c = m.compare(mean_phi[i:i + 1], mean_phi[j:j + 1], alpha=alpha / npairs)
            v = hr.VERDICTS[c["verdict"][0]]
            if v == "win":
                worse[MODELS[j]] += 1
                better[MODELS[i]] += 1
            elif v == "loss":
                worse[MODELS[i]] += 1
                better[MODELS[j]] += 1
        for mm in MODELS:
            rows[mm][f"rank_ci_{cov}"] = (1 + worse[mm], len(MODELS) - better[mm])
    for mm in MODELS:
        w = sum(v["wins"] for (q, x), v in hs.items() if x == mm)
        t = sum(v["ties"] for (q, x), v in hs.items() if x == mm)
        n = sum(v["n"] for (q, x), v in hs.items() if x == mm)
        rows[mm]["human_win_rate"] = (w + t / 2) / n
        rows[mm]["human_n"] = n
    out = sorted(rows.values(), key=lambda r: -r["reward"])
    for i, r in enumerate(out):
        r["rank"] = i + 1
    by_human = sorted(out, key=lambda r: -r["human_win_rate"])
    for i, r in enumerate(by_human):
        r["human_rank"] = i + 1
    return out, len(common)


def kendall_tau(a, b):
    """Kendall's tau-a between two rankings (lists of ranks of the same items)."""
    s = 0
    n = len(a)
    for i, j in itertools.combinations(range(n), 2):
        s += np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
    return float(s / (n * (n - 1) / 2))


def best_of_n(d, z, phibar, questions, folds, mt, alpha=ALPHA):
    """BoN vs pBoN, cross-fitted: a question's candidates are chosen by the heterogeneous model
    fitted on the other folds' questions (it never saw that question's judgments), and scored
    by that question's human judgments (the chosen answer's human win rate, ties = 1/2, over
    all its judgments there). For N < 6, every N-subset of the answers that have human
    judgments is a candidate set."""
    hs = human_scores(mt)
    per_n = {}
    first = []
    fold_of = np.array([folds[q] for q in d.question])
    for k in sorted(set(folds.values())):
        tr = fold_of != k
        with fit(z[tr], d.y[tr], d.psi[tr]) as m:
            for q in [q for q in questions if folds[q] == k]:
                cands = [mm for mm in MODELS if (q, mm) in phibar and (q, mm) in hs]
                for n in range(2, len(cands) + 1):
                    for subset in itertools.combinations(cands, n):
                        phi = np.stack([phibar[(q, mm)] for mm in subset])
                        bon, _ = m.select(phi, alpha=alpha, policy="bon")
                        pbon, cand = m.select(phi, alpha=alpha, policy="pbon")
                        rates = [hs[(q, mm)]["rate"] for mm in subset]
                        acc = per_n.setdefault(n, dict(bon=[], pbon=[], random=[], oracle=[],
                                                       differ=[], question=[]))
                        acc["question"].append(q)
                        acc["bon"].append(rates[bon])
                        acc["pbon"].append(rates[pbon])
                        acc["random"].append(float(np.mean(rates)))
                        acc["oracle"].append(max(rates))
                        acc["differ"].append(bon != pbon)
                        if n == len(MODELS):
                            first.append(dict(question=q, bon=subset[bon], pbon=subset[pbon],
                                              bon_rate=rates[bon], pbon_rate=rates[pbon],
                                              human_best=subset[int(np.argmax(rates))]))
    table = []
    for n in sorted(per_n):
        a = per_n[n]
        diff = np.array(a["pbon"]) - np.array(a["bon"])
        se = question_bootstrap_se(a, ("bon", "pbon", "random", "oracle"), BOOTSTRAP_REPS,
                                   BOOTSTRAP_SEED + n)
        table.append(dict(n=n, sets=len(a["bon"]), bon=float(np.mean(a["bon"])),
                          pbon=float(np.mean(a["pbon"])), random=float(np.mean(a["random"])),
                          oracle=float(np.mean(a["oracle"])),
                          differ=float(np.mean(a["differ"])),
                          pbon_minus_bon=float(diff.mean()),
                          bon_se=se["bon"], pbon_se=se["pbon"], random_se=se["random"],
                          oracle_se=se["oracle"], pbon_minus_bon_se=se["pbon - bon"]))
    return table, first


BOOTSTRAP_REPS = 2000
BOOTSTRAP_SEED = 20261127


def question_bootstrap_se(a, keys, reps, seed):
    """Paired bootstrap over questions: draw the questions with replacement (seeded), take
    every candidate set of each drawn question, and recompute the means of ``keys`` and of
    pbon - bon; their SDs over the ``reps`` draws are the standard errors (sets of one question
    share its answers and judgments, so the question is the unit)."""
    q = np.array(a["question"])
    uq, g = np.unique(q, return_inverse=True)
    cols = {k: np.array(a[k], np.float64) for k in keys}
    cols["pbon - bon"] = cols["pbon"] - cols["bon"]
    sums = {k: np.bincount(g, weights=v, minlength=len(uq)) for k, v in cols.items()}
    counts = np.bincount(g, minlength=len(uq)).astype(np.float64)
    rng = np.random.default_rng(seed)
    w = np.stack([np.bincount(rng.integers(0, len(uq), len(uq)), minlength=len(uq))
                  for _ in range(reps)]).astype(np.float64)
    total = w @ counts
    return {k: float(np.std((w @ s) / total, ddof=1)) for k, s in sums.items()}


def sign_test(first):
    """Is pBoN better than BoN at N = 6? Over the questions where the two choose differently:
    how often pBoN's choice has the higher human win rate, the exact two-sided sign test and
    the exact paired permutation (sign-flip) test of the mean difference."""
    diffs = np.array([f["pbon_rate"] - f["bon_rate"] for f in first if f["pbon"] != f["bon"]])
    m = len(diffs)
    better, worse = int(np.sum(diffs > 0)), int(np.sum(diffs < 0))
    k = better + worse
    tail = sum(math.comb(k, i) for i in range(min(better, worse) + 1)) / 2 ** k if k else 1.0
    sign_p = min(1.0, 2 * tail)
    observed = abs(diffs.sum())
    flips = [abs(sum(s * x for s, x in zip(signs, diffs)))
             for signs in itertools.product((1, -1), repeat=m)]
    perm_p = float(np.mean([f >= observed - 1e-12 for f in flips])) if m else 1.0
    return dict(questions=len(first), differ=m, pbon_better=better, bon_better=worse,
                ties=m - k, mean_diff_over_all=float(diffs.sum() / max(len(first), 1)),
                sign_p=sign_p, permutation_p=perm_p)


def crossfit_majority_agreement(d, z, phibar, questions, folds, mt):
    """How often the sign of the reward difference of two LLMs' answers to a question agrees
    with the human majority verdict there (non-tied majorities only), each question judged by
    the model fitted on the other folds' questions."""
    majority = human_majority(mt)
    fold_of = np.array([folds[q] for q in d.question])
    agree = []
    for k in sorted(set(folds.values())):
        tr = fold_of != k
        with fit(z[tr], d.y[tr], d.psi[tr]) as m:
            for q in [q for q in questions if folds[q] == k]:
                for a, b in itertools.combinations(MODELS, 2):
                    v = majority.get((q, a, b), 0)
                    if v == 0 or (q, a) not in phibar or (q, b) not in phibar:
                        continue
                    r = m.score(np.stack([phibar[(q, a)], phibar[(q, b)]]))["reward"]
                    agree.append(np.sign(r[0] - r[1]) == v)
    return dict(agreement=float(np.mean(agree)), n=len(agree))


# --- HH-RLHF ----------------------------------------------------------------------------------

def hh_design(phi_chosen, phi_rejected, seed):
    """z = phi(a1) - phi(a0) with a random side for the chosen answer (y = 1 when a1 is the
    chosen one); without it every label would be 1 and the fit would carry no information
    about calibration (the model has no intercept, so the orientation is only a labelling)."""
    rng = np.random.default_rng(seed)
    flip = rng.integers(0, 2, len(phi_chosen)).astype(bool)
    diff = phi_chosen.astype(np.float64) - phi_rejected.astype(np.float64)
    z = np.where(flip[:, None], -diff, diff)
    y = np.where(flip, 0.0, 1.0)
    return z, y


def hh_cross_fit(z, y, k, seed):
    """Held-out probabilities of the homogeneous model (d2 = 0), k random folds of pairs."""
    rng = np.random.default_rng(seed)
    fold = rng.permutation(len(y)) % k
    p = np.full(len(y), np.nan)
    failures = []
    for f in range(k):
        tr, te = fold != f, fold == f
        try:
            m = fit(z[tr], y[tr])
        except hr.HetrewardError as e:
            failures.append(f"fold {f}: {e.status_name}: {e.message}")
            continue
        with m:
            p[te] = sigmoid(z[te] @ m.theta)
    return p, failures


def reliability(p, y, bins=10):
    """Reliability diagram data: per equal-width bin of predicted probability, the mean
    prediction, the observed frequency and the count; plus the expected calibration error."""
    edges = np.linspace(0, 1, bins + 1)
    idx = np.clip(np.digitize(p, edges) - 1, 0, bins - 1)
    rows = []
    ece = 0.0
    for b in range(bins):
        sel = idx == b
        if sel.any():
            rows.append(dict(lo=float(edges[b]), hi=float(edges[b + 1]), n=int(sel.sum()),
                             mean_p=float(p[sel].mean()), freq=float(y[sel].mean())))
            ece += sel.mean() * abs(p[sel].mean() - y[sel].mean())
    return rows, float(ece)
