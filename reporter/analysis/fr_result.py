"""Old home of the Flight Recorder result types; they live in reporter.analysis.result."""

from __future__ import annotations

from reporter.analysis.result import FlightRecorderAnalysis, FrMismatch, FrSide

__all__ = ["FlightRecorderAnalysis", "FrMismatch", "FrSide"]
