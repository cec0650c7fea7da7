#!/usr/bin/env bash
# update.sh KBC — regenerates the golden CUDA files after an intended change
# to the code generator (review the diff before committing it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
for f in "$here"/*.cu; do
  name=$(basename "$f" .cu)
  "$1" compile "$here/../../specs/examples/$name.kb" --emit cuda --target sm_90 > "$f"
done
