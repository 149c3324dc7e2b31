#!/usr/bin/env python3
"""A tiny META-01 judge for `mcpprobe --judge-command` that calls no model.

It shows the protocol (SPEC §12): mcpprobe starts this program once, writes one JSON object
per tool to its stdin (one per line: name, title, description, inputSchema, outputSchema,
annotations), and reads for each exactly one line from its stdout, a JSON array of verdicts
(`[]` for none). A verdict is {"rule", "severity", "confidence", "reason"} and, optionally,
"pointer" (a JSON Pointer into the tool it was shown).

Here the "model" is a list of phrases; put a call to your own model where `judge` is.

    mcpprobe check tools.json --judge-command "python3 scripts/keyword-judge.py"
    mcpprobe check tools.json --judge-command "python3 scripts/keyword-judge.py --phrase 'wire money'"
"""

import argparse
import json
import sys

PHRASES = [
    "without asking",
    "do not tell",
    "don't tell",
    "keep this secret",
    "before any other tool",
    "instead of the user",
]


def strings(value, pointer=""):
    """Every string in the tool, with its JSON Pointer."""
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, dict):
        for key, item in value.items():
            token = str(key).replace("~", "~0").replace("/", "~1")
            yield from strings(item, f"{pointer}/{token}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from strings(item, f"{pointer}/{i}")


def judge(tool, phrases):
    verdicts = []
    for pointer, text in strings(tool):
        if pointer == "/name":
            continue
        lowered = text.lower()
        for phrase in phrases:
            if phrase in lowered:
                verdicts.append(
                    {
                        "rule": "KW1",
                        "severity": "medium",
                        "confidence": "low",
                        "reason": f"says {phrase!r}: it may steer the model past the user",
                        "pointer": pointer,
                    }
                )
                break
        if len(verdicts) == 32:
            break  # mcpprobe takes at most 32 verdicts for one tool
    return verdicts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phrase", action="append", default=[], help="another phrase to flag")
    args = parser.parse_args()
    phrases = PHRASES + [p.lower() for p in args.phrase]
    for line in sys.stdin:
        try:
            tool = json.loads(line)
            answer = judge(tool, phrases) if isinstance(tool, dict) else []
        except json.JSONDecodeError:
            answer = []
        # Exactly one line per tool, flushed at once: mcpprobe waits for it.
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
