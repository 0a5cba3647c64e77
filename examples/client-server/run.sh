#!/usr/bin/env bash
# A client/server run in three processes and three folders: the client makes
# keys and encrypts, the server computes with evaluation keys only (its folder
# never holds the secret key), the client decrypts and compares with the
# calculation in double precision.
#
#   examples/client-server/run.sh FHELIUM_TOOL [BACKENDS] [WORK_DIR]
#
# BACKENDS is a comma-separated list (default: cpu): the server runs once on
# each, and their output ciphertexts must be the same bytes (cpu is the
# oracle: a ciphertext made on one backend and loaded on another decrypts to
# the same bits).
set -euo pipefail
fhelium=$(realpath "$1")
backends=${2:-cpu}
work=${3:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
pipeline=$here/pipeline.yaml
client=$work/client
server=$work/server
rm -rf "$client" "$server"
mkdir -p "$client" "$server/keys"

echo "== client: keys for the pipeline, and the server's copy without the secret key"
"$fhelium" keygen --for "$pipeline" --out "$client/keys"
for f in "$client"/keys/*; do
  [ "$(basename "$f")" = secret.key ] || cp "$f" "$server/keys/"
done
if [ -e "$server/keys/secret.key" ]; then echo "the server's folder holds the secret key" >&2; exit 1; fi

echo "== client: encrypt x"
awk 'BEGIN { for (i = 0; i < 8192; i++) printf "%.17g\n", sin(0.37 * i) * 0.95 }' > "$client/x.csv"
"$fhelium" encrypt --public-key "$client/keys/public.key" --in "$client/x.csv" --out "$client/x.ct"
cp "$client/x.ct" "$server/x.ct"

first=""
for backend in ${backends//,/ }; do
  echo "== server ($backend): y from x, with evaluation keys only"
  (cd "$server" && "$fhelium" run "$pipeline" --backend "$backend" --keys keys --input x=x.ct \
     --output "y=y.$backend.ct" --output "report.$backend.json" -q)
  if [ -z "$first" ]; then
    first=$backend
  elif ! cmp -s "$server/y.$first.ct" "$server/y.$backend.ct"; then
    echo "the $backend server's y differs from the $first server's" >&2
    exit 1
  else
    echo "   y.$backend.ct is byte-identical to y.$first.ct"
  fi
done

echo "== client: decrypt y and compare with x^2 + rotate(x^2, 1) in double precision"
cp "$server/y.$first.ct" "$client/y.ct"
"$fhelium" decrypt --secret-key "$client/keys/secret.key" --in "$client/y.ct" --out "$client/y.csv"
awk -F, -v bound=1e-6 '
  NR == FNR { x[FNR - 1] = $1; n = FNR; next }
  FNR > 1 { i = $1; want = x[i] ^ 2 + x[(i + 1) % n] ^ 2; d = $2 - want; if (d < 0) d = -d; if (d > worst) worst = d; count++ }
  END {
    printf "client/server: %d slots, max error %.3g (bound %g): %s\n", count, worst, bound, (count == n && worst < bound) ? "ok" : "FAILED"
    exit !(count == n && worst < bound)
  }' "$client/x.csv" "$client/y.csv"
