#!/usr/bin/env python3
"""Benchmark medians side by side, from lines "LABEL {fhelium-bench-cuda JSON}"
(device_check.sh's ab step, or any file of that form): one row per preset and
operation, one column per label, eager median / graph median in us.

  backends/cuda/scripts/ab_table.py ab.jsonl
"""
import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip())
    labels, rows = [], {}
    with open(sys.argv[1]) as f:
        for number, line in enumerate(f, 1):
            label, _, text = line.strip().partition(" ")
            if not label:
                continue
            try:
                report = json.loads(text)
            except json.JSONDecodeError as error:
                print(f"line {number} ({label}): not JSON ({error.msg}); skipped", file=sys.stderr)
                continue
            labels.append(label)
            for preset in report.get("presets", []):
                for result in preset.get("results", []):
                    key = (preset["preset"], result["op"])
                    graph = result.get("graph_median_us")
                    cell = f"{result['median_us']:.1f}" + (f" / {graph:.1f}" if graph is not None else "")
                    rows.setdefault(key, {})[label] = cell
    print("| preset | operation | " + " | ".join(labels) + " |")
    print("|---|---|" + "---|" * len(labels))
    for (preset, op), cells in rows.items():
        print(f"| {preset} | {op} | " + " | ".join(cells.get(label, "-") for label in labels) + " |")


if __name__ == "__main__":
    main()
