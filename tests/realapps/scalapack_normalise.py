#!/usr/bin/env python3
"""Normalise the standard output of a ScaLAPACK tester (xdlu, xdqr, ...) so that a
native run and a run under mana can be compared with diff.

The testers print result tables: a header line with the column names, a line of dash
runs (one run per column), then one row per test ending in a PASSED/FAILED verdict.
Timing columns (LU Time, MFLOPS, WALL, CPU, ...) differ from run to run, everything
else (the test parameters, the residuals and the verdict) is deterministic.

Every table row is rewritten as "ROW name=value ..." without the timing columns; the
columns are located from the dash line.  All other lines are kept as they are (trailing
blanks removed).  With --summary the script prints instead one line
"tests=N passed=N failed=N skipped=N unchecked=N rows_failed=N complete=0|1".

usage: scalapack_normalise.py [--summary] FILE
"""
import re
import sys

TIMING = re.compile(r"time|mflop|wall|cpu", re.IGNORECASE)
DASHES = re.compile(r"^[\s-]*-[\s-]*$")
VERDICT = re.compile(r"\b(PASSED|FAILED)\b")


def spans(line, pattern):
    return [(m.start(), m.end()) for m in re.finditer(pattern, line)]


def nearest_column(start, end, runs):
    """Index of the dash run that overlaps [start, end) most, else the closest one."""
    def key(i):
        s, e = runs[i]
        overlap = min(end, e) - max(start, s)
        return (0, -overlap) if overlap > 0 else (1, min(abs(start - e), abs(s - end)))
    return min(range(len(runs)), key=key)


def column_names(header, runs):
    """Name of each column: the header words placed over the column's dash run."""
    names = [[] for _ in runs]
    for start, end in spans(header, r"\S+"):
        names[nearest_column(start, end, runs)].append(header[start:end])
    return [" ".join(n) if n else "col%d" % i for i, n in enumerate(names)]


def assign(line, runs):
    """Split a table row into one value per column."""
    tokens = spans(line, r"\S+")
    values = [[] for _ in runs]
    if len(tokens) == len(runs):
        for i, (s, e) in enumerate(tokens):
            values[i].append(line[s:e])
    else:  # a value overflowed or is missing: place each word by position
        for start, end in tokens:
            values[nearest_column(start, end, runs)].append(line[start:end])
    return [" ".join(v) for v in values]


def normalise(lines):
    out = []
    header, table = None, None       # (names, runs) of the current table
    previous = ""
    for raw in lines:
        line = raw.rstrip("\n").rstrip()
        if DASHES.match(line) and line.count("-") >= 4 and previous:
            runs = spans(line, r"-+")
            table = (column_names(previous, runs), runs)
            out.append("TABLE " + " | ".join(n for n in table[0] if not TIMING.search(n)))
            previous = line
            continue
        if table and VERDICT.search(line):
            names, runs = table
            cells = ["%s=%s" % (n.replace(" ", "_"), v)
                     for n, v in zip(names, assign(line, runs)) if not TIMING.search(n)]
            out.append("ROW " + " ".join(cells))
        else:
            out.append(line)
        if line.strip():
            previous = line
    return out


def summary(lines):
    text = "".join(lines)
    def count(pattern):
        return sum(int(n) for n in re.findall(pattern, text))
    tests = count(r"Finished\s+(\d+)\s+tests")
    passed = count(r"(\d+)\s+tests completed and passed")
    failed = count(r"(\d+)\s+tests completed and failed")
    skipped = count(r"(\d+)\s+tests skipped")
    unchecked = count(r"(\d+)\s+tests completed without checking")
    rows_failed = sum(1 for l in normalise(lines) if l.startswith("ROW") and "FAILED" in l)
    complete = int("END OF TESTS" in text and re.search(r"Finished\s+\d+\s+tests", text) is not None)
    return ("tests=%d passed=%d failed=%d skipped=%d unchecked=%d rows_failed=%d complete=%d"
            % (tests, passed, failed, skipped, unchecked, rows_failed, complete))


def main(argv):
    args = argv[1:]
    want_summary = False
    if args and args[0] == "--summary":
        want_summary, args = True, args[1:]
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    with open(args[0], errors="replace") as f:
        lines = f.readlines()
    if want_summary:
        print(summary(lines))
    else:
        sys.stdout.write("".join(l + "\n" for l in normalise(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
