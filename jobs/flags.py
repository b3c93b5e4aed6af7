"""Flags every job spells the same way: ``--model-dir`` for a model directory or root (``--model`` is its old
spelling there: still accepted, with a one-line note), and ``--help`` that shows every default."""
from __future__ import annotations

import argparse
import sys

from jobs.spark import local_path

OLD_NAME_NOTE = "note: {old} is now {new} here (the old name still works)"


class OldName(argparse.Action):
    """Stores the value under the new flag's name and prints a one-line note on stderr."""

    def __init__(self, option_strings, dest, new_name: str = "", **kwargs):
        self.new_name = new_name
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(OLD_NAME_NOTE.format(old=option_string, new=self.new_name), file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_model_dir(parser, help: str, dest: str = "model", required: bool = True,
                  metavar: str = "MODEL_DIR") -> None:
    """``--model-dir`` (and its old spelling ``--model``, with a note) naming a model directory or root."""
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--model-dir", dest=dest, type=local_path, metavar=metavar, help=help)
    group.add_argument("--model", dest=dest, type=local_path, metavar=metavar, action=OldName,
                       new_name="--model-dir", help="the old name of --model-dir (still accepted)")


class DefaultsFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that shows every flag's default: ``(default: X)`` is added where the help does not say it already
    (flags without a value, and defaults of None, are left as they are)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (action.default is None or action.default is False or action.default == argparse.SUPPRESS
                or action.nargs == 0 or not action.option_strings
                or "default" in text.lower() or "%(default)" in text):
            return text
        default = ",".join(map(str, action.default)) if isinstance(action.default, (tuple, list)) \
            else action.default
        if default == "" or default == ():
            return text
        return f"{text} (default: {str(default).replace('%', '%%')})".strip()
