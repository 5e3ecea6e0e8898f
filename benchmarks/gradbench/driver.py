"""Run GradBench evals against several tools back to back and tabulate the ratios.

The driver is the intermediary of GradBench's protocol: it starts the eval (GradBench's
``gradbench.evals.EVAL.run``, from the checkout) and one tool at a time, passes each message
to the tool and each response back, and keeps the log. The eval validates every output
(against GradBench's manual C++ tool, whose programs must be built, or against reference
values) and says so in its ``analysis`` messages.

Two scorings come from the same runs. The eval is asked for ``--min-runs`` runs per message
(3 by default) as well as its ``--min-seconds`` (1 s by default):

- *steady state*: the fastest run of each message;
- *GradBench's default*: the mean of the runs that GradBench's default settings (one run at
  least, one second in all) would have made, which are the first runs of the same list:
  first calls, compilation included, count as GradBench counts them.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# the functions GradBench's scorer pairs (primal, derivative); particle and saddle instead
# have four equivalent functions, scored by the fastest
PAIRS = {"hello": ("square", "double"), "ba": ("objective", "jacobian"),
         "gmm": ("objective", "jacobian"), "ht": ("objective", "jacobian"),
         "lstm": ("objective", "jacobian"), "kmeans": ("cost", "dir"),
         "ode": ("primal", "gradient"), "llsq": ("primal", "gradient"),
         "det": ("primal", "gradient"), "lse": ("primal", "gradient")}
EQUIVALENT = ("particle", "saddle")
TOOLS = ("chainrule", "chainrule-jit", "pytorch", "jax", "manual", "jax-gradbench")


@dataclass
class Outcome:
    """What one tool answered to one evaluate message."""

    function: str
    workload: str
    status: str  # valid, invalid, failed, timeout, unvalidated
    timings_ns: list[int] = field(default_factory=list)
    min_seconds: float = 0.0
    error: str = ""

    def steady(self) -> float | None:
        return min(self.timings_ns) / 1e9 if self.timings_ns else None

    def gradbench_default(self) -> float | None:
        """The mean over the runs a default run (>= 1 run, >= 1 s) would have made."""
        elapsed, runs = 0, []
        for t in self.timings_ns:
            runs.append(t)
            elapsed += t
            if elapsed >= max(self.min_seconds, 1.0) * 1e9:
                break
        return sum(runs) / len(runs) / 1e9 if runs else None


@dataclass
class ToolRun:
    tool: str
    outcomes: list[Outcome] = field(default_factory=list)
    note: str = ""  # why the tool did not run every message (no implementation, timeout...)


def tool_command(tool: str, gradbench: Path) -> tuple[list[str], Path]:
    """The command that starts ``tool`` and the folder it runs in."""
    python = sys.executable
    if tool in ("chainrule", "chainrule-jit"):
        return ([python, "-m", "benchmarks.gradbench.tool"]
                + (["--jit"] if tool == "chainrule-jit" else []), REPO)
    if tool in ("pytorch", "jax-gradbench"):  # GradBench's own tools, as they are
        name = tool.split("-")[0]
        return [python, str(gradbench / f"python/gradbench/gradbench/tools/{name}/run.py")], \
            gradbench
    if tool in ("jax", "manual"):
        return [python, "-m", "benchmarks.gradbench.peers", tool], gradbench
    raise SystemExit(f"unknown tool {tool!r}; the driver runs {', '.join(TOOLS)}")


def environment(gradbench: Path) -> dict[str, str]:
    from benchmarks.__main__ import SINGLE_THREAD_ENV

    paths = [str(REPO / "src"), str(REPO), str(gradbench / "python/gradbench")]
    return dict(os.environ, **SINGLE_THREAD_ENV, PYTHONPATH=os.pathsep.join(paths))


def _lines(stream, sink: queue.Queue) -> None:
    for line in stream:
        sink.put(line)
    sink.put(None)


class Recorder:
    """Turns a session's messages and responses into a ``ToolRun`` (live or from a log)."""

    def __init__(self, tool: str):
        self.run = ToolRun(tool)
        self.pending: dict[int, tuple[dict, dict]] = {}  # evaluate id -> (message, response)

    def message(self, message: dict) -> None:
        if message["kind"] == "analysis" and message["of"] in self.pending:
            _record(self.run, *self.pending.pop(message["of"]), message)

    def response(self, message: dict, response: dict) -> None:
        if message["kind"] == "define" and not response.get("success"):
            self.run.note = "no implementation of this eval"
        if message["kind"] == "evaluate":
            if response.get("success"):
                self.pending[message["id"]] = (message, response)
            else:
                self.run.outcomes.append(Outcome(message["function"],
                                                 message.get("description", ""), "failed",
                                                 error=response.get("error", "")))

    def finish(self) -> ToolRun:
        for message, response in self.pending.values():  # answered, never analysed
            _record(self.run, message, response, None)
        self.pending.clear()
        return self.run


