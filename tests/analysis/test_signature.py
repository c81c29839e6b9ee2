"""Hang signatures: stable across runs of the same hang, different for a different hang."""

from __future__ import annotations

import re
from collections.abc import Sequence

from reporter.analysis import Similarity, Verdict, analyze
from reporter.analysis.classify import default_classifier
from reporter.analysis.result import RankState, StackClass
from reporter.analysis.signature import MAX_FRAMES, make_signature
from reporter.model import Bundle, ProcessDump

from .builders import ALL_REDUCE, BROADCAST, bundle, dump, frames, scheduler_stack

RECV = "Scheduler.recv_requests (sglang/srt/managers/scheduler.py:1012)"
FORWARD = "Scheduler.forward_batch (sglang/srt/managers/scheduler.py:1400)"
GLOO = [
    "0x7f48900a3f16 (libc.so.6)",
    "pthread_cond_wait (libc.so.6)",
    "gloo::allreduce (libtorch_cpu.so)",
    "c10d::Work::wait (libtorch_cpu.so)",
]


def _shift_lines(specs: Sequence[str], by: int) -> list[str]:
    return [re.sub(r":(\d+)\)", lambda m: f":{int(m.group(1)) + by})", s) for s in specs]


def _desync(
    *,
    pid_base: int = 100,
    line_shift: int = 0,
    order: Sequence[int] = range(8),
    top: Sequence[str] = (),
    collective: Sequence[str] = ALL_REDUCE,
    swap: bool = False,
) -> Bundle:
    dumps: list[ProcessDump] = []
    for rank in order:
        first_half = (rank < 4) != swap
        main = (
            scheduler_stack(*BROADCAST, RECV)
            if first_half
            else scheduler_stack(*top, *collective, FORWARD)
        )
        dumps.append(
            dump(
                pid=pid_base + 7 * rank,
                title=f"sglang::scheduler_TP{rank}",
                main=_shift_lines(main, line_shift),
                threads={"watchdog": ["watchdog_thread (sglang/srt/managers/scheduler.py:77)"]},
            )
        )
    return bundle(*dumps)


def test_same_hang_other_pids_threads_lines_and_order() -> None:
    base = analyze(_desync())
    other = analyze(_desync(pid_base=40_000, line_shift=13, order=[5, 2, 7, 0, 1, 6, 3, 4]))
    assert base.verdict is Verdict.COLLECTIVE_DESYNC
    assert other.signature == base.signature
    assert re.fullmatch(r"[0-9a-f]{12}", base.signature.hash)


def test_ranks_are_not_part_of_the_signature() -> None:
    assert analyze(_desync(swap=True)).signature == analyze(_desync()).signature


def test_native_frames_do_not_change_the_signature() -> None:
    assert analyze(_desync(top=GLOO)).signature == analyze(_desync()).signature


def test_similarity_does_not_change_the_signature() -> None:
    # Lines differ inside the all_reduce half: exact similarity splits it, the text does not.
    dumps = list(_desync().dumps)
    dumps[5] = dump(
        pid=dumps[5].pid,
        title=dumps[5].cmdline,
        main=_shift_lines(scheduler_stack(*ALL_REDUCE, FORWARD), 3),
    )
    exact = analyze(bundle(*dumps), similarity=Similarity.EXACT)
    default = analyze(bundle(*dumps))
    assert len(exact.classes) > len(default.classes)
    assert exact.signature == default.signature


def test_different_collective_different_signature() -> None:
    barrier = ("barrier (torch/distributed/distributed_c10d.py:4100)",)
    base = analyze(_desync())
    other = analyze(_desync(collective=barrier))
    assert other.verdict is Verdict.COLLECTIVE_DESYNC
    assert other.signature.hash != base.signature.hash
    assert "barrier" in other.signature.text


def test_text_is_readable_and_drops_generic_frames() -> None:
    text = analyze(_desync()).signature.text
    assert text.splitlines() == [
        "collective-desync",
        "all_reduce: run_scheduler_process (scheduler.py) > event_loop_overlap_disagg_decode (decode.py)"
        " > forward_batch (scheduler.py) > all_reduce (distributed_c10d.py)",
        "broadcast: run_scheduler_process (scheduler.py) > event_loop_overlap_disagg_decode (decode.py)"
        " > recv_requests (scheduler.py) > broadcast_pyobj (utils.py) > broadcast (distributed_c10d.py)",
    ]
    assert (
        "wrapper" not in text
        and "spawn_main" not in text
        and ":" not in text.split("\n")[1].split(": ", 1)[1]
    )


def test_at_most_six_frames_per_class() -> None:
    deep = [f"f{i} (app/deep.py:{i})" for i in range(20)]
    stack = StackClass(
        ranks=(0,),
        collective=None,
        wait=None,
        state=RankState.STUCK,
        frames=frames(deep),
        pids=(1,),
    )
    signature = make_signature(Verdict.ALL_STUCK, [stack], default_classifier())
    line = signature.text.splitlines()[1]
    assert line == "running: " + " > ".join(f"f{i} (deep.py)" for i in reversed(range(MAX_FRAMES)))


def test_bundles_without_stacks_get_signatures_from_their_evidence() -> None:
    from reporter.analysis.signature import evidence_lines

    classifier = default_classifier()
    gone = evidence_lines(
        failures=[("gone", "scheduler", "No such file or directory (os error 2)")]
    )
    wedge = evidence_lines(wedge_signals=["sglang:gen_throughput"])
    diff = evidence_lines(top_change="env NCCL_ALGO: Ring -> Tree")
    sigs = {
        make_signature(Verdict.INCONCLUSIVE, (), classifier, lines).hash
        for lines in (gone, wedge, diff, evidence_lines(kinds=["log"]))
    }
    assert len(sigs) == 4
    # PIDs in reasons do not change it.
    a = evidence_lines(failures=[("gone", "", "All pyspy dump attempts failed for PID 8251")])
    b = evidence_lines(failures=[("gone", "", "All pyspy dump attempts failed for PID 12")])
    assert make_signature(Verdict.INCONCLUSIVE, (), classifier, a) == make_signature(
        Verdict.INCONCLUSIVE, (), classifier, b
    )
