#!/usr/bin/env python3
"""Static instruction mix of kernels in nvdisasm output (disassemble.sh).

For each kernel whose demangled name matches --kernel: its instruction
slots, FP64 instructions (DADD, DFMA, DMUL), and with --sections the same
for each stretch of code that ends at a barrier (BAR) or an EXIT, or that
starts at the label after an EXIT (another path: the FpArith and IntArith
paths of the NTT kernels). A kernel's shared start, up to the branch that
picks a path, is in its first section. Counts are static: unrolled loops
count fully, a loop body once. Slots the disassembler left out (CUDA 11.8's
nvdisasm skips instructions it cannot decode, such as VIADD) are counted
from the gaps between offsets and shown as "undecoded".

  backends/cuda/scripts/sass_mix.py ntt.sass --kernel 'inverse_tiles<11, false' --sections
"""
import argparse
import collections
import re
import subprocess
import sys

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")
SECTION = re.compile(r"^//-+ \.text\.(\S+)")
LABEL = re.compile(r"^\.L_x_\d+:")
SLOT_BYTES = 16
FP64 = {"DADD", "DFMA", "DMUL"}


def kernels(lines):
    """(mangled name, [(offset, opcode), ...]) per kernel, in file order;
    (None, "LABEL") where a label follows an EXIT."""
    name, ops = None, []
    for line in lines:
        header = SECTION.match(line)
        if header:
            if name:
                yield name, ops
            name, ops = header.group(1), []
            continue
        if not name:
            continue
        found = INSTRUCTION.search(line)
        if found:
            ops.append((int(found.group(1), 16), found.group(2)))
        elif LABEL.match(line) and ops and ops[-1][1] == "EXIT":
            ops.append((None, "LABEL"))
    if name:
        yield name, ops


def demangle(names):
    try:
        result = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
        return result.stdout.split("\n")[: len(names)]
    except (OSError, subprocess.CalledProcessError):
        return names


def summary(ops):
    decoded = [(offset, op) for offset, op in ops if offset is not None]
    if not decoded:
        return "empty"
    slots = (decoded[-1][0] - decoded[0][0]) // SLOT_BYTES + 1
    mix = collections.Counter(op for _, op in decoded)
    fp64 = sum(mix[o] for o in FP64)
    top = ", ".join(f"{o} {c}" for o, c in mix.most_common(12))
    return f"from {decoded[0][0]:#x}, {slots} slots ({slots - len(decoded)} undecoded), {fp64} FP64: {top}"


def sections(ops):
    part = []
    for offset, op in ops:
        if op == "LABEL":
            if part:
                yield part
            part = []
            continue
        part.append((offset, op))
        if op in ("BAR", "EXIT"):
            yield part
            part = []
    if part:
        yield part


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sass", help="nvdisasm -c output")
    parser.add_argument("--kernel", default="", help="regular expression on the demangled name")
    parser.add_argument("--sections", action="store_true", help="also each stretch ending at BAR or EXIT")
    args = parser.parse_args()
    with open(args.sass) as f:
        found = list(kernels(f))
    if not found:
        sys.exit(f"sass_mix.py: no kernels in {args.sass}")
    pattern = re.compile(args.kernel)
    for (_, ops), readable in zip(found, demangle([n for n, _ in found])):
        if not pattern.search(readable):
            continue
        print(f"{readable}\n  {summary(ops)}")
        if args.sections:
            for i, part in enumerate(sections(ops)):
                print(f"  [{i}] ends {part[-1][1]}: {summary(part)}")


if __name__ == "__main__":
    main()
