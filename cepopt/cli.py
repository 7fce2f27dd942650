"""The ``cepopt`` command.

User errors (bad files, unknown names, bad options) print one line, ``cepopt: error: ...``, and exit
with status 2; never a traceback. Under ``--json`` standard output is exactly one JSON document: while
the command runs, Python's and the native solvers' output (file descriptor 1) go to stderr
(:func:`cepopt.formulations.native.native_output_to_stderr`), and the document is printed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from cepopt import __version__
from cepopt.errors import CepoptError
from cepopt.params import OneLineParser, parse_param, seed_argument, time_limit_argument

__all__ = ["OneLineParser", "main", "parse_param"]

EXIT_USER_ERROR = 2


def _params(items: Sequence[str] | None) -> dict[str, Any]:
    return dict(parse_param(item) for item in items or ())


def _add_solver_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--time-limit", type=time_limit_argument, default=None, metavar="S",
                   help="seconds per method call")
    p.add_argument("--seed", type=seed_argument, default=0, help="random seed (default 0)")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a method or problem option, repeatable (e.g. --param expand=false); log=true shows "
                        "the solvers' own log on stderr")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _add_verbose(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", action="store_true",
                   help="show Spark's and the JVM's own log on stderr (by default it goes to "
                        "~/.cache/cepopt/logs/spark-PID.log, and an error is one line)")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="cepopt", description=(
        "Exact plan selection for complex event processing (Sharon, Hamlet, Gloria, Kolchinsky & "
        "Schuster), checked on Spark."))
    parser.add_argument("--version", action="version", version=f"cepopt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)

    p = sub.add_parser("solve", help="solve an instance with one method",
                       description="Solve INSTANCE (a path or a bundled instance name) with METHOD.")
    p.add_argument("instance", metavar="INSTANCE")
    p.add_argument("--method", "-m", required=True, metavar="M", help="method name (see `cepopt methods`)")
    _add_solver_options(p)
    p.add_argument("--export", metavar="FILE", help="write the model the method solves: FILE.mps or FILE.lp "
                   "(MILP), FILE.pbtxt (the CP-SAT model proto, or MathOpt's, as text)")

    p = sub.add_parser("compare", help="solve an instance with several methods and tabulate them",
                       description="Solve INSTANCE with several methods (default: the family's list).")
    p.add_argument("instance", metavar="INSTANCE")
    p.add_argument("--methods", metavar="A,B,...", help="comma-separated method names")
    _add_solver_options(p)

    p = sub.add_parser("generate", help="generate a random instance of a family",
                       description="Generate a random instance: cepopt generate FAMILY --seed N -o FILE "
                                   "[family options]; `cepopt generate FAMILY --help` lists them.",
                       add_help=False)
    p.add_argument("-h", "--help", action="store_true", help="this help")
    p.add_argument("--list", action="store_true",
                   help="list the instance generators and the stream generators with their parameters")
    p.add_argument("family", metavar="FAMILY", nargs="?")
    p.add_argument("rest", nargs=argparse.REMAINDER)

    p = sub.add_parser("import", help="import a published workload file as an instance",
                       description="cepopt import gloria WORKLOAD.txt --frequencies FREQ.csv "
                                   "--dataset stock|bus|taxi -o INSTANCE.json")
    p.add_argument("format", choices=["gloria", "joinorder"], metavar="FORMAT",
                   help="gloria, or joinorder: a JSON file of relation cardinalities and join selectivities")
    p.add_argument("workload", metavar="WORKLOAD")
    p.add_argument("--frequencies", metavar="FREQ.csv", help="gloria only (required there)")
    p.add_argument("--dataset", choices=["stock", "bus", "taxi"], help="gloria only (required there)")
    p.add_argument("-o", "--output", required=True, metavar="FILE")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")

    p = sub.add_parser("execute", help="execute a plan on a stream (Spark or in process) and measure its cost",
                       description="Execute INSTANCE's plan over a stream with Spark (default) or the local "
                                   "engine; print the results summary and the measured cost.")
    p.add_argument("instance", metavar="INSTANCE")
    p.add_argument("--plan", default="nonshared", metavar="METHOD|PLAN.json|nonshared",
                   help="a method to solve with, a saved plan, or nonshared (default)")
    p.add_argument("--stream", default=None, metavar="FILE|URI|gen:NAME[:k=v,...]",
                   help="CSV/Parquet path or URI (file://, hdfs://, s3a://) with the columns ts (integer "
                        "time stamp), type and the attributes (a CSV header row; docs/EXECUTION.md), or a "
                        "generator spec; default: the instance's embedded stream")
    p.add_argument("--schema", metavar="DDL", help="the stream's Spark schema, e.g. 'ts long, type string, v double' "
                                                   "(default: the CSV header and first rows, or the Parquet footer)")
    p.add_argument("--engine", choices=["spark", "local"], default="spark",
                   help="spark (default; --master) or local (in process, no JVM: small streams)")
    p.add_argument("--output", metavar="FILE", help="write the results to one file, FILE.csv or FILE.parquet "
                                                    "(the same on both engines)")
    p.add_argument("--master", metavar="URL", help="Spark master (default local[*] or $CEPOPT_SPARK_MASTER)")
    p.add_argument("--estimate-stats", action="store_true",
                   help="measure rates (and join selectivities) on the stream and plan with them")
    p.add_argument("--save-stats", metavar="FILE", help="with --estimate-stats: write the statistics as JSON")
    p.add_argument("--max-work", type=float, metavar="N",
                   help="refuse plans whose predicted work is above N operations (default: the memory in bytes)")
    _add_solver_options(p)
    _add_verbose(p)

    p = sub.add_parser("experiment", help="run an experiment (writes CSV, PNG and markdown)",
                       description="Run experiment NAME; results go to ./cepopt-results/NAME/ "
                                   "(NAME-quick with --quick) unless --out says otherwise; an interrupted "
                                   "run resumes where it stopped.")
    p.add_argument("name", metavar="NAME", nargs="?", help="experiment name; omit to list them")
    p.add_argument("--quick", action="store_true", help="the small grid used in CI")
    p.add_argument("--out", metavar="DIR", help="output folder (default ./cepopt-results/NAME)")
    p.add_argument("--no-resume", action="store_true", help="start over instead of resuming")
    p.add_argument("--master", metavar="URL", help="run grid points as Spark tasks on this cluster")
    _add_verbose(p)

    p = sub.add_parser("benchmark", help="compare methods across instance sets (or: benchmark report DIR)",
                       description="Run every (instance, method, seed, repeat) cell, each in its own process, and "
                                   "append its row to DIR/results.csv (a killed run resumes); `cepopt benchmark "
                                   "report DIR` writes the report (profiles, PAR10, cactus, gap over time).")
    p.add_argument("instances", nargs="*", metavar="INSTANCE",
                   help="files, globs, bundled names, `bundled[:FAMILY]`, library[:TIER] or "
                        "gen:FAMILY:KEY=V1|V2,KEY=A..B")
    p.add_argument("--method", "-m", action="append", metavar="[FAMILY/]NAME[:K=V,...][@LABEL]",
                   help="a method entry, repeatable (default: each family's default methods)")
    p.add_argument("--time-limit", type=time_limit_argument, default=None, metavar="S", help="seconds per cell")
    p.add_argument("--seeds", default="1", metavar="N|A..B|A,B", help="seeds: a count, a range or a list (default 1)")
    p.add_argument("--repeats", type=int, default=1, metavar="N", help="runs of each (instance, method, seed)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N", help="cells at once (default: the cores)")
    p.add_argument("--memory-mb", type=float, default=None, metavar="MB", help="address space a cell may add")
    p.add_argument("--kill-after", type=float, default=None, metavar="S",
                   help="kill a cell's process after S s (default 2 x time limit + 10)")
    p.add_argument("--out", default="cepopt-results/benchmark", metavar="DIR", help="results folder")
    p.add_argument("--master", metavar="URL", help="run the cells as Spark tasks on this cluster")
    p.add_argument("--no-resume", action="store_true", help="start a new results file")
    p.add_argument("--baseline", metavar="LABEL", help="report: the method of the win/tie/loss table")
    p.add_argument("--no-report", action="store_true", help="do not write the report after the run")
    p.add_argument("--library", action="append", choices=["easy", "medium", "hard"], metavar="TIER",
                   help="add a tier of the instance library (as INSTANCE library:TIER)")

    p = sub.add_parser("demo", help="solve the papers' examples with every method and execute plans on Spark")
    p.add_argument("--quick", action="store_true", help="smaller generated workloads and streams")
    p.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    p.add_argument("--time-limit", type=time_limit_argument, default=10.0, metavar="S",
                   help="seconds per method call")
    _add_verbose(p)

    p = sub.add_parser("fetch", help="download published workloads into a local cache",
                       description="Download DATASET into $CEPOPT_CACHE (default ~/.cache/cepopt) and print "
                                   "its folder; fetched once, then read from the cache.")
    p.add_argument("dataset", choices=["gloria-workloads"], metavar="DATASET",
                   help="gloria-workloads: the Gloria paper's workload files (the authors' repository)")
    p.add_argument("--url", metavar="URL", help="a tar.gz archive of the authors' repository (https://, file:// "
                                                "or a path; default: GitHub)")
    p.add_argument("--cache", metavar="DIR", help="cache folder (default $CEPOPT_CACHE or ~/.cache/cepopt)")
    p.add_argument("--force", action="store_true", help="download again even when cached")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("warmup", help="compile every kernel into the shared cache (once, after the install)",
                       description="Compile every Numba kernel into $CEPOPT_CACHE/numba (or NUMBA_CACHE_DIR), "
                                   "read by every later cepopt process and Spark worker; prints each step's time.")
    p.add_argument("--no-spark", action="store_true",
                   help="skip writing Spark's class-data archive (a JVM start, about a minute)")
    p = sub.add_parser("methods", help="list every family and method")
    p.add_argument("--json", action="store_true", help="print JSON instead of a list")
    p = sub.add_parser("instances", help="list the bundled instances (or the instance library)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a list")
    p.add_argument("--library", nargs="?", const="all", choices=["all", "easy", "medium", "hard"], metavar="TIER",
                   help="list the instance library (a tier: easy, medium, hard) with best known objectives")
    p.add_argument("--verify", action="store_true", help="with --library: re-solve every optimal entry with its "
                   "family's exact methods and report disagreements (exit 1 when there is one)")
    p.add_argument("--out", default="cepopt-results/library-verify", metavar="DIR", help="--verify's results")
    return parser


#: the JSON documents a command produced under --json (printed by main() once the command is done)
_JSON_DOCS: list | None = None


def _print_json(obj: Any) -> None:
    from cepopt.solution import dumps

    if _JSON_DOCS is not None:
        _JSON_DOCS.append(obj)
    else:
        print(dumps(obj))


def _run_json(command, args) -> int:
    """Run ``command`` with every other output on stderr; then print its one JSON document."""
    global _JSON_DOCS
    from cepopt.formulations.native import native_output_to_stderr
    from cepopt.solution import dumps

    saved, _JSON_DOCS = sys.stdout, []
    try:
        sys.stdout = sys.stderr
        with native_output_to_stderr():
            code = command(args)
    finally:
        sys.stdout, docs, _JSON_DOCS = saved, _JSON_DOCS, None
    if len(docs) == 1:
        print(dumps(docs[0]))
    elif docs:
        print(dumps(docs))
    return code


def _solver_params(items: Sequence[str] | None) -> tuple[dict[str, Any], bool]:
    """``--param`` values, and the ``log`` switch (a solver setting, not a method option)."""
    from cepopt.params import parse_bool

    params = _params(items)
    log = parse_bool(params.pop("log", False), "log")
    return params, log


def cmd_solve(args) -> int:
    from cepopt.formulations.native import check_export_path, solver_settings
    from cepopt.registry import solve

    params, log = _solver_params(args.param)
    if args.export:
        check_export_path(args.export)
    with solver_settings(log=log, export=args.export) as settings:
        sol = solve(args.instance, args.method, time_limit=args.time_limit, seed=args.seed, params=params)
    export = None
    if args.export:
        exp = settings.export
        if not exp.written:
            raise CepoptError(exp.error or f"--export {args.export}: method {args.method!r} solved no model "
                              "(it is not a CP-SAT or MILP method, or it proved its answer before building one)")
        export = {"path": exp.path, "format": exp.formats[-1], "models_written": exp.written}
        print(f"cepopt: wrote the {exp.formats[-1]} model to {exp.path}", file=sys.stderr)
    if args.json:
        doc = sol.to_json()
        if export:
            doc["export"] = export
        _print_json(doc)
        return 0
    from cepopt.solution import Solutions

    print(Solutions([sol]))
    print(f"plan: {json.dumps(sol.plan_json, default=str)}")
    _print_cost_notes(args, params, sol)
    if sol.message:
        print(f"message: {sol.message}")
    return 0


def _print_cost_notes(args, params, sol) -> None:
    """A family's cost in other units beside its objective (join order: C_out, ``cost.cost_notes``)."""
    from cepopt.registry import build_problem

    if sol.plan is None:
        return
    fam, problem, _ = build_problem(args.instance, params)
    notes = getattr(fam.cost, "cost_notes", None)
    for line in (notes(problem, sol.plan) if notes else []):
        print(line)


