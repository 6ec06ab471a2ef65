"""The failed tests of `make test`'s three suites, a line each, printed after all of them: CI shows the end of
its output, where one suite's full report would otherwise hide the others' failures. Reads the reports the suites
write into dist/test-results (pytest's JUnit XML, Vitest's JSON). Standard library only."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

REPORTS = Path(__file__).resolve().parent.parent / "dist" / "test-results"
WIDTH = 400  # characters of a failure's message kept


def first_line(message: str) -> str:
    line = next((part.strip() for part in message.splitlines() if part.strip()), "")
    return line[:WIDTH]


def pytest_failures(report: Path) -> list[str]:
    failures = []
    for case in ElementTree.parse(report).iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            failures.append(f"{case.get('classname')}::{case.get('name')}: "
                            f"{first_line(problem.get('message') or problem.text or '')}")
    return failures


def vitest_failures(report: Path) -> list[str]:
    failures = []
    for suite in json.loads(report.read_text()).get("testResults", []):
        name = Path(suite.get("name", "")).name
        for test in suite.get("assertionResults", []):
            if test.get("status") == "failed":
                failures.append(f"{name} > {test.get('fullName')}: "
                                f"{first_line(' '.join(test.get('failureMessages') or []))}")
        if suite.get("status") == "failed" and not any(t.get("status") == "failed"
                                                       for t in suite.get("assertionResults", [])):
            failures.append(f"{name}: {first_line(suite.get('message', ''))}")
    return failures


def main() -> int:
    lines = []
    for report in sorted(REPORTS.glob("*.xml")):
        lines += pytest_failures(report)
    for report in sorted(REPORTS.glob("*.json")):
        lines += vitest_failures(report)
    print(f"\nFailed tests ({len(lines)}):" if lines else "\nNo failed test in the reports: see the output above.")
    for line in lines:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
