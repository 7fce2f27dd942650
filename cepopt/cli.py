"""The ``cepopt`` command.

User errors (bad files, unknown names, bad options) print one line, ``cepopt: error: ...``, and exit
with status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections.abc import Sequence
from typing import Any

from cepopt.errors import CepoptError
from cepopt.params import OneLineParser

__all__ = ["OneLineParser", "main"]

EXIT_USER_ERROR = 2


def parse_param(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE read as JSON when it is JSON (true, 3, 0.5, "x"), else as text.

    >>> parse_param("expand=false"), parse_param("backend=highs"), parse_param("k=3")
    (('expand', False), ('backend', 'highs'), ('k', 3))
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise CepoptError(f"--param expects KEY=VALUE, got {text!r}")
    value = value.strip()
    lowered = value.lower()
    if lowered in ("true", "false"):
        return key.strip(), lowered == "true"
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def _params(items: Sequence[str] | None) -> dict[str, Any]:
    return dict(parse_param(item) for item in items or ())


def _add_solver_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--time-limit", type=float, default=None, metavar="S", help="seconds per method call")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a method or problem option, repeatable (e.g. --param expand=false)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="cepopt", description=(
        "Exact plan selection for complex event processing (Sharon, Hamlet, Gloria, Kolchinsky & "
        "Schuster), checked on Spark."))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)

    p = sub.add_parser("solve", help="solve an instance with one method",
                       description="Solve INSTANCE (a path or a bundled instance name) with METHOD.")
    p.add_argument("instance", metavar="INSTANCE")
    p.add_argument("--method", "-m", required=True, metavar="M", help="method name (see `cepopt methods`)")
    _add_solver_options(p)

    p = sub.add_parser("compare", help="solve an instance with several methods and tabulate them",
                       description="Solve INSTANCE with several methods (default: the family's list).")
    p.add_argument("instance", metavar="INSTANCE")
    p.add_argument("--methods", metavar="A,B,...", help="comma-separated method names")
    _add_solver_options(p)

    p = sub.add_parser("generate", help="generate a random instance of a family",
                       description="Generate a random instance: cepopt generate FAMILY --seed N -o FILE "
                                   "[family options]; `cepopt generate FAMILY --help` lists them.",
                       add_help=False)
    p.add_argument("family", metavar="FAMILY", nargs="?")
    p.add_argument("rest", nargs=argparse.REMAINDER)

    p = sub.add_parser("import", help="import a published workload file as an instance",
                       description="cepopt import gloria WORKLOAD.txt --frequencies FREQ.csv "
                                   "--dataset stock|bus|taxi -o INSTANCE.json")
    p.add_argument("format", choices=["gloria"], metavar="FORMAT", help="gloria")
    p.add_argument("workload", metavar="WORKLOAD")
    p.add_argument("--frequencies", required=True, metavar="FREQ.csv")
    p.add_argument("--dataset", required=True, choices=["stock", "bus", "taxi"])
    p.add_argument("-o", "--output", required=True, metavar="FILE")

    p = sub.add_parser("execute", help="execute a plan on Spark and measure its cost",
                       description="Execute INSTANCE's plan on Spark over a stream; print the results "
                                   "summary and the measured cost.")
    p.add_argument("instance", metavar="INSTANCE")
    p.add_argument("--plan", default="nonshared", metavar="METHOD|PLAN.json|nonshared",
                   help="a method to solve with, a saved plan, or nonshared (default)")
    p.add_argument("--stream", default=None, metavar="FILE|gen:NAME[:k=v,...]",
                   help="CSV/Parquet file or generator spec; default: the instance's embedded stream")
    p.add_argument("--output", metavar="FILE", help="write the results (CSV or Parquet)")
    p.add_argument("--master", metavar="URL", help="Spark master (default local[*] or $CEPOPT_SPARK_MASTER)")
    p.add_argument("--estimate-stats", action="store_true",
                   help="estimate rates and selectivities from the stream before planning (join plans)")
    _add_solver_options(p)

    p = sub.add_parser("experiment", help="run an experiment (writes CSV, PNG and markdown)",
                       description="Run experiment NAME; results go to experiments/results/NAME/.")
    p.add_argument("name", metavar="NAME", nargs="?", help="experiment name; omit to list them")
    p.add_argument("--quick", action="store_true", help="the small grid used in CI")
    p.add_argument("--out", metavar="DIR", help="output folder")
    p.add_argument("--no-resume", action="store_true", help="start over instead of resuming")
    p.add_argument("--master", metavar="URL", help="run grid points as Spark tasks on this cluster")

    p = sub.add_parser("demo", help="solve the papers' examples with every method and execute plans on Spark")
    p.add_argument("--quick", action="store_true", help="smaller generated workloads and streams")
    p.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    p.add_argument("--time-limit", type=float, default=10.0, metavar="S", help="seconds per method call")

    sub.add_parser("methods", help="list every family and method")
    sub.add_parser("instances", help="list the bundled instances")
    return parser


def _print_json(obj: Any) -> None:
    from cepopt.solution import dumps

    print(dumps(obj))


def cmd_solve(args) -> int:
    from cepopt.solve import solve

    sol = solve(args.instance, args.method, time_limit=args.time_limit, seed=args.seed, params=_params(args.param))
    if args.json:
        _print_json(sol.to_json())
        return 0
    from cepopt.solution import Solutions

    print(Solutions([sol]))
    print(f"plan: {json.dumps(sol.plan_json, default=str)}")
    if sol.message:
        print(f"message: {sol.message}")
    return 0


def cmd_compare(args) -> int:
    from cepopt.solve import compare

    names = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else None
    sols = compare(args.instance, names, time_limit=args.time_limit, seed=args.seed, params=_params(args.param))
    if args.json:
        _print_json(sols.to_json())
    else:
        print(sols)
    return 0


def cmd_generate(args) -> int:
    from cepopt.entry_points import names
    from cepopt.instance import save
    from cepopt.instances.generate import generator_parser

    if not args.family or args.family in ("-h", "--help"):
        print("usage: cepopt generate FAMILY --seed N -o FILE [family options]\n"
              f"FAMILY: {', '.join(names('generators'))}; `cepopt generate FAMILY --help` lists its options.")
        return 0
    parser, module = generator_parser(args.family)
    options = parser.parse_args(args.rest)
    instance = module.generate(options)
    path = save(instance, options.output)
    print(f"wrote {path} ({instance.problem}, {len(instance.workload)} queries)")
    return 0


def cmd_import(args) -> int:
    from cepopt.instance import save
    from cepopt.instances import gloria_reader

    instance = gloria_reader.import_workload(args.workload, args.frequencies, args.dataset)
    path = save(instance, args.output)
    print(f"wrote {path} ({len(instance.workload)} queries)")
    return 0


def cmd_execute(args) -> int:
    from cepopt.executor import api
    from cepopt.instance import load

    summary = api.execute_command(
        load(args.instance), args.plan, args.stream, master=args.master, output=args.output,
        params=_params(args.param), estimate_stats=args.estimate_stats, time_limit=args.time_limit,
        seed=args.seed)
    if args.json:
        _print_json(summary)
    else:
        for key, value in summary.items():
            if key in ("plan", "preview"):
                continue
            print(f"{key}: {value}")
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
    out = run_experiment(exp, quick=args.quick, out_dir=args.out, resume=not args.no_resume, master=args.master)
    print(f"{exp.name}: {out.ran} rows run, {out.skipped} resumed; {out.csv_path}")
    if out.markdown_path:
        print(f"report: {out.markdown_path}")
    return 0


def cmd_demo(args) -> int:
    from cepopt.experiments import demo

    return demo.run_demo(quick=args.quick, master=args.master, time_limit=args.time_limit)


def _shown(value: Any) -> str:
    """An option's default as one would type it after ``--param KEY=``."""
    return value if isinstance(value, str) else json.dumps(value)


def cmd_methods(args) -> int:
    from cepopt.solve import families, family, methods

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


def cmd_instances(args) -> int:
    from cepopt.instances import describe

    rows = describe()
    if not rows:
        print("(no bundled instances)")
    for name, problem, description in rows:
        print(f"{name:20s} {problem:10s} {description}")
    return 0


COMMANDS = {
    "solve": cmd_solve, "compare": cmd_compare, "generate": cmd_generate, "import": cmd_import,
    "execute": cmd_execute, "experiment": cmd_experiment, "demo": cmd_demo, "methods": cmd_methods,
    "instances": cmd_instances,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        return COMMANDS[args.command](args)
    except CepoptError as exc:
        message = " ".join(str(exc).split())
        print(f"cepopt: error: {message}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("cepopt: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
