#!/usr/bin/env bash
# Records every figure the interval rule decides, for a bit-identical before/after check of a
# refactor (issue 19, the one interval rule): fit with every interval method (wald, bootstrap,
# resized, auto) x every covariance kind, then inspect (text, JSON, --wald), fit --profile,
# score, compare (every difference method), select (bon, pbon) on fixed seeds, plus the model
# files' bytes (the fit's wall-clock seconds zeroed, and the CRC recomputed, since they differ
# between runs by design).
#
#   scripts/golden-rule.sh OUTDIR [HETREWARD_BINARY]     # default binary: target/release/hetreward
#   diff -r /tmp/rule-golden-before /tmp/rule-golden-after
#
# Everything printed is a function of the data, the options and the seeds: two runs of the same
# binary give identical directories.
set -euo pipefail
out=${1:?usage: golden-rule.sh OUTDIR [BINARY]}
bin=${2:-target/release/hetreward}
bin=$(realpath "$bin")
mkdir -p "$out"
out=$(realpath "$out")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Data: n = 300 comparisons, d1 = 3, d2 = 2, 30 clusters; answers, pairs and candidates.
python3 - <<'EOF'
import math, random
rng = random.Random(19)
theta, gamma = [1.0, -0.5, 0.25], [0.4, -0.3]
with open("train.csv", "w") as f:
    f.write("cluster,y,psi0,z1,z2,z3,psi1,psi2\n")
    for i in range(300):
        z = [rng.gauss(0, 1) for _ in theta]
        psi = [rng.choice([0.0, 1.0]), rng.gauss(0, 1)]
        sigma = 1.0 + sum(g * p for g, p in zip(gamma, psi))
        u = sigma * sum(t * x for t, x in zip(theta, z))
        y = 1 if rng.random() < 1 / (1 + math.exp(-u)) else 0
        f.write(",".join(map(repr, [i // 10, y, 1.0] + z + psi)) + "\n")
with open("phi.csv", "w") as f:
    f.write("phi1,phi2,phi3\n")
    for _ in range(20):
        f.write(",".join(repr(rng.gauss(0, 1)) for _ in range(3)) + "\n")
with open("pairs.csv", "w") as f:
    f.write("phi0_1,phi0_2,phi0_3,phi1_1,phi1_2,phi1_3\n")
    for _ in range(20):
        f.write(",".join(repr(rng.gauss(0, 1)) for _ in range(6)) + "\n")
with open("cand.csv", "w") as f:
    f.write("group,penalty,phi1,phi2,phi3\n")
    for g in range(12):
        for _ in range(16):
            f.write(",".join(map(repr, [g, 0.1 * rng.random()] + [rng.gauss(0, 2) for _ in range(3)])) + "\n")
EOF

# The model file with the wall-clock seconds zeroed and the CRC recomputed.
canonical() {
    python3 - "$1" "$2" <<'EOF'
import struct, sys, zlib
b = bytearray(open(sys.argv[1], "rb").read())
length = struct.unpack_from("<Q", b, 12)[0]
b[20 + 60:20 + 68] = bytes(8)
struct.pack_into("<I", b, 20 + length, zlib.crc32(bytes(b[20:20 + length])))
open(sys.argv[2], "wb").write(bytes(b))
EOF
}

for intervals in wald bootstrap resized auto; do
    for cov in expected observed robust cluster; do
        tag=$intervals-$cov
        reps=()
        [ "$intervals" = wald ] || reps=(--bootstrap-reps 40)
        "$bin" fit train.csv --out "$tag.hrm" --report "$tag.json" --intervals "$intervals" \
            --covariance "$cov" --seed 7 --threads 2 "${reps[@]}" >"$out/fit-$tag.txt" 2>&1
        # The report's seconds differ between runs by design.
        grep -v '"seconds"' "$tag.json" >"$out/report-$tag.json"
        canonical "$tag.hrm" "$out/model-$tag.hrm"
        m=$tag.hrm
        "$bin" inspect "$m" --json | grep -v '"seconds"' >"$out/inspect-$tag.json"
        "$bin" inspect "$m" --all-rows | grep -v -i 'seconds' >"$out/inspect-$tag.txt"
        "$bin" inspect "$m" --wald --json | grep -v '"seconds"' >"$out/inspect-wald-$tag.json"
        for alpha in 0.05 0.2; do
            "$bin" score "$m" phi.csv --json --alpha "$alpha" >"$out/score-$tag-$alpha.json"
            "$bin" score "$m" phi.csv --json --alpha "$alpha" --wald >"$out/score-wald-$tag-$alpha.json"
            for method in exact independent bound; do
                "$bin" compare "$m" pairs.csv --json --alpha "$alpha" --method "$method" \
                    >"$out/compare-$tag-$method-$alpha.json"
            done
            for policy in bon pbon; do
                "$bin" select "$m" cand.csv --json --alpha "$alpha" --policy "$policy" \
                    >"$out/select-$tag-$policy-$alpha.json"
                "$bin" select "$m" cand.csv --json --alpha "$alpha" --policy "$policy" --wald \
                    >"$out/select-wald-$tag-$policy-$alpha.json"
            done
        done
    done
done
# The profile-likelihood intervals (Wald model; the profile ignores the interval method).
"$bin" fit train.csv --out p.hrm --profile --seed 7 --threads 2 2>&1 \
    | grep -v -i 'seconds' >"$out/fit-profile.txt"
echo "golden-rule: $(ls "$out" | wc -l) files in $out"
