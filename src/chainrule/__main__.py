"""``python -m chainrule <command>``; the one command today is ``explain``."""

from __future__ import annotations

import argparse
import sys

from .explain import _cli


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (the usage itself is in --help), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def main(argv: list[str] | None = None) -> int:
    parser = _OneLineParser(prog="python -m chainrule", description="chainrule's command line.")
    commands = parser.add_subparsers(dest="command", metavar="command")
    _cli.add_parser(commands)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["explain"]:
        argv = ["explain", *_cli.protect_expression(argv[1:])]
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # usage errors and --help: a status for callers of main()
        return done.code if isinstance(done.code, int) else 0
    if args.command is None:
        parser.print_help()
        return 2
    return _cli.run(args)


if __name__ == "__main__":
    sys.exit(main())
