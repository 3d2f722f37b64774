"""`python -m trainlab.doctor [--steps N] [--time-limit S] [--json PATH] path/to/train.py [script args]`
`python -m trainlab.doctor --nproc-per-node 2 path/to/train.py [script args]`   (under torchrun)

The doctor's options come before the script's path; everything after it reaches the script
unchanged, so a script may have its own --steps or --json."""

import argparse
import sys

from trainlab import atomic
from trainlab.doctor.examine import diagnose_here
from trainlab.doctor.multirank import diagnose_ranks


def _ranks(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: the number of ranks must be at least 1")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m trainlab.doctor",
        description="Run an unmodified PyTorch training script for a bounded number of steps, "
        "instrumented from outside, and report what is wrong with it.",
    )
    parser.add_argument("--steps", type=int, default=200, help="stop after this many optimizer steps (200)")
    parser.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        help="seconds for the run and the experiments after it together, on an idle machine (60); a slower or "
        "busier one gets more, at most 4x (trainlab/processes/limits.py)",
    )
    parser.add_argument(
        "--every-experiment",
        action="store_true",
        help="run every quick experiment, not only those the symptoms call for",
    )
    parser.add_argument(
        "--nproc-per-node",
        type=_ranks,
        metavar="N",
        help="launch the script on N local ranks with torchrun and compare them (collectives, data, "
        "replicas, checkpoints, step time); the script picks its backend (gloo, nccl)",
    )
    parser.add_argument(
        "--collective-timeout",
        type=float,
        default=20.0,
        help="with --nproc-per-node: a rank waiting longer than this in a collective fails (20 s)",
    )
    parser.add_argument(
        "--json", metavar="PATH", help="also write the report as JSON (schema: trainlab/doctor/report.py)"
    )
    parser.add_argument("script", help="the training script; the doctor's options go before it")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="passed to the script unchanged")
    args = parser.parse_args(argv)
    script_args = args.script_args[1:] if args.script_args[:1] == ["--"] else args.script_args
    if args.nproc_per_node:
        report = diagnose_ranks(
            args.script,
            script_args,
            args.nproc_per_node,
            args.steps,
            args.time_limit,
            args.collective_timeout,
            args.every_experiment,
        )
    else:
        report = diagnose_here(args.script, script_args, args.steps, args.time_limit, args.every_experiment)
    print(report)
    if args.json:
        atomic.write_text(args.json, report.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
