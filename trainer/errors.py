"""The one exception type the trainer CLIs turn into a clear message and a non-zero exit."""


class TrainerError(Exception):
    """Bad input or state; the message names the problem and the fix."""
