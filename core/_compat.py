"""What ember uses of Pythons newer than the oldest it supports (3.10), in one place."""
from __future__ import annotations

__all__ = ["add_note"]


def add_note(e: BaseException, note: str) -> None:
    """``e.add_note(note)`` (PEP 678, Python 3.11). On 3.10 the note goes into ``e.__notes__``
    as the backports do, and onto the end of a string message, which 3.10's tracebacks show."""
    if hasattr(e, "add_note"):
        e.add_note(note)
        return
    e.__notes__ = [*getattr(e, "__notes__", []), note]
    if e.args and isinstance(e.args[0], str):
        e.args = (f"{e.args[0]}\n{note}", *e.args[1:])
