#!/usr/bin/env python3
"""Static instruction mix of kernels in nvdisasm output (disassemble.sh).

For each kernel whose demangled name matches --kernel: its instruction
count, FP64 instructions (DADD, DFMA, DMUL), and with --sections the same
for each stretch of code that ends at a barrier (BAR) or an EXIT, so that
a kernel's passes and its branches (FpArith and IntArith paths) can be told
apart. Counts are static: unrolled loops count fully, a loop body once.

  backends/cuda/scripts/sass_mix.py ntt.sass --kernel 'inverse_tiles<11, false' --sections
"""
import argparse
import collections
import re
import subprocess
import sys

INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")
SECTION = re.compile(r"^//-+ \.text\.(\S+)")
FP64 = {"DADD", "DFMA", "DMUL"}


def kernels(lines):
    """(mangled name, [opcode, ...]) per kernel, in file order."""
    name, ops = None, []
    for line in lines:
        header = SECTION.match(line)
        if header:
            if name:
                yield name, ops
            name, ops = header.group(1), []
            continue
        found = INSTRUCTION.search(line)
        if name and found:
            ops.append(found.group(1))
    if name:
        yield name, ops


def demangle(names):
    try:
        result = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
        return result.stdout.split("\n")[: len(names)]
    except (OSError, subprocess.CalledProcessError):
        return names


def summary(ops):
    mix = collections.Counter(ops)
    fp64 = sum(mix[o] for o in FP64)
    top = ", ".join(f"{o} {c}" for o, c in mix.most_common(12))
    return f"{len(ops)} instructions, {fp64} FP64: {top}"


def sections(ops):
    start = 0
    for i, op in enumerate(ops):
        if op in ("BAR", "EXIT"):
            yield ops[start : i + 1]
            start = i + 1
    if start < len(ops):
        yield ops[start:]


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
                print(f"  [{i}] ends {part[-1]}: {summary(part)}")


if __name__ == "__main__":
    main()
