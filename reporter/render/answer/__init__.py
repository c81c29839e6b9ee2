"""The answer first: what is wrong, who waits for whom, since when, whether it recovers, what to do.

Input: a `Bundle`, its `Analysis` and, from the application layer, the earlier reports
with the same or a similar signature (`SeenBefore`). Output: a frozen `Answer` of plain
text (Markdown inline code allowed) in which every claim carries the evidence it rests
on as `file:line` strings. The report's summary block, its title and verdict paragraph,
`report analyze`'s first screen and the `summary` / `next_steps` keys of
`analyze --json` are all laid out from it, so they never disagree.

"Who waits for whom" goes through one function, `waits_for`: it reads the analysis's
own waits-for relation when the analysis has one, and otherwise derives it from the
branch point, the laggards, the classes and the failed dumps. Example::

    WaitEdge(waiting=WaitSide(label="[0-1]", state="stuck",
                              where="writing_check (tp_desync.py:66)",
                              branch="on_idle (tp_desync.py:118)",
                              evidence="snapshots/rank0_s2.txt:3"),
             collective="all_reduce",
             waited=WaitSide(label="[2-3]", state="moving",
                             where="self_check_during_idle (tp_desync.py:127)",
                             branch="on_idle (tp_desync.py:119)", ...))

Every topic always has a line (its evidence, or "Not known: ..." and what a capture would
tell), each fact is said once, and the title is the headline: no line repeats it. With
several instances (servers, jobs) in one bundle, the lines speak of the one in trouble
and name it (`scope`).

The parts: `records` (the frozen records), `scope` (the instance in trouble), `hosts` (which
host each side is on, and the hosts not captured), `waits` (the waits-for relation),
`topics` (the topics in order; side topics with nothing to say fold into one "Not known"
line), one module per topic's line (`what` with the title, `who`, `since` with recovery,
`clients`, `changes`, `seen`), `states` (crashes, stopped ranks, thread deadlocks),
`timeouts` (what ends a wait: set, the library's default, or already fired, and where it was
looked for), `series` (engines and metric citations), `flight` (the Flight Recorder's first
mismatch) and `compose` (the answer, each code place said once, and the reviewer's
suggestions). A new verdict's sentence goes in `what` (a branch of `what_line`) or a topic
module of its own; `compose.build` lays the topics out in `topics.TOPICS` order.
"""

from reporter.render.answer import records
from reporter.render.answer.compose import build
from reporter.render.answer.flight import fr_mismatch
from reporter.render.answer.records import *  # noqa: F403  (the records of its __all__)
from reporter.render.answer.timeouts import find_timeouts
from reporter.render.answer.waits import collapse, gone_ranks, waits_for

__all__ = [
    "build",
    "collapse",
    "find_timeouts",
    "fr_mismatch",
    "gone_ranks",
    "waits_for",
]
__all__ += records.__all__
