"""The one exception type the trainer CLIs turn into a clear message and a non-zero exit."""


class TrainerError(Exception):
    """Bad input or state; the message names the problem and the fix."""


# How a user runs the trainer's commands from the project root (the README's form; infra/commands.py says
# the same for infra's commands, which the trainer image does not hold): a command in a message runs as
# printed.
LOCAL_PYTHON = ".venv/bin/python"
