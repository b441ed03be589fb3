"""The one exception type for bad input: a message that says what is wrong and where."""

from __future__ import annotations


def shown(text: str) -> str:
    """`text` safe for a terminal: control characters (an ANSI escape in a file name, a newline
    that would make one message two lines) are written as Python escapes, the rest as it is."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(text))


class BadInput(Exception):
    """Raised for input the user must fix; the CLI prints it as one line and exits 2."""

    def __init__(self, where: str, what: str):
        where, what = shown(where), shown(what)
        super().__init__(f"{where}: {what}")
        self.where = where
        self.what = what

    @classmethod
    def from_validation(cls, where: str, err) -> BadInput:
        """The first error of a pydantic ValidationError, as 'field a.b: message'."""
        first = err.errors()[0]
        msg = first["msg"].removeprefix("Value error, ")
        loc = ".".join(str(p) for p in first["loc"])
        return cls(where, f"field {loc}: {msg}" if loc else msg)
