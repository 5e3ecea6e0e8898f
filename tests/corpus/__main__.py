"""``python -m tests.corpus``: the share of the corpus that works, by pattern."""

from collections import defaultdict

from . import CASES, check

by_pattern: dict = defaultdict(lambda: [0, 0])
failures = []
for case in CASES:
    problems = check(case)
    by_pattern[case.pattern][1] += 1
    by_pattern[case.pattern][0] += not problems
    if problems:
        failures.append((case.name, problems))
print("| pattern | works | of |")
print("|---|---|---|")
for pattern, (works, total) in sorted(by_pattern.items()):
    print(f"| {pattern} | {works} | {total} |")
works = sum(w for w, _ in by_pattern.values())
print(f"| all | {works} | {len(CASES)} ({100 * works / len(CASES):.0f}%) |")
for name, problems in failures:
    print(f"\n{name}:\n  " + "\n  ".join(problems))
