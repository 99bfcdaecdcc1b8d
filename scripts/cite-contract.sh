#!/usr/bin/env bash
# Points every citation of the product contract at docs/contract.md: "SPEC §N" becomes
# "docs/contract.md §N" in every tracked file (or in the given paths). Idempotent: a second run
# changes nothing. The pattern is spelt SPE[C] so that this file does not match itself.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z -- "$@" | xargs -0 grep -lZ 'SPE[C] §' -- | xargs -0 -r sed -i 's/SPE[C] §/docs\/contract.md §/g'
