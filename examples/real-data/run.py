#!/usr/bin/env python3
"""The paper's pipeline on real human judgments (MT-Bench, HH-RLHF): embeddings, fits through
the hetreward Python binding, a Markdown report with PNG figures.

    HETREWARD_LIB=/path/to/libhetreward.so python examples/real-data/run.py [--subset ci]

(`bash examples/real-data/run.sh` sets everything up and runs this.) Outputs in --out: report.md,
*.png, results.json (every number of the report) and export/*.safetensors (the exact training
sets of the main fits, for `hetreward fit`).
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

# Single-threaded BLAS (set before numpy loads it): the embeddings run in worker processes
# instead, and the matrices of one text are too small for BLAS threads to pay on 2 shared cores.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
try:
    import hetreward  # noqa: F401  (an installed binding wins)
except ImportError:
    sys.path.insert(0, str(ROOT / "bindings" / "python"))
sys.path.insert(0, str(HERE))

import hetreward as hr  # noqa: E402

from realdata import analysis as an  # noqa: E402
from realdata import data, embed, figures, report  # noqa: E402

# The documented subsets. "ci": every other MT-Bench question (40 of 80, all 8 categories) and
# the first 600 HH-RLHF pairs: about a third of the embedding work of "full".
SUBSETS = {
    "full": dict(questions=None, hh_pairs=None, dims=[2, 4, 8, 16, 32, 64, 128],
                 hh_dims=[8, 16, 32, 64, 128, 256]),
    "ci": dict(questions=set(range(82, 161, 2)), hh_pairs=600, dims=[4, 8, 16, 32],
               hh_dims=[8, 16, 32, 64]),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--subset", choices=sorted(SUBSETS), default="full")
    ap.add_argument("--out", type=Path, default=ROOT / "target" / "real-data" / "report")
    ap.add_argument("--data", type=Path, default=None,
                    help="real-data folder (default: HETREWARD_REAL_DATA, else the repository's "
                         "data/real)")
    ap.add_argument("--cache", type=Path, default=None,
                    help="embedding cache (default: HETREWARD_EMBED_CACHE or "
                         "~/.cache/hetreward/embeddings)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="processes computing embeddings (default: all cores)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20261123)
    args = ap.parse_args(argv)
    sub = SUBSETS[args.subset]
    t_start = time.time()
    timings = {}

    def lap(name, t0):
        timings[name] = round(time.time() - t0, 1)
        print(f"[{timings[name]:7.1f} s] {name}", flush=True)

    folder = data.data_dir(args.data)
    out = args.out
    (out / "export").mkdir(parents=True, exist_ok=True)

    # --- data and embeddings ---
    t0 = time.time()
    mt = data.load_mtbench(folder, sub["questions"])
    mt_all_rows = data.load_mtbench(folder) if sub["questions"] else mt
    hh = data.load_hh(folder, sub["hh_pairs"])
    lap("read data", t0)
    t0 = time.time()
    model = embed.MiniLM()
    cache = embed.EmbeddingCache(args.cache or embed.default_cache_dir(), model, args.workers)
    keys = sorted(mt.texts)
    mt_emb = cache.embed([mt.texts[k] for k in keys])
    hh_emb = cache.embed([t for pair in hh for t in pair])
    lap(f"embeddings ({cache.computed} computed, the rest from {cache.path})", t0)

    # --- MT-Bench ---
    t0 = time.time()
    d = an.mt_arrays(mt)
    pca = an.PCA(mt_emb)
    maxdim = max(sub["dims"])
    full_phi = dict(zip(keys, pca.transform(mt_emb, maxdim)))
    folds = an.question_folds(mt.questions, args.folds, args.seed)
    scan = an.dimension_scan(full_phi, d, folds, sub["dims"])
    k = an.choose_dim(scan)
    phi = {key: v[:k] for key, v in full_phi.items()}
    z = an.mt_z(d, phi)
    lap(f"MT-Bench dimension scan (chosen d1 = {k})", t0)

    t0 = time.time()
    m_exp = an.fit(z, d.y, d.psi, d.cluster, "expected")
    m_clu = an.fit(z, d.y, d.psi, d.cluster, "cluster")
    m_homo = an.fit(z, d.y)
    from safetensors.numpy import save_file
    save_file({"z": z, "psi0": np.ones(len(d.y)), "psi": d.psi, "y": d.y, "cluster": d.cluster},
              str(out / "export" / "mtbench_train.safetensors"))
    lap("MT-Bench fits (expected, cluster, homogeneous)", t0)
    # The calibrated intervals: the library picks the method for this n and d1 (auto) and the
    # model carries it to every consumer; seeded, so the report is deterministic.
    t0 = time.time()
    m_cal = an.fit(z, d.y, d.psi, d.cluster, "expected", intervals="auto", seed=args.seed)
    lap(f"MT-Bench calibrated intervals ({m_cal.intervals()['method']}, "
        f"B = {m_cal.intervals()['reps']})", t0)
    # The deployable reward model and, beside it, the feature map it was fitted on (raw MiniLM
    # embedding -> PCA coordinates): a consumer (examples/llama-cpp) computes exactly these
    # features from a raw embedding without re-implementing the pipeline.
    m_cal.save(str(out / "export" / "mtbench_reward.hrm"))
    pca.save_projection(out / "export" / "mtbench_reward.projection.safetensors", k,
                        embedding_model=model.key, text=data.TURN_TEXT)
    t0 = time.time()
    rat = an.rationality(m_exp, m_clu, m_cal)
    lr = 2 * len(d.y) * (m_homo.report.neg_loglik - m_exp.report.neg_loglik)
    p_het, f_het = an.cross_fit(z, d, folds, True)
    p_hom, f_hom = an.cross_fit(z, d, folds, False)
    ident = an.identity_features(d)
    p_id, f_id = an.cross_fit(ident, d, folds, False)
    # d1 chosen by nested cross-validation: the reported accuracy never chose d1.
    p_nhet, d_nhet, f_nhet = an.nested_cross_fit(full_phi, d, folds, sub["dims"], args.seed, True)
    p_nhom, d_nhom, f_nhom = an.nested_cross_fit(full_phi, d, folds, sub["dims"], args.seed, False)
    p_triv = an.trivial_cross_fit(d, folds)
    held = {name: an.held_out_scores(p[~np.isnan(p)], d.y[~np.isnan(p)],
                                     d.question[~np.isnan(p)])
            for name, p in (("hetero", p_het), ("homo", p_hom), ("llm_identity", p_id),
                            ("hetero_nested", p_nhet), ("homo_nested", p_nhom),
                            ("always_b", p_triv))}
    held["nested_dims"] = dict(hetero=d_nhet, homo=d_nhom)
    held["failures"] = f_het + f_hom + f_id + f_nhet + f_nhom
    held["majority_b"] = float(np.mean(d.y))
    lap("MT-Bench cross-fitted predictions (and nested choice of d1)", t0)

    # The judges as clusters: the library's heterogeneity diagnostic (the evidence about
    # gamma), the exact cluster jackknife beside the one-step one auto picks, and a
    # judge-resampling bootstrap (each resample a library fit) as the outside yardstick.
    t0 = time.time()
    het = an.heterogeneity(m_exp, z, d)
    m_jk = an.fit(z, d.y, d.psi, d.cluster, "expected", intervals="cluster-jackknife",
                  seed=args.seed)
    rat["cluster_jackknife"] = an.rationality(m_exp, m_clu, m_jk)["calibrated"]
    judge_boot = an.judge_bootstrap(z, d, 400, args.seed)
    m_jk.close()
    lap("MT-Bench judges as clusters (diagnostic, exact jackknife, judge bootstrap)", t0)

    t0 = time.time()
    phibar = an.answer_phi(phi, mt.questions)
    pairs = an.compare_llms(m_exp, phibar, mt.questions, mt)
    rank, common = an.ranking({"expected": m_exp, "cluster": m_clu, "calibrated": m_cal},
                              phibar, mt.questions, mt)
    tau = an.kendall_tau([r["rank"] for r in rank], [r["human_rank"] for r in rank])
    bon_table, bon_first = an.best_of_n(d, z, phibar, mt.questions, folds, mt)
    bon_test = an.sign_test(bon_first)
    majority_cf = an.crossfit_majority_agreement(d, z, phibar, mt.questions, folds, mt)
    lap("LLM comparisons and Best-of-N", t0)

    # --- HH-RLHF ---
    t0 = time.time()
    hh_chosen, hh_rejected = hh_emb[0::2], hh_emb[1::2]
    hh_pca = an.PCA(hh_emb)
    hh_scan = []
    for kk in sub["hh_dims"]:
        zz, yy = an.hh_design(hh_pca.transform(hh_chosen, kk), hh_pca.transform(hh_rejected, kk),
                              args.seed)
        p, fails = an.hh_cross_fit(zz, yy, args.folds, args.seed)
        ok = ~np.isnan(p)
        hh_scan.append(dict(dim=kk, failures=fails,
                            scores=an.held_out_scores(p[ok], yy[ok]) if ok.any() else None))
    hh_k = min((r for r in hh_scan if not r["failures"]),
               key=lambda r: r["scores"]["log_loss"])["dim"]
    hz, hy = an.hh_design(hh_pca.transform(hh_chosen, hh_k), hh_pca.transform(hh_rejected, hh_k),
                          args.seed)
    hp, _ = an.hh_cross_fit(hz, hy, args.folds, args.seed)
    hh_held = an.held_out_scores(hp, hy)
    # "chosen beats rejected": the held-out probability of the chosen side above 1/2.
    p_chosen = np.where(hy > 0.5, hp, 1 - hp)
    hh_held["chosen_beats_rejected"] = float(np.mean(p_chosen > 0.5))
    rel_rows, ece = an.reliability(hp, hy)
    m_hh = an.fit(hz, hy)
    save_file({"z": hz, "psi0": np.ones(len(hy)), "y": hy},
              str(out / "export" / "hh_train.safetensors"))
    lap(f"HH-RLHF (chosen d1 = {hh_k})", t0)

    # --- figures, results, report ---
    t0 = time.time()
    figs = {
        "forest": figures.forest(rank, f"calibrated ({rat['calibrated']['intervals']['method']}"
                                       f", B = {rat['calibrated']['intervals']['reps']})",
                                 out / "llm_forest.png"),
        "rationality": figures.rationality(rat, out / "rationality.png"),
        "bon": figures.bon(bon_table, out / "bon_pbon.png"),
        "reliability": figures.reliability(rel_rows, ece, hh_held["accuracy"],
                                           out / "hh_reliability.png"),
        "dimensions": figures.dimensions(scan, k, out / "mtbench_dimensions.png"),
    }
    lap("figures", t0)
    timings["total"] = round(time.time() - t_start, 1)
    results = dict(
        subset=args.subset, seed=args.seed, folds=args.folds,
        environment=dict(python=platform.python_version(), numpy=np.__version__,
                         hetreward=hr.LIBRARY_VERSION, embedding_model=model.key),
        data=dict(folder=str(folder), sha256=data.SHA256,
                  mtbench=dict(csv_rows=mt_all_rows.rows,
                               unique_judgments_all=len(mt_all_rows.judgments),
                               judgments=len(mt.judgments), ties_dropped=d.ties,
                               fitted=len(d.y), questions=len(mt.questions),
                               judges=len(d.judges),
                               experts=sum(j.startswith("expert") for j in d.judges),
                               expert_judgments=int(d.psi.sum()),
                               answers_embedded=len(keys)),
                  hh=dict(pairs=len(hh))),
        mtbench=dict(dims=sub["dims"], scan=scan, chosen_dim=k,
                     explained_variance=float(pca.explained[:k].sum()),
                     fit_expected=an.model_params(m_exp), fit_cluster=an.model_params(m_clu),
                     fit_homo=an.model_params(m_homo), rationality=rat,
                     lr_statistic=lr, held_out=held, pairs=pairs, ranking=rank,
                     ranking_questions=common, kendall_tau_vs_human=tau,
                     majority_agreement_crossfit=majority_cf,
                     bon=bon_table, bon_choices=bon_first, bon_test=bon_test,
                     heterogeneity=het, judge_bootstrap=judge_boot),
        hh=dict(dims=sub["hh_dims"], scan=hh_scan, chosen_dim=hh_k, held_out=hh_held,
                reliability=rel_rows, ece=ece, fit=an.model_params(m_hh)),
        figures={name: str(p.name) for name, p in figs.items()},
        timings=timings,
    )
    (out / "results.json").write_text(json.dumps(results, indent=1, default=_json_default))
    (out / "report.md").write_text(report.render(results))
    # The headline table of docs/examples.md, as the code produces it (on the full data it must
    # be the page's: tests/test_real_data.py checks).
    (out / "headline.md").write_text("\n".join(report.headline(results)) + "\n")
    for m in (m_exp, m_clu, m_cal, m_homo, m_hh):
        m.close()
    print(f"report: {out / 'report.md'} ({timings['total']} s)")
    return 0


def _json_default(x):
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    if isinstance(x, tuple):
        return list(x)
    raise TypeError(type(x))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    sys.exit(main())
