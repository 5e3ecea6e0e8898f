"""``python -m chainrule <command>``; the one command today is ``explain``."""

from __future__ import annotations

import argparse
import sys

from .explain import _cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m chainrule", description="chainrule's command line."
    )
    commands = parser.add_subparsers(dest="command", metavar="command")
    _cli.add_parser(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return _cli.run(args)


if __name__ == "__main__":
    sys.exit(main())
