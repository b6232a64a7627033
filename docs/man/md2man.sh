#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# md2man.sh SRC.md OUT TITLE: roff from a page of this folder. The pages open with a
# YAML block (for other renderers); go-md2man wants a "% title" line instead.
set -eu
{
    echo "% $3"
    awk 'NR == 1 && /^---$/ { fm = 1; next } fm && /^---$/ { fm = 0; next } !fm' "$1"
} | go-md2man > "$2"