def cmd_compare(args) -> int:
    from cepopt.formulations.native import solver_settings
    from cepopt.registry import compare

    names = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else None
    params, log = _solver_params(args.param)
    with solver_settings(log=log):
        sols = compare(args.instance, names, time_limit=args.time_limit, seed=args.seed, params=params)
    if args.json:
        _print_json(sols.to_json())
    else:
        print(sols)
    return 0


def cmd_generate(args) -> int:
    from cepopt.entry_points import names
    from cepopt.instance import check_writable, save
    from cepopt.instances.generate import generator_parser

    if args.list:
        from cepopt.instances.generate import describe

        print("\n".join(describe()))
        return 0
    if not args.family or args.help:
        print("usage: cepopt generate FAMILY --seed N -o FILE [family options]\n"
              "       cepopt generate --list\n"
              f"FAMILY: {', '.join(names('generators'))}; `cepopt generate FAMILY --help` lists its options;\n"
              "--list shows every instance generator and stream generator (--stream gen:NAME:k=v) with its "
              "parameters.")
        return 0
    parser, module = generator_parser(args.family)
    options = parser.parse_args(args.rest)
    check_writable(options.output)
    instance = module.generate(options)
    path = save(instance, options.output)
    if getattr(args, "json", False):
        _print_json({"wrote": str(path), "problem": instance.problem, "name": instance.name,
                     "queries": len(instance.workload)})
    else:
        print(f"wrote {path} ({instance.problem}, {len(instance.workload)} queries)")
    return 0