def load_run(tool: str, log_path: Path) -> ToolRun:
    """A ``ToolRun`` from a session's log (``--out``'s EVAL-TOOL.jsonl)."""
    recorder, last = Recorder(tool), None
    with open(log_path) as log:
        for line in log:
            entry = json.loads(line)
            if "message" in entry:
                last = entry["message"]
                recorder.message(last)
            elif last is not None:
                recorder.response(last, entry["response"])
    if last is not None and last["kind"] == "evaluate" and not any(
            o.function == last["function"] and o.workload == last.get("description", "")
            for o in recorder.run.outcomes) and last["id"] not in recorder.pending:
        recorder.run.note = f"no response to {_describe(last)} in the log"
    return recorder.finish()


def run_eval(eval_name: str, tool: str, gradbench: Path, eval_args: list[str],
             timeout: float, log_path: Path | None = None) -> ToolRun:
    """One session of ``eval_name`` with ``tool``: the intermediary's loop."""
    env = environment(gradbench)
    command, cwd = tool_command(tool, gradbench)
    stderr_log = open(log_path.with_suffix(".stderr"), "w") if log_path else subprocess.DEVNULL
    tool_process = subprocess.Popen(command, cwd=cwd, env=env, text=True, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=stderr_log,
                                    start_new_session=True)
    eval_process = subprocess.Popen(
        [sys.executable, "-m", f"gradbench.evals.{eval_name}.run", *eval_args], cwd=gradbench,
        env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr_log,
        start_new_session=True)
    answers: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(tool_process.stdout, answers), daemon=True).start()
    recorder = Recorder(tool)
    log = open(log_path, "w") if log_path else None
    try:
        for line in eval_process.stdout:
            message = json.loads(line)
            if log:
                log.write(json.dumps({"message": message}) + "\n")
            recorder.message(message)
            if message["kind"] == "end":
                break
            tool_process.stdin.write(line)
            tool_process.stdin.flush()
            try:
                answer = answers.get(timeout=timeout)
            except queue.Empty:
                recorder.run.note = f"timed out after {timeout:.0f} s on {_describe(message)}"
                recorder.run.outcomes.append(Outcome(message.get("function", ""),
                                                     message.get("description", ""), "timeout"))
                break
            if answer is None:
                recorder.run.note = f"exited on {_describe(message)} (see its stderr)"
                break
            response = json.loads(answer)
            if log:
                log.write(json.dumps({"response": response}) + "\n")
            recorder.response(message, response)
            eval_process.stdin.write(answer)
            eval_process.stdin.flush()
    finally:
        for process in (tool_process, eval_process):  # stdin closed: a tool's loop ends
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # (a timed-out tool is still computing)
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for file in (log, stderr_log):
            if hasattr(file, "close"):
                file.close()
    return recorder.finish()


def _describe(message: dict) -> str:
    return " ".join(str(message[k]) for k in ("kind", "function", "description") if k in message)


def _record(run: ToolRun, message: dict, response: dict, analysis: dict | None) -> None:
    status = "unvalidated" if analysis is None else (
        "valid" if analysis.get("valid") else "invalid")
    timings = [t["nanoseconds"] for t in response.get("timings") or [] if t["name"] == "evaluate"]
    raw = message["input"]
    min_seconds = float(raw.get("min_seconds", 0)) if isinstance(raw, dict) else 0.0
    run.outcomes.append(Outcome(message["function"], message.get("description", ""), status,
                                timings, min_seconds, (analysis or {}).get("error") or ""))


