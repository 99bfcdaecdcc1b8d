"""Reading the two real preference data sets vendored in the repository (data/real/, see its
PROVENANCE.md): MT-Bench human judgments and HH-RLHF harmless-base test."""

import ast
import csv
import gzip
import hashlib
import io
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

MTBENCH_FILE = "mtbench_human_judgments.zip"
HH_FILE = "hh_rlhf_harmless_base_test.jsonl.gz"
SHA256 = {
    MTBENCH_FILE: "cc2e8b6adabafb04e1af026bdd3d360a82d44aa4aebc189e988b9fa6ec55b47c",
    HH_FILE: "ebfaaed21162a4de120ae85366075b34425e2a6303fac59b99555002f7016f03",
}
MODELS = ["alpaca-13b", "claude-v1", "gpt-3.5-turbo", "gpt-4", "llama-13b", "vicuna-13b-v1.2"]


#: The vendored copy: data/real/ from the repository root.
VENDORED = Path(__file__).resolve().parents[3] / "data" / "real"


def data_dir(explicit=None):
    """The real-data folder: `explicit`, else HETREWARD_REAL_DATA, else the repository's
    data/real/. Exits loudly if a file is missing or its sha256 differs from the vendored one's
    (data/real/PROVENANCE.md)."""
    folder = Path(explicit or os.environ.get("HETREWARD_REAL_DATA") or VENDORED)
    for name, digest in SHA256.items():
        path = folder / name
        if not path.is_file():
            raise SystemExit(f"real data missing: {path} not found (the repository ships both files "
                             f"in {VENDORED}; HETREWARD_REAL_DATA or --data must name a folder "
                             f"holding {MTBENCH_FILE} and {HH_FILE})")
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != digest:
            raise SystemExit(f"real data changed: {path} has sha256 {got}, expected {digest} "
                             f"(data/real/PROVENANCE.md; restore it with `git checkout -- "
                             f"data/real` or point HETREWARD_REAL_DATA at an unchanged copy)")
    return folder.resolve()


@dataclass
class MTBench:
    """Unique human judgments and the answers' texts.

    `judgments`: dicts with question (int), turn (1 or 2), model_a, model_b, judge, expert
    (bool), winner ("model_a" / "model_b" / "tie"), category. `texts[(question, model, turn)]`
    is the text embedded for that answer: the turn's user question and the model's answer.
    """
    judgments: list
    texts: dict
    questions: list
    duplicates: int = 0
    rows: int = 0
    categories: dict = field(default_factory=dict)


#: The text embedded for one answer at one turn (also written beside the exported model, so a
#: consumer embeds a new answer the same way).
TURN_TEXT = "{question}\n\n{answer}"


def _turn_text(conversation, turn):
    """The text embedded for one answer at one turn: that turn's question, then the answer."""
    conv = ast.literal_eval(conversation)
    (question, r1), (answer, r2) = conv[2 * (turn - 1)], conv[2 * (turn - 1) + 1]
    assert r1 == "user" and r2 == "assistant", (r1, r2)
    return TURN_TEXT.format(question=question, answer=answer)


def load_mtbench(folder, questions=None):
    """MT-Bench human judgments, deduplicated on (question_id, model_a, model_b, judge_x, turn_x)
    as the data's README says (the file repeats rows). `questions`: keep only these ids."""
    with zipfile.ZipFile(Path(folder) / MTBENCH_FILE) as z:
        with z.open("human_gpt_comparison.csv") as raw:
            rows = list(csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")))
    seen = {}
    texts = {}
    categories = {}
    for r in rows:
        q, turn = int(r["question_id"]), int(r["turn_x"])
        if questions is not None and q not in questions:
            continue
        key = (q, r["model_a"], r["model_b"], r["judge_x"], turn)
        if key in seen:
            if seen[key]["winner"] != r["winner_x"]:
                raise ValueError(f"conflicting duplicate judgments for {key}")
            continue
        judge = r["judge_x"]
        kind = judge.split("_")[0]
        if kind not in ("expert", "author") or r["winner_x"] not in ("model_a", "model_b", "tie"):
            raise ValueError(f"unexpected row: judge {judge!r}, winner {r['winner_x']!r}")
        seen[key] = dict(question=q, turn=turn, model_a=r["model_a"], model_b=r["model_b"],
                         judge=judge, expert=kind == "expert", winner=r["winner_x"],
                         category=r["category"])
        categories[q] = r["category"]
        for side in ("a", "b"):
            tkey = (q, r[f"model_{side}"], turn)
            text = _turn_text(r[f"conversation_{side}_x"], turn)
            if texts.setdefault(tkey, text) != text:
                raise ValueError(f"two different answers for {tkey}")
    judgments = sorted(seen.values(), key=lambda j: (j["question"], j["turn"], j["model_a"],
                                                     j["model_b"], j["judge"]))
    return MTBench(judgments=judgments, texts=texts, questions=sorted(categories),
                   duplicates=len(rows) - len(judgments) if questions is None else 0,
                   rows=len(rows), categories=categories)


def _last_exchange(dialogue):
    """The last human turn and the final assistant reply of an HH-RLHF dialogue: the part that
    differs between chosen and rejected (the earlier turns are shared, and a 256-token window
    over the whole dialogue would often cut the final reply off)."""
    cut = dialogue.rfind("\n\nAssistant:")
    human = dialogue.rfind("\n\nHuman:", 0, cut)
    return dialogue[max(human, 0):].strip()


def load_hh(folder, limit=None):
    """HH-RLHF harmless-base test pairs as (chosen_text, rejected_text), first `limit` pairs."""
    pairs = []
    with gzip.open(Path(folder) / HH_FILE, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            pairs.append((_last_exchange(r["chosen"]), _last_exchange(r["rejected"])))
            if limit and len(pairs) >= limit:
                break
    return pairs
