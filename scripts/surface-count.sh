#!/usr/bin/env bash
# Counts the crate's Rust surface (issue 19): `pub` items against `pub(crate)` items in src/,
# the public modules, and — with --api — the public API as rustdoc lists it (all.html).
#
#   scripts/surface-count.sh         # counts from the sources (grep, no build)
#   scripts/surface-count.sh --api   # also runs `cargo doc --no-deps` and lists every
#                                    # documented item (doc(hidden) items are not listed)
#
# An "item" is a fn / struct / enum / const / static / trait / type / mod declaration (fields,
# methods in trait impls and `use` re-exports are not counted). `pub` means exactly `pub`,
# not `pub(crate)` / `pub(super)`.
set -euo pipefail
cd "$(dirname "$0")/.."

kinds='((const[[:space:]]+)?(unsafe[[:space:]]+)?(extern[[:space:]]+"C"[[:space:]]+)?fn|struct|enum|const|static|trait|type|mod)[[:space:]]'
count() { grep -rEh "^[[:space:]]*$1[[:space:]]+$kinds" src --include='*.rs' | wc -l; }

echo "pub items:        $(count 'pub')"
echo "pub(crate) items: $(count 'pub\(crate\)')"
echo "pub(super) items: $(count 'pub\(super\)')"
echo "pub mod in src/lib.rs (public top-level modules): $(grep -cE '^pub mod ' src/lib.rs)"

if [[ "${1:-}" == "--api" ]]; then
    cargo doc --no-deps --lib -q
    all=target/doc/hetreward/all.html
    # all.html lists every documented public item as <a href="path/kind.Name.html">path::Name</a>.
    grep -oE '<a href="[^"]+\.html">[^<]+</a>' "$all" \
        | sed -E 's#<a href="([^/"]+/)*([a-z]+)\.[^"]+\.html">([^<]+)</a>#\2 \3#' \
        | sort -u > target/surface-api.txt
    echo "documented public items (rustdoc all.html): $(wc -l < target/surface-api.txt)"
    echo "documented public modules: $(find target/doc/hetreward -name index.html | wc -l)"
    cat target/surface-api.txt
fi