def seconds(value: float | None) -> str:
    if value is None:
        return "—"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"


def _timing(run: ToolRun, function: str, workload: str, scoring: str) -> float | None:
    for outcome in run.outcomes:
        if outcome.function == function and outcome.workload == workload:
            if outcome.status in ("valid", "unvalidated"):
                return getattr(outcome, scoring)()
    return None


def _cell_missing(run: ToolRun, function: str, workload: str) -> str:
    for outcome in run.outcomes:
        if outcome.function == function and outcome.workload == workload:
            return outcome.status
    return "—"


def tables(eval_name: str, runs: list[ToolRun], baseline: str) -> str:
    """Markdown: validation, then each scoring's ratio tables."""
    out = [f"## {eval_name}", ""]
    for run in runs:
        counts: dict[str, int] = {}
        for outcome in run.outcomes:
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no output"
        out.append(f"- {run.tool}: {summary}" + (f"; {run.note}" if run.note else ""))
    workloads = list(dict.fromkeys(o.workload for run in runs for o in run.outcomes))
    base = next((run for run in runs if run.tool == baseline), runs[0])
    scorings = (("steady", "steady state (fastest run of each message)"),
                ("gradbench_default", "GradBench's default scoring (mean of the runs a "
                 "default run makes, first call included)"))
    for scoring, title in scorings:
        out += ["", f"### {title}", ""]
        if eval_name in PAIRS:
            out += _pair_tables(eval_name, runs, base, workloads, scoring)
        else:
            functions = list(dict.fromkeys(o.function for run in runs for o in run.outcomes))
            out += _time_table(runs, base, [(f, w) for w in workloads for f in functions],
                               scoring, "function")
    return "\n".join(out) + "\n"


def _pair_tables(eval_name, runs, base, workloads, scoring) -> list[str]:
    primal, derivative = PAIRS[eval_name]
    header = "| workload | " + " | ".join(run.tool for run in runs) + " |"
    rule = "|---" * (len(runs) + 1) + "|"
    out = [f"{derivative} time / {primal} time, per tool:", "", header, rule]
    for workload in workloads:
        cells = []
        for run in runs:
            p, d = (_timing(run, f, workload, scoring) for f in (primal, derivative))
            cells.append(f"{d / p:.3g}" if p and d else _cell_missing(run, derivative, workload))
        out.append(f"| {workload} | " + " | ".join(cells) + " |")
    for function in (derivative, primal):
        out += ["", f"{function} time, and as a multiple of {base.tool}'s:", ""]
        out += _time_table(runs, base, [(function, w) for w in workloads], scoring, "workload")
    return out


def _time_table(runs, base, rows, scoring, label) -> list[str]:
    out = [f"| {label} | " + " | ".join(run.tool for run in runs) + " |",
           "|---" * (len(runs) + 1) + "|"]
    for function, workload in rows:
        reference = _timing(base, function, workload, scoring)
        cells = []
        for run in runs:
            t = _timing(run, function, workload, scoring)
            if t is None:
                cells.append(_cell_missing(run, function, workload))
            elif reference and run is not base:
                cells.append(f"{seconds(t)} ({t / reference:.3g}×)")
            else:
                cells.append(seconds(t))
        name = workload if label == "workload" else f"{function} {workload}".strip()
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


TARGET_COLUMNS = ("jit / JAX jit", "jit / PyTorch", "eager / PyTorch",
                  "jit: derivative / objective", "eager: derivative / objective",
                  "default scoring: jit / eager")


