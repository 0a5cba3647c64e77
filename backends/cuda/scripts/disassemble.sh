#!/bin/bash
# The sm_90 SASS of one CUDA source of the backend, on a machine without a
# GPU: compiles it to a cubin with the build's own nvcc command line and
# disassembles that with nvdisasm. nvcc 13.0 ships no nvdisasm here, so the
# script takes the one of Debian's nvidia-cuda-toolkit (CUDA 11.8, non-free),
# unpacked into a cache folder without installing it. That nvdisasm decodes
# sm_90 code but not the ELF header of CUDA 13's cubins (ABI version 8), so
# the cubin's header is rewritten to the older form first; the code sections
# are unchanged. That nvdisasm leaves out the instructions it cannot decode
# (newer ones such as VIADD): their offsets are missing from the listing,
# and sass_mix.py counts them from the gaps.
#   backends/cuda/scripts/disassemble.sh BUILD SOURCE.cu > out.sass
# BUILD: a Ninja build folder configured with -DFHELIUM_BUILD_CUDA=ON;
# SOURCE: a path under backends/cuda/src (e.g. backends/cuda/src/ntt.cu).
# backends/cuda/scripts/sass_mix.py summarizes the output per kernel.
set -euo pipefail
build=$(realpath "$1")
source=$(realpath "$2")
tools=${FHELIUM_NVDISASM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fhelium/cuda-11.8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ ! -x $tools/usr/bin/nvdisasm ]]; then
  # Debian's non-free component, in a private apt state: the system's
  # sources and package lists stay as they are.
  mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$tools"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm non-free" \
    > "$work/apt/sources.list"
  apt_options=(-o Dir::Etc::sourcelist="$work/apt/sources.list" -o Dir::Etc::sourceparts=-
    -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt/cache" -o APT::Sandbox::User=root)
  apt-get "${apt_options[@]}" update > /dev/null
  (cd "$work" && apt-get "${apt_options[@]}" download nvidia-cuda-toolkit > /dev/null)
  dpkg -x "$work"/nvidia-cuda-toolkit_*.deb "$tools"
fi

# The build's command for SOURCE's object file, made to write a cubin.
# CMake names it <target>.dir/<path under backends/cuda>.o.
object=$(ninja -C "$build" -t targets all | awk -F: -v want=".dir/${source#*/backends/cuda/}.o" \
  '!found && substr($1, length($1) - length(want) + 1) == want { print $1; found = 1 }')
if [[ -z $object ]]; then
  echo "disassemble.sh: no object file for $source in $build" >&2
  exit 1
fi
command=$(ninja -C "$build" -t commands "$object" | tail -1)
generate='--generate-code=arch=compute_90,code=[compute_90,sm_90]'
if [[ $command != *"$generate"* ]]; then
  echo "disassemble.sh: $build does not build for sm_90 alone (configure with -DCMAKE_CUDA_ARCHITECTURES=90)" >&2
  exit 1
fi
command=${command/"$generate"/-arch=sm_90}
command=$(sed -E 's/ -MD -MT [^ ]+ -MF [^ ]+//; s/ -c / -cubin /; s/ -o [^ ]+$//' <<< "$command")
(cd "$build" && eval "$command -o '$work/code.cubin'")

# CUDA 13's header -> CUDA 11's: OS ABI 0x33, ABI version 7, e_flags with
# the SM in the low byte (sm_90, 64-bit addresses, unified textures).
python3 - "$work/code.cubin" << 'EOF'
import struct, sys
path = sys.argv[1]
elf = bytearray(open(path, "rb").read())
if elf[7] != 0x33 or elf[8] != 7:
    if (struct.unpack_from("<I", elf, 48)[0] >> 8) & 0xFF != 90:
        sys.exit("disassemble.sh: the cubin is not for sm_90")
    elf[7], elf[8] = 0x33, 7
    struct.pack_into("<I", elf, 48, 0x005A055A)
open(path, "wb").write(elf)
EOF
"$tools/usr/bin/nvdisasm" -c "$work/code.cubin"
