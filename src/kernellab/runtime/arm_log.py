"""Arm's runner's log lines on standard output, for the steps scripts and Arm's tests match on.

Arm's runner logs ``<time> [Scenario-Runner] LEVEL: message`` on stdout; kernellab writes the
same words (without the time) for the steps it shares with Arm — pipeline-cache loads and stores,
compute dispatches — when the run asks for them (``RunOptions.arm_log``).
"""
from __future__ import annotations

import sys


def say(level: str, message: str) -> None:
    print(f"[Scenario-Runner] {level}: {message}", file=sys.stdout, flush=True)


def quiet(level: str, message: str) -> None:
    """The same steps, said nowhere."""