def cmd_import(args) -> int:
    from cepopt.instance import check_writable, save
    from cepopt.instances import gloria_reader

    check_writable(args.output)
    if args.format == "joinorder":
        from cepopt.instances.joinorder_reader import import_problem

        instance = import_problem(args.workload)
    elif args.frequencies is None or args.dataset is None:
        raise CepoptError("import gloria: --frequencies and --dataset are required")
    else:
        instance = gloria_reader.import_workload(args.workload, args.frequencies, args.dataset)
    path = save(instance, args.output)
    if args.json:
        _print_json({"wrote": str(path), "problem": instance.problem, "name": instance.name,
                     "queries": len(instance.workload)})
    else:
        print(f"wrote {path} ({len(instance.workload)} queries)")
    return 0


@contextlib.contextmanager
def _stdout_to_stderr(active: bool):
    """Under --json, everything written to file descriptor 1 (the JVM's and solvers' chatter included)
    goes to stderr until the JSON document is printed."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def cmd_execute(args) -> int:
    from cepopt.pipeline import execute_command

    if args.save_stats and not args.estimate_stats:
        raise CepoptError("--save-stats needs --estimate-stats")
    with _stdout_to_stderr(args.json):
        summary = execute_command(
            args.instance, args.plan, args.stream, engine=args.engine, master=args.master, output=args.output,
            params=_params(args.param), estimate_stats=args.estimate_stats, save_stats=args.save_stats,
            max_work=args.max_work, time_limit=args.time_limit, seed=args.seed, schema=args.schema)
    if args.json:
        _print_json(summary)
        return 0
    for key, value in summary.items():
        if key in ("plan", "preview", "estimated_statistics"):
            continue
        print(f"{key}: {value}")
    if "estimated_statistics" in summary:
        print(f"estimated_statistics: {json.dumps(summary['estimated_statistics'])}")
    if summary.get("preview"):
        print(summary["preview"])
    return 0


def cmd_experiment(args) -> int:
    from cepopt.entry_points import names
    from cepopt.experiments.framework import get_experiment, run_experiment

    if not args.name:
        for name in names("experiments"):
            print(f"{name:24s} {get_experiment(name).description}")
        return 0
    exp = get_experiment(args.name)
    out = run_experiment(exp, quick=args.quick, out_dir=args.out, resume=not args.no_resume, master=args.master,
                         command=shlex.join(["cepopt", *args.argv]))
    print(f"{exp.name}: {out.complete} of {out.total} grid points complete ({out.ran} run now, "
          f"{out.skipped} resumed); {out.csv_path}")
    if out.markdown_path:
        print(f"report: {out.markdown_path}")
    return 0


def cmd_benchmark(args) -> int:
    from cepopt.benchmarking import benchmark
    from cepopt.benchmarking.report import write_report

    if args.instances[:1] == ["report"]:
        if len(args.instances) != 2:
            raise CepoptError("usage: cepopt benchmark report DIR")
        print(f"report: {write_report(args.instances[1], baseline=args.baseline)}")
        return 0
    specs = [*args.instances, *(f"library:{t}" for t in args.library or ())]
    run = benchmark(specs, args.method, time_limit=args.time_limit, seeds=args.seeds,
                    repeats=args.repeats, jobs=args.jobs, memory_mb=args.memory_mb, kill_after=args.kill_after,
                    out=args.out, master=args.master, resume=not args.no_resume,
                    command=shlex.join(["cepopt", *args.argv]), progress=sys.stderr.isatty())
    print(f"benchmark: {run.ran + run.skipped} of {run.total} cells in {run.results_path} ({run.ran} run now in "
          f"{run.seconds:.1f} s, warm-up {run.warm_s:.1f} s; {run.skipped} resumed, {run.failed} failed)")
    if not args.no_report:
        print(f"report: {write_report(run.results_path.parent, baseline=args.baseline)}")
    return 0


def cmd_demo(args) -> int:
    from cepopt.experiments import demo

    return demo.run_demo(quick=args.quick, master=args.master, time_limit=args.time_limit)


def cmd_fetch(args) -> int:
    from cepopt.fetch import fetch

    got = fetch(args.dataset, url=args.url, cache=args.cache, force=args.force)
    if args.json:
        _print_json({"dataset": got.name, "folder": str(got.folder), "files": got.files,
                     "downloaded": got.downloaded})
    else:
        print(f"{got.name}: {got.files} files in {got.folder}" + ("" if got.downloaded else " (cached)"))
    return 0


def _shown(value: Any) -> str:
    """An option's default as one would type it after ``--param KEY=``."""
    return value if isinstance(value, str) else json.dumps(value)


