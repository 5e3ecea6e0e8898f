"""GradBench's tool side of the protocol: JSON lines in on stdin, one response per message.

An eval sends ``start``, ``define`` (a module name), then ``evaluate`` messages (a function
of that module and its input) and ``analysis`` messages (the eval's verdict on an earlier
output). A tool answers every message with its ``id``; ``define`` says whether the module
exists, ``evaluate`` gives the output and one ``evaluate`` timing per run of the function.
Inputs carry ``min_runs`` and ``min_seconds``: the function runs at least ``min_runs``
times and until its runs add up to ``min_seconds``.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO


@dataclass(frozen=True)
class Function:
    """One function of an eval module, as a tool serves it.

    ``prepare`` turns the eval's JSON input into the arguments of ``compute`` and ``output``
    turns its answer back into JSON; neither is timed, as in GradBench's own tools.
    """

    prepare: Callable[[dict], tuple]
    compute: Callable[..., Any]
    output: Callable[[Any], Any]


def timed_runs(compute: Callable[[], Any], min_runs: int, min_seconds: float,
               clock: Callable[[], int] = time.perf_counter_ns) -> tuple[Any, list[int]]:
    """Run ``compute`` until it ran ``min_runs`` times (once at least) and for
    ``min_seconds`` in all.

    Answers the last run's value and the nanoseconds of every run, first run included
    (GradBench's default scoring averages them all, so a first call that compiles counts).
    """
    durations: list[int] = []
    elapsed = 0
    result = None
    while len(durations) < max(min_runs, 1) or elapsed < min_seconds * 1e9:
        start = clock()
        result = compute()
        duration = clock() - start
        durations.append(duration)
        elapsed += duration
    return result, durations


def evaluate(function: Function, raw_input: Any,
             clock: Callable[[], int] = time.perf_counter_ns) -> dict:
    """The response fields (without ``id``) for one ``evaluate`` message."""
    try:
        args = function.prepare(raw_input)
        runs = raw_input if isinstance(raw_input, dict) else {}  # hello's inputs are numbers
        result, durations = timed_runs(lambda: function.compute(*args),
                                       int(runs.get("min_runs", 1)),
                                       float(runs.get("min_seconds", 0)), clock)
        output = function.output(result)
    except Exception as error:  # the eval shows the tool's error; the session goes on
        return {"success": False, "error": "".join(traceback.format_exception(error))}
    return {"success": True, "output": output,
            "timings": [{"name": "evaluate", "nanoseconds": d} for d in durations]}


Evaluator = Callable[[str, Any], dict]  # (function name, input) -> response fields


def evaluator(functions: dict[str, Function]) -> Evaluator:
    """Evaluate a module's functions by name, timed here."""
    def evaluate_function(name: str, raw_input: Any) -> dict:
        if name not in functions:
            return {"success": False, "error": f"no function {name!r} (there are "
                    f"{', '.join(functions)})"}
        return evaluate(functions[name], raw_input)

    return evaluate_function


def serve(tool: str, define: Callable[[str], Evaluator],
          stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
    """Answer the messages on ``stdin`` until it closes.

    ``define(module)`` answers the module's evaluator, or raises (the module is then
    reported as not implemented, with the error).
    """
    modules: dict[str, Evaluator] = {}
    for line in stdin:
        message = json.loads(line)
        response: dict[str, Any] = {"id": message["id"]}
        kind = message["kind"]
        if kind == "end":
            return
        if kind == "start":
            response["tool"] = tool
        elif kind == "define":
            try:
                modules[message["module"]] = define(message["module"])
                response["success"] = True
            except Exception as error:
                response["success"] = False
                response["error"] = "".join(traceback.format_exception(error))
        elif kind == "evaluate":
            if message["module"] not in modules:
                response |= {"success": False,
                             "error": f"{tool}: module {message['module']!r} is not defined"}
            else:
                response |= modules[message["module"]](message["function"], message["input"])
        stdout.write(json.dumps(response) + "\n")
        stdout.flush()