def targets_table(runs_by_eval: dict[str, list[ToolRun]]) -> str:
    """Issue 37's targets: per eval, the worst ratio over its workloads (steady state but
    for the last column, the worse of the primal's and the derivative's ratio)."""
    lines = ["| eval | " + " | ".join(f"{c} (worst)" for c in TARGET_COLUMNS) + " |",
             "|---" * (len(TARGET_COLUMNS) + 1) + "|"]
    for eval_name, runs in runs_by_eval.items():
        if eval_name in PAIRS and eval_name != "hello":
            cells = [f"{v:.3g}" if v is not None else "—" for v in _worst_ratios(eval_name, runs)]
            lines.append(f"| {eval_name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _worst_ratios(eval_name: str, runs: list[ToolRun]) -> list[float | None]:
    by_tool = {run.tool: run for run in runs}
    primal, derivative = PAIRS[eval_name]

    def ratio(a, b, function, workload, scoring="steady"):
        if a in by_tool and b in by_tool:
            x = _timing(by_tool[a], function, workload, scoring)
            y = _timing(by_tool[b], function, workload, scoring)
            if x and y:
                return x / y
        return None

    def per_objective(tool, workload):
        if tool in by_tool:
            d, p = (_timing(by_tool[tool], f, workload, "steady") for f in (derivative, primal))
            if d and p:
                return d / p
        return None

    def first_calls(workload):
        found = [r for f in (primal, derivative) if (r := ratio(
            "chainrule-jit", "chainrule", f, workload, "gradbench_default")) is not None]
        return max(found) if found else None

    columns = [lambda w: ratio("chainrule-jit", "jax", derivative, w),
               lambda w: ratio("chainrule-jit", "pytorch", derivative, w),
               lambda w: ratio("chainrule", "pytorch", derivative, w),
               lambda w: per_objective("chainrule-jit", w),
               lambda w: per_objective("chainrule", w), first_calls]
    workloads = list(dict.fromkeys(o.workload for run in runs for o in run.outcomes))
    worst = []
    for column in columns:
        values = [v for v in map(column, workloads) if v is not None]
        worst.append(max(values) if values else None)
    return worst


def check_checkout(gradbench: Path, eval_name: str) -> None:
    """Clear errors for what a GradBench checkout lacks, before anything runs."""
    if not (gradbench / "python/gradbench/gradbench/evals" / eval_name / "run.py").exists():
        raise SystemExit(f"{gradbench} is not a GradBench checkout with the eval {eval_name!r} "
                         "(python/gradbench/gradbench/evals/{eval_name}/run.py is missing)")
    if eval_name == "lstm" and not (gradbench / "evals/lstm/data/lstm_full.txt").exists():
        raise SystemExit(f"{gradbench}/evals/lstm/data/lstm_full.txt is missing (snapshots "
                         "leave out files over 4 MiB); see benchmarks/gradbench/README.md")
    validated = eval_name not in EQUIVALENT + ("hello",)
    if validated and not (gradbench / "tools/manual/bin" / eval_name).exists():
        raise SystemExit(
            f"the eval validates against {gradbench}/tools/manual/bin/{eval_name}, which is "
            f"not built: run `make -C {gradbench}/tools/manual bin/{eval_name}` (it needs "
            f"{gradbench}/cpp/json.hpp: see benchmarks/gradbench/README.md)")


def run_evals(gradbench: Path, eval_names: list[str], tools: list[str], eval_args: str,
              min_runs: int, timeout: float, out: Path | None, baseline: str | None) -> str:
    report = []
    for eval_name in eval_names:
        check_checkout(gradbench, eval_name)
        args = shlex.split(eval_args)
        if eval_name != "hello":
            args += ["--min-runs", str(min_runs)]
        runs = []
        for tool in tools:
            started = time.perf_counter()
            log = out / f"{eval_name}-{tool}.jsonl" if out else None
            runs.append(run_eval(eval_name, tool, gradbench, args, timeout, log))
            print(f"{eval_name} / {tool}: {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)
        text = tables(eval_name, runs, baseline or tools[0])
        command = (f"python -m benchmarks.gradbench --gradbench GRADBENCH --eval {eval_name} "
                   f"--tools {','.join(tools)}" + (f" --eval-args '{eval_args}'" if eval_args
                                                    else "") +
                   (f" --min-runs {min_runs}" if min_runs != 3 else ""))
        text += f"\nCommand: `{command}`\n"
        if out:
            (out / f"{eval_name}.md").write_text(text)
        report.append(text)
    return "\n".join(report)
