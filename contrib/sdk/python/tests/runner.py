"""unittest, told the way qsup's suites tell it: "  ok   NAME (S s)" or
"  FAIL NAME" with why, then "N passed, N failed"; exit 1 on a failure.
Tests run in the order they are written (the live ones share a sandbox)."""

import sys
import time
import traceback
import unittest


class Result(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.passed = 0
        self.failed = 0
        self._t0 = 0.0

    def startTest(self, test):
        super().startTest(test)
        self._t0 = time.monotonic()

    def _name(self, test):
        return test.id().rsplit(".", 1)[-1]

    def addSuccess(self, test):
        self.passed += 1
        print("  ok   %s (%.1f s)" % (self._name(test),
                                      time.monotonic() - self._t0),
              flush=True)

    def _fail(self, test, err):
        self.failed += 1
        print("  FAIL %s (%.1f s)" % (self._name(test),
                                      time.monotonic() - self._t0))
        for line in "".join(traceback.format_exception(*err)).splitlines():
            print("    " + line)
        sys.stdout.flush()

    addFailure = _fail
    addError = _fail

    def addSkip(self, test, reason):
        print("  skip %s: %s" % (self._name(test), reason), flush=True)


def in_order(case):
    """case's test methods in the order of the source."""
    names = [n for n in case.__dict__ if n.startswith("test")]
    return unittest.TestSuite(case(n) for n in names)


def main(*cases):
    suite = unittest.TestSuite(in_order(c) for c in cases)
    result = Result()
    suite.run(result)
    print("%d passed, %d failed" % (result.passed, result.failed))
    sys.exit(1 if result.failed or not result.passed else 0)
