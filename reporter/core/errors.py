"""The project's exceptions. Core code raises only these; the CLI maps them to exit codes.

ReporterError                 base; carries a one-line message and an optional tip
├── UsageError                the call itself is wrong (exit 2)
└── InputError                evidence that cannot be used (exit 1)
    ├── ManifestError         bundle.toml is malformed or points outside the bundle
    └── EvidenceError         a file is empty, binary, too large or unreadable
OutputError                   a report could not be written (exit 1)
UpstreamError                 GitHub could not be reached or refused the request (exit 1)
└── RateLimitError            GitHub's rate limit outlasts the wait the client allows
"""

from __future__ import annotations


class ReporterError(Exception):
    """Base error: `message` names the input and location, `tip` says what to do."""

    exit_code = 1

    def __init__(self, message: str, *, tip: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.tip = tip


class UsageError(ReporterError):
    """The command line asks for something impossible."""

    exit_code = 2


class InputError(ReporterError):
    """Evidence that cannot be used."""


class ManifestError(InputError):
    """`bundle.toml` is malformed or names files outside the bundle."""


class EvidenceError(InputError):
    """An evidence file is empty, binary, too large or unreadable."""


class OutputError(ReporterError):
    """A report or manifest could not be written."""


class UpstreamError(ReporterError):
    """GitHub could not be reached, or answered with an error, after bounded retries."""


class RateLimitError(UpstreamError):
    """GitHub's rate limit is exhausted for longer than the client may wait."""
