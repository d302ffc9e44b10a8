#!/usr/bin/env bash
# Fuzz smoke: builds every fuzz target, replays the saved regressions, then fuzzes each target
# for a few seconds from its seed corpus. Exits non-zero on any crash or oracle failure.
#
#   bash fuzz/smoke.sh                     # 5 s per target
#   FUZZ_SMOKE_SECONDS=30 bash fuzz/smoke.sh
#   FUZZ_BUILD_ONLY=1 bash fuzz/smoke.sh   # build the targets, run nothing
#   FUZZ_SKIP_BUILD=1 bash fuzz/smoke.sh   # run targets built before
#   FUZZ_PROFILE=release bash fuzz/smoke.sh  # the long runs' profile (default: smoke)
#
# Needs only stable Rust and cargo: the targets are built the way `cargo fuzz build` builds
# them (libFuzzer's coverage instrumentation passed as rustc flags, for the target triple only
# so build scripts stay uninstrumented), so cargo-fuzz need not be installed; `cargo fuzz run`
# works on the same targets for long runs (docs/fuzzing.md). The targets depend only on the
# pure core crate, so the build is small.
# Build output goes to fuzz/target (git-ignored); the corpus the run grows goes to a temporary
# directory, so the seed corpora in fuzz/corpus stay as committed. docs/fuzzing.md has the
# long runs and what each oracle checks. FUZZ_SKIP (comma-separated check names, see the
# targets) is passed through but never set here.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
seconds="${FUZZ_SMOKE_SECONDS:-5}"
# Every [[bin]] in fuzz/Cargo.toml is a target; each must have committed seeds, so a run on a
# clean checkout (where grown corpora do not exist) fuzzes the same starting points as here.
mapfile -t targets < <(awk '/^\[\[bin\]\]/{b=1;next} b&&/^name *=/{gsub(/.*= *"|"/,"");print;b=0}' "$here/Cargo.toml")
for t in "${targets[@]}"; do
    if [ -z "$(git -C "$here" ls-files "corpus/$t/seed-*")" ]; then
        echo "fuzz smoke: $t: no committed seed corpus (fuzz/corpus/$t/seed-*)"
        exit 1
    fi
done
triple="$(rustc -vV | sed -n 's/^host: //p')"
# The `smoke` profile (fuzz/Cargo.toml): optimised at level 1, so the smoke builds quickly.
profile="${FUZZ_PROFILE:-smoke}"
bin="$here/target/$triple/$profile"

if [ "${FUZZ_SKIP_BUILD:-0}" != 1 ]; then
    # What `cargo fuzz build --sanitizer none --debug-assertions` passes: no sanitizer (the
    # gateway forbids unsafe code, and the oracles are assertions); debug assertions on, so
    # arithmetic overflow panics too.
    flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
    flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
    flags+=" -Cllvm-args=-sanitizer-coverage-pc-table"
    flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares"
    flags+=" -Cllvm-args=-sanitizer-coverage-stack-depth"
    flags+=" --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
    (cd "$here" && RUSTFLAGS="$flags" cargo build --profile "$profile" --locked --target "$triple" --bins)
fi
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0
passed=0
for t in "${targets[@]}"; do
    mkdir -p "$work/$t" "$work/artifacts/$t"
    if [ -d "$here/regressions/$t" ] && [ -n "$(ls -A "$here/regressions/$t")" ]; then
        echo "fuzz smoke: $t: replaying regressions"
        if ! "$bin/$t" -artifact_prefix="$work/artifacts/$t/" "$here/regressions/$t"/* \
            >"$work/$t.replay.log" 2>&1; then
            echo "fuzz smoke: $t: a saved regression fails again:"
            grep -A4 -m1 "panicked" "$work/$t.replay.log" || tail -20 "$work/$t.replay.log"
            failed=$((failed + 1))
            continue
        fi
    fi
    # Cost targets: an input slower than its time-out is a finding (bounded work on any
    # shape), with room for long inputs.
    limits=(-timeout=10)
    case "$t" in
        answer_cost) limits=(-timeout=2 -max_len=65536) ;;
    esac
    echo "fuzz smoke: $t: ${seconds}s"
    if ! "$bin/$t" -max_total_time="$seconds" "${limits[@]}" -rss_limit_mb=2048 \
        -artifact_prefix="$work/artifacts/$t/" "$work/$t" "$here/corpus/$t" \
        >"$work/$t.log" 2>&1; then
        echo "fuzz smoke: $t: FAILED"
        grep -A4 -m1 "panicked" "$work/$t.log" || tail -30 "$work/$t.log"
        for a in "$work/artifacts/$t"/*; do
            [ -e "$a" ] || continue
            mkdir -p "$here/artifacts/$t"
            cp "$a" "$here/artifacts/$t/"
            echo "fuzz smoke: $t: input saved as fuzz/artifacts/$t/$(basename "$a")"
        done
        failed=$((failed + 1))
        continue
    fi
    grep -E '^#[0-9]+.*DONE' "$work/$t.log" | tail -1 | sed "s/^/fuzz smoke: $t: /"
    passed=$((passed + 1))
done
echo "fuzz-smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
