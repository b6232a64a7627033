#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Every C and C++ file in the repository is formatted as .clang-format says, and every
# source file carries its SPDX line (LICENSE). Prints the offenders; fails if any.
#   scripts/check-format.sh          check (CI)
#   scripts/check-format.sh --fix    reformat in place
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
if [ "${1:-}" = --fix ]; then
    clang-format -i "${sources[@]}"
    exit 0
fi
status=0
clang-format --dry-run -Werror "${sources[@]}" || status=1
# SPDX: C/C++, CMake, shell and Python sources, scripts without a suffix under .ci/.
mapfile -t all < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.sh' '*.py' '*.cmake' \
    '*CMakeLists.txt' '*.lua' '.ci/*')
for f in "${all[@]}"; do
    [ -f "$f" ] || continue
    head -3 "$f" | grep -q 'SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only' ||
        { echo "$f: no SPDX-License-Identifier line in its first lines"; status=1; }
done
[ $status = 0 ] && echo "format and SPDX lines: ${#sources[@]} C/C++ files, ${#all[@]} sources checked"
exit $status
