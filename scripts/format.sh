#!/usr/bin/env bash
# Reformats every first-party C file in place with the committed .clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -co --exclude-standard -- '*.c' '*.h' | grep -vE '^(build|proto/gen)' | xargs -r clang-format -i --style=file
