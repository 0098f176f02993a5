"""The one exception every rejected filter raises."""

from __future__ import annotations


class FilterError(ValueError):
    """A filter the compiler refuses, with where it went wrong.

    A ``ValueError`` so that callers that already map bad input to 400 keep
    working; ``offset`` is a 0-based character offset into the filter text so
    the client can point at the culprit.
    """

    def __init__(self, message: str, offset: int = 0) -> None:
        self.message = message
        self.offset = max(0, offset)
        super().__init__(f"{message} at offset {self.offset}")

    def __reduce__(self) -> tuple[type[FilterError], tuple[str, int]]:
        return (type(self), (self.message, self.offset))
