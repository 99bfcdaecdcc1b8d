#!/usr/bin/env bash
# Bit-for-bit golden outputs of the estimator (issue 19): record them with one build, record
# them again with another, and diff.
#
#   scripts/golden-diff.sh record DIR        # build, then write every output under DIR
#   scripts/golden-diff.sh compare OLD NEW   # diff two recordings (exit 1 on any difference)
#
# A recording holds (1) `api.txt` from `tests/golden_dump.rs` (distributed driver, forced
# Newton variants, agd, profile intervals: every float in shortest round-trip form) and (2)
# the CLI's outputs on the golden datasets: `fit` with both solvers, every covariance kind,
# every interval method (bootstrap and resized seeded), `--profile`, random and explicit
# starts; `inspect`, `score`, `compare` (all methods), `select` (bon, pbon, `--wald`) as JSON.
# Model files are kept as bytes with the two fields that may differ between identical fits
# zeroed: the wall-clock seconds (payload offset 60) and the CRC-32 that covers it. Wall-clock
# seconds are removed from every JSON and text output the same way.
set -euo pipefail
cd "$(dirname "$0")/.."

normalise_model() { # model file -> bytes with the seconds and the CRC zeroed
    python3 - "$1" "$2" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[20 + 60:20 + 68] = bytes(8)
b[-4:] = bytes(4)
open(sys.argv[2], "wb").write(bytes(b))
EOF
}

strip_seconds() { # stdin -> stdout without wall-clock figures
    sed -E 's/"seconds": ?[-0-9.eE+]+/"seconds": X/g; s/[0-9.]+ ?s\b/Xs/g; s/seconds[ :=]+[-0-9.eE+]+/seconds X/g'
}

record() {
    local dir=$1
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    cargo build --release --quiet
    HETREWARD_GOLDEN_DIR="$dir" cargo test --release --quiet --test golden_dump -- --ignored >/dev/null
    local bin=${CARGO_TARGET_DIR:-target}/release/hetreward
    fit() { # name data [fit options...]
        local name=$1 data=$2
        shift 2
        "$bin" fit "$dir/$data.csv" --out "$dir/$name.hrm" --report "$dir/$name.report.json" "$@" \
            --threads 2 2>"$dir/$name.fit.err" | strip_seconds >"$dir/$name.fit.out" || echo "exit $?" >>"$dir/$name.fit.out"
        strip_seconds <"$dir/$name.report.json" >"$dir/$name.report.json.n" && rm "$dir/$name.report.json"
        normalise_model "$dir/$name.hrm" "$dir/$name.hrm.n" && rm "$dir/$name.hrm"
        strip_seconds <"$dir/$name.fit.err" >"$dir/$name.fit.err.n" && rm "$dir/$name.fit.err"
    }
    query() { # name queries-prefix (the model is $dir/$name.hrm.n, readable as a model)
        local name=$1 q=$2 m="$dir/$1.hrm.q"
        cp "$dir/$name.hrm.n" "$m"
        python3 - "$m" <<'EOF'
import sys, zlib, struct
b = bytearray(open(sys.argv[1], "rb").read())
b[-4:] = struct.pack("<I", zlib.crc32(bytes(b[20:-4])))
open(sys.argv[1], "wb").write(bytes(b))
EOF
        {
            "$bin" inspect "$m" --json | strip_seconds
            for w in "" --wald; do
                "$bin" score "$m" "$dir/$q.phi.csv" --json $w
                for method in exact independent bound; do
                    "$bin" compare "$m" "$dir/$q.pairs.csv" --json --method "$method" $w
                done
                for policy in bon pbon; do
                    "$bin" select "$m" "$dir/$q.cands.csv" --json --policy "$policy" $w
                    "$bin" select "$m" "$dir/$q.cands.csv" --json --policy "$policy" --alpha 0.1 $w
                done
            done
        } >"$dir/$name.queries.json" 2>&1
        rm "$m"
    }
    for cov in expected observed robust cluster; do
        fit "small.newton.$cov" small --covariance "$cov" --profile --all-rows
        query "small.newton.$cov" small
        fit "small.agd.$cov" small --solver agd --covariance "$cov" --max-iter 3000
        query "small.agd.$cov" small
        for iv in bootstrap resized auto; do
            fit "small.$iv.$cov" small --covariance "$cov" --intervals "$iv" --bootstrap-reps 40 --seed 7
            query "small.$iv.$cov" small
        done
    done
    fit small.random small --init random --seed 5 --restarts 3
    fit small.explicit small --theta0 0.1,0.2,0.3 --gamma0 0.1,-0.1 --restarts 0
    fit small.tol small --tol 1e-12 --max-iter 7
    for seed in 0 1 2 3; do
        fit "paper$seed.bootstrap" "paper$seed" --intervals bootstrap --seed "$seed"
        query "paper$seed.bootstrap" paper
        fit "paper$seed.auto" "paper$seed" --intervals auto --seed "$seed" --profile
        query "paper$seed.auto" paper
    done
    for seed in 0 1; do
        fit "hd$seed.resized" "hd$seed" --intervals resized --seed "$seed"
        query "hd$seed.resized" hd
        fit "hd$seed.bootstrap" "hd$seed" --intervals bootstrap --seed "$seed" --bootstrap-reps 50 --covariance robust
        query "hd$seed.bootstrap" hd
    done
    fit cg.wald cg
    query cg.wald cg
    fit cg.bootstrap cg --intervals bootstrap --bootstrap-reps 24 --seed 3 --covariance observed
    query cg.bootstrap cg
    fit cg.resized cg --intervals resized --bootstrap-reps 20 --seed 4
    query cg.resized cg
    fit cg.agd cg --solver agd --max-iter 200
    rm -f "$dir"/*.csv
    echo "recorded $(ls "$dir" | wc -l) files under $dir"
}

case "${1:-}" in
record) record "$2" ;;
compare)
    if diff -r "$2" "$3" >/tmp/golden-diff.out; then
        echo "identical: $(ls "$2" | wc -l) files, every byte"
    else
        echo "DIFFERENT:"
        head -50 /tmp/golden-diff.out
        exit 1
    fi
    ;;
*)
    sed -n 2,15p "$0"
    exit 2
    ;;
esac