def _methods_json() -> list[dict]:
    from cepopt.registry import families, family, methods

    out = []
    for fam in families():
        table, info = methods(fam), family(fam)
        rows = []
        for name, meth in table.items():
            defaults = inspect.signature(meth.fn).parameters
            rows.append({"name": name, "exact": meth.exact, "description": meth.description,
                         "options": {o: defaults[o].default for o in meth.options}})
        obj = info.objective
        out.append({"family": fam, "description": info.description, "sense": obj.sense,
                    "objective": {"name": obj.name, "unit": obj.unit, "sense": obj.sense,
                                  "predict_unit": obj.predict_unit}, "methods": rows})
    return out


def cmd_methods(args) -> int:
    from cepopt.registry import families, family, methods

    if getattr(args, "json", False):
        _print_json(_methods_json())
        return 0
    for fam in families():
        table = methods(fam)
        info = family(fam).objective
        print(f"{fam}: objective {info}; predicted cost in {info.predict_unit}")
        for name, meth in table.items():
            tag = "exact" if meth.exact else "heuristic"
            print(f"  {name:16s} {tag:9s} {meth.description}")
            if meth.options:
                defaults = inspect.signature(meth.fn).parameters
                listed = ", ".join(f"{o}={_shown(defaults[o].default)}" for o in meth.options)
                print(f"  {'':16s} {'':9s} --param {listed}")
    return 0


def _library(args) -> int:
    from cepopt.benchmarking import library

    tier = None if args.library == "all" else args.library
    if args.verify:
        problems = library.verify(tier, args.out)
        for p in problems:
            print(f"DISAGREE {p['instance']} {p['method']}: recorded {p['recorded']}, got {p['status']} "
                  f"{p['objective']} {p['message']}")
        print(f"library: {len(problems)} disagreement(s)")
        return 1 if problems else 0
    rows = library.entries(tier)
    if getattr(args, "json", False):
        _print_json(rows)
        return 0
    for e in rows:
        print(f"{e['tier']:6s} {e['family']:9s} {e['status']:11s} {e['best_objective']!s:>22s} "
              f"{e['best_bound']!s:>22s} {'+'.join(e['verified_by']) or '-':28s} {e['instance']}")
def cmd_warmup(args) -> int:
    from cepopt.warmup import warmup

    warmup(spark=not args.no_spark)
    return 0


def cmd_instances(args) -> int:
    from cepopt.instances import describe

    if args.library:
        return _library(args)
    if args.verify:
        raise CepoptError("--verify needs --library")

    rows = describe()
    if getattr(args, "json", False):
        _print_json([{"name": name, "problem": problem, "description": description}
                     for name, problem, description in rows])
        return 0
    if not rows:
        print("(no bundled instances)")
    for name, problem, description in rows:
        print(f"{name:20s} {problem:10s} {description}")
    return 0


COMMANDS = {
    "solve": cmd_solve, "compare": cmd_compare, "generate": cmd_generate, "import": cmd_import,
    "execute": cmd_execute, "experiment": cmd_experiment, "benchmark": cmd_benchmark, "demo": cmd_demo,
    "fetch": cmd_fetch, "warmup": cmd_warmup,
    "methods": cmd_methods,
    "instances": cmd_instances,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        args = parser.parse_args(argv)
        args.argv = argv
        if getattr(args, "verbose", False):
            os.environ["CEPOPT_SPARK_LOG"] = "stderr"
        if args.command is None:
            parser.print_help()
            return 0
        if args.command == "generate" and "--json" in args.rest:  # the family's own options follow FAMILY
            args.rest, args.json = [a for a in args.rest if a != "--json"], True
        if getattr(args, "json", False):
            return _run_json(COMMANDS[args.command], args)
        return COMMANDS[args.command](args)
    except CepoptError as exc:
        message = " ".join(str(exc).split())
        print(f"cepopt: error: {message}", file=sys.stderr)
        return EXIT_USER_ERROR
    except SystemExit as exc:  # --help of a subcommand or of a generator: printed, then exit 0
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print("cepopt: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
